import type { MikroORM } from '@mikro-orm/postgresql';
import { namedRecordService } from '../shared/named-record.js';
import { Application } from './application.entity.js';

export const applicationService = (orm: MikroORM) =>
  namedRecordService(orm, {
    resource: 'application',
    label: 'application',
    entity: Application,
    table: 'applications',
    linkTable: 'user_applications',
    linkColumn: 'application_id',
  });

export type ApplicationService = ReturnType<typeof applicationService>;
