import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { requirePermission, type Caller } from '../auth/caller.js';
import type { ListFields } from '../list/list.js';
import { crudService } from '../shared/crud.js';
import { AppError } from '../shared/errors.js';
import { readWriteBody, type WritableFields } from '../shared/input.js';
import { User } from './user.entity.js';
import { presentUser, userFromRow, USER_COLUMNS, type UserRecord } from './user.presenter.js';

export const USER_WRITABLE: WritableFields = {
  ref: { kind: 'safeInt' },
  outKey: { kind: 'string', max: 255, nullable: true },
  firstName: { kind: 'string', max: 255, required: true },
  lastName: { kind: 'string', max: 255, required: true },
  avatarUrl: { kind: 'string', max: 2048, nullable: true },
  photoUrl: { kind: 'string', max: 2048, nullable: true },
  status: { kind: 'int32' },
};

export const USER_LIST_FIELDS: ListFields = {
  id: { column: 't.id', kind: 'id' },
  ref: { column: 't.ref', kind: 'safeInt' },
  outKey: { column: 't.out_key', kind: 'string', nullable: true },
  firstName: { column: 't.first_name', kind: 'string' },
  lastName: { column: 't.last_name', kind: 'string' },
  avatarUrl: { column: 't.avatar_url', kind: 'string', nullable: true },
  photoUrl: { column: 't.photo_url', kind: 'string', nullable: true },
  status: { column: 't.status', kind: 'int32' },
  createdAt: { column: 't.created_at', kind: 'date' },
  updatedAt: { column: 't.updated_at', kind: 'date' },
};

export const USER_STATUS_BODY: WritableFields = { status: { kind: 'int32', required: true } };

/** A deleted user takes its tokens and links with it (they stop authenticating and listing). */
async function cascadeUser(em: EntityManager, id: number, now: Date): Promise<void> {
  for (const table of ['tokens', 'user_applications', 'user_roles']) {
    await em.execute(`update ${table} set deleted_at = ?, updated_at = ? where user_id = ? and deleted_at is null`, [now, now, id]);
  }
}

export function userService(orm: MikroORM) {
  const crud = crudService(orm, {
    resource: 'user',
    label: 'user',
    entity: User,
    table: 'users',
    columns: USER_COLUMNS,
    fromRow: userFromRow,
    fromEntity: presentUser,
    writable: USER_WRITABLE,
    listFields: USER_LIST_FIELDS,
    conflict: () => AppError.conflict('the user conflicts with an existing one'),
    cascade: cascadeUser,
  });
  return {
    ...crud,
    /** PATCH or PUT /user/{id}/status/ with {"status": n}. */
    async updateStatus(caller: Caller, id: unknown, body: unknown): Promise<UserRecord> {
      requirePermission(caller, 'user:write'); // before the body is read: 403 wins over 400
      return crud.update(caller, id, readWriteBody(body, USER_STATUS_BODY, 'create'), 'status');
    },
  };
}

export type UserService = ReturnType<typeof userService>;
