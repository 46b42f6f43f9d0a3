import type { Permission } from '../auth/caller.js';
import type { ListField, ListFields } from '../list/list.js';
import { withColumn, type Field, type FieldSpec, type RecordOf as FieldsRecord, type WritableOf as FieldsWritable } from './field.js';

/**
 * One definition per resource: its name, table and fields. Everything else about the resource is
 * derived from it here (the read's select list, the list language's field table, the writable
 * fields) or by the modules beside this one (entity.ts: the ORM's entity schema; input.ts: write
 * input parsing; graphql.ts: the GraphQL types; src/http/openapi.ts: the OpenAPI schemas). Adding
 * a column to users is one line in src/users/user.resource.ts and a migration.
 */
export interface ResourceSpec<F extends Record<string, FieldSpec>> {
  /** The resource's name in permissions (`user:read`) and in the audit log. */
  name: string;
  /** How messages name one record ("user"). */
  label: string;
  table: string;
  /**
   * Whether the writes keep the table's live rows counted (`live_counts`: a row per table, moved by
   * triggers; src/db/migrations/live-counts.ts): an unfiltered list's total is then one primary-key
   * read instead of a count(*). A counted resource's migration makes its row and triggers; the start
   * refuses a counted table without its row (src/module/registry.ts), which would read as 0.
   */
  counted?: boolean;
  /** The GraphQL object type, and what GraphQL says of it. */
  type: string;
  description?: string;
  /** In the order the API answers them. */
  fields: F;
  /**
   * What a soft delete of a record takes with it: the live rows of these tables that refer to it
   * (a user's tokens and links; an application's or a role's links), each with an audit event.
   */
  cascade?: readonly Cascade[];
  /** What GraphQL says of the `…Input` type, if anything. */
  inputDescription?: string;
}

/**
 * Rows a delete takes with it: the live rows of `table` whose `column` holds the deleted record's
 * id. Each gets its own audit event (SPEC §9: one per record changed; subscribers read them), as
 * the dependent's own write records it: a record's `delete` (`{deletedAt}`, the record its row),
 * or a link's `unlink` (the record its user, `{<linked>: {before: id, after: null}}`).
 */
export interface Cascade {
  table: string;
  column: string;
  event: { resource: string; action: 'delete' } | { resource: string; action: 'unlink'; userColumn: string; linked: { field: string; column: string } };
}

export type Fields<F> = { readonly [K in keyof F]: Field };

export interface Resource<F extends Record<string, FieldSpec> = Record<string, FieldSpec>> extends Omit<ResourceSpec<F>, 'fields'> {
  fields: Fields<F>;
  /** Every field by name, in order. */
  entries: readonly (readonly [string, Field])[];
  /** The fields a client writes (create, replace, patch), in order. */
  writable: readonly (readonly [string, Field])[];
  /** The fields of the wire record, in order (deletedAt aside: only deleted-aware lists read it; write-only ones never). */
  output: readonly (readonly [string, Field])[];
  /**
   * The select list of a read (table alias `t`), each column named as its wire field, so that a
   * row (with the pool's type parsers: bigint as number, timestamptz as the wire date) is the record.
   */
  columns: string;
  /** The same, with `deletedAt` last: lists that read deleted records. */
  columnsWithDeletedAt: string;
  /**
   * The select list of only the given fields (with `id` always, which nested fields hang on, and
   * `deletedAt` when asked): GraphQL reads what a query selects, as PostgreSQL-backed GraphQL
   * servers do, and no more. Unknown names (nested fields, `__typename`) are left out.
   */
  columnsOf(fields: ReadonlySet<string>, withDeletedAt?: boolean): string;
  /** The list language's fields (filter and orderBy): the listed fields, by wire name. */
  listFields: ListFields;
  permissions: { read: Permission; write: Permission };
}

const PROJECTIONS = 256;

