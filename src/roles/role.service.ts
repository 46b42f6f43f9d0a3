import type { MikroORM } from '@mikro-orm/postgresql';
import { namedRecordService } from '../shared/named-record.js';
import { Role } from './role.entity.js';

export const roleService = (orm: MikroORM) =>
  namedRecordService(orm, {
    resource: 'role',
    label: 'role',
    entity: Role,
    table: 'roles',
    linkTable: 'user_roles',
    linkColumn: 'role_id',
  });

export type RoleService = ReturnType<typeof roleService>;
