import type { EntityClass } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Resource } from '../auth/caller.js';
import type { ListFields } from '../list/list.js';
import { crudService, type LiveRecord } from './crud.js';
import { AppError } from './errors.js';
import type { WritableFields } from './input.js';
import { isoDate } from './present.js';

/**
 * Applications and roles are the same kind of record, `{id, name, createdAt, updatedAt}` with a
 * unique name (SPEC §3); this is their shared definition.
 */
export interface NamedRecord extends LiveRecord {
  name: string;
}

export const NAMED_WRITABLE: WritableFields = { name: { kind: 'string', max: 255, required: true, nonEmpty: true } };

export const NAMED_LIST_FIELDS: ListFields = {
  id: { path: ['id'], kind: 'id' },
  name: { path: ['name'], kind: 'string' },
  createdAt: { path: ['createdAt'], kind: 'date' },
  updatedAt: { path: ['updatedAt'], kind: 'date' },
};

export function presentNamed(record: NamedRecord) {
  return { id: record.id, name: record.name, createdAt: isoDate(record.createdAt), updatedAt: isoDate(record.updatedAt) };
}

export function namedRecordService<E extends NamedRecord>(
  orm: MikroORM,
  options: { resource: Resource; label: string; entity: EntityClass<E>; table: string; linkTable: string; linkColumn: string },
) {
  return crudService(orm, {
    resource: options.resource,
    label: options.label,
    entity: options.entity,
    table: options.table,
    writable: NAMED_WRITABLE,
    listFields: NAMED_LIST_FIELDS,
    conflict: (values) =>
      AppError.conflict(`a${/^[aeiou]/.test(options.label) ? 'n' : ''} ${options.label} with this name already exists`, [
        { field: 'name', message: `"${String(values.name)}" is already in use` },
      ]),
    // A deleted application or role is unlinked from every user.
    async cascade(em: EntityManager, id: number, now: Date) {
      await em.execute(
        `update ${options.linkTable} set deleted_at = ?, updated_at = ? where ${options.linkColumn} = ? and deleted_at is null`,
        [now, now, id],
      );
    },
  });
}