/** Words PostgreSQL reserves that a column of ours is named after: written quoted. */
const RESERVED = new Set(['right', 'left', 'user', 'order', 'group', 'table', 'column', 'default']);

/** A column's name as SQL writes it (`"right"`: a reserved word, quoted). */
export const columnName = (column: string) => (RESERVED.has(column) ? `"${column}"` : column);

/** A column as SQL writes it (`t.first_name`, `l."right"`). */
export const columnSql = (alias: string, column: string) => `${alias}.${columnName(column)}`;

/** A field's expression in a read, named as its wire field. */
export function selectOf(name: string, field: Field, alias = 't'): string {
  const column = columnSql(alias, field.kind === 'secret' ? field.secretColumns!.cipher : field.column);
  return `${field.kind === 'revision' ? `${column}::text` : column} as "${name}"`;
}

/** How the list language compares a field. */
export function listFieldOf(field: Field, alias = 't'): ListField {
  const kind = field.kind === 'reference' ? 'id' : field.kind;
  if (kind === 'json' || kind === 'textList') throw new Error(`a ${kind} field cannot be listed (${field.column})`);
  const column = columnSql(alias, field.kind === 'secret' ? field.secretColumns!.hmac : field.column);
  return { column, kind, ...(field.nullable ? { nullable: true } : {}) };
}

export function defineResource<F extends Record<string, FieldSpec>>(spec: ResourceSpec<F>): Resource<F> {
  const fields = Object.fromEntries(Object.entries(spec.fields).map(([name, s]) => [name, withColumn(name, s)])) as Fields<F>;
  const entries = Object.entries(fields) as [string, Field][];
  const output = entries.filter(([name, f]) => f.origin !== 'hidden' && !f.writeOnly && name !== 'deletedAt');
  const columns = output.map(([name, f]) => selectOf(name, f)).join(', ');
  const deletedAt = fields['deletedAt' as keyof F];
  // Per set of fields, once: a client can invent at most 2^fields sets, and only the first
  // PROJECTIONS are remembered.
  const projections = new Map<string, string>();
  const columnsOf = (wanted: ReadonlySet<string>, withDeletedAt = false): string => {
    const key = `${withDeletedAt ? 'd' : 'l'}${[...wanted].join(',')}`;
    let list = projections.get(key);
    if (list === undefined) {
      const chosen = output.filter(([name]) => name === 'id' || wanted.has(name)).map(([name, f]) => selectOf(name, f));
      if (withDeletedAt && deletedAt) chosen.push(selectOf('deletedAt', deletedAt));
      list = chosen.join(', ');
      if (projections.size < PROJECTIONS) projections.set(key, list);
    }
    return list;
  };
  return {
    ...spec,
    fields,
    entries,
    writable: entries.filter(([, f]) => f.origin === 'client'),
    output,
    columns,
    columnsWithDeletedAt: deletedAt ? `${columns}, ${selectOf('deletedAt', deletedAt)}` : columns,
    columnsOf,
    listFields: Object.fromEntries(entries.filter(([, f]) => f.listed).map(([name, f]) => [name, listFieldOf(f)])),
    permissions: { read: `${spec.name}:read` as Permission, write: `${spec.name}:write` as Permission },
  };
}

/** The record of a resource (`RecordOf<typeof users>`), inferred from its fields. */
export type RecordOf<R> = R extends Resource<infer F> ? FieldsRecord<F> : never;
/** The values a client writes to a resource, inferred from its fields. */
export type WritableOf<R> = R extends Resource<infer F> ? FieldsWritable<F> : Record<string, unknown>;

/** A write body that is no resource of its own (a user's status, a link's right): its fields, all written by clients. */
export interface Body {
  writable: readonly (readonly [string, Field])[];
}

export function defineBody(fields: Record<string, FieldSpec>): Body {
  return { writable: Object.entries(fields).map(([name, s]) => [name, withColumn(name, s)] as const) };
}
