import type { EntityClass } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Resource } from '../auth/caller.js';
import type { ListFields } from '../list/list.js';
import { crudService, type LiveRecord } from './crud.js';
import { AppError } from './errors.js';
import type { WritableFields } from './input.js';
import { isoDate } from './present.js';
import { wireDate, wireInt } from '../db/reads.js';

/**
 * Applications and roles are the same kind of record, `{id, name, createdAt, updatedAt}` with a
 * unique name (SPEC §3); this is their shared definition.
 */
export interface NamedRecord extends LiveRecord {
  name: string;
}

export const NAMED_WRITABLE: WritableFields = { name: { kind: 'string', max: 255, required: true, nonEmpty: true } };

export const NAMED_LIST_FIELDS: ListFields = {
  id: { column: 't.id', kind: 'id' },
  name: { column: 't.name', kind: 'string' },
  createdAt: { column: 't.created_at', kind: 'date' },
  updatedAt: { column: 't.updated_at', kind: 'date' },
};

/** An application or a role on the wire. */
export interface NamedWire {
  id: number;
  name: string;
  createdAt: string | null;
  updatedAt: string | null;
}

/** The columns a read selects (alias `t`). */
export const NAMED_COLUMNS = 't.id, t.name, t.created_at, t.updated_at';

export const namedFromRow = (row: { id: string; name: string; created_at: string; updated_at: string }): NamedWire => ({
  id: wireInt(row.id),
  name: row.name,
  createdAt: wireDate(row.created_at),
  updatedAt: wireDate(row.updated_at),
});

/** An entity of the write path. */
export function presentNamed(record: NamedRecord): NamedWire {
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
    columns: NAMED_COLUMNS,
    fromRow: namedFromRow,
    fromEntity: presentNamed,
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
