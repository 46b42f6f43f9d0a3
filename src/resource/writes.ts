import type { Caller } from '../auth/caller.js';
import type { Statement, WriteGate } from '../db/sql.js';
import type { AuditAction } from './audit.js';
import { redactedInAudit, type Field } from './field.js';
import { columnSql, type Cascade, type Resource } from './resource.js';

/**
 * The write path: each write of one record is ONE statement, whatever the resource. The row is
 * locked and read as it was (`o`), changed (`n`: only when a value differs, so that an update that
 * changes nothing leaves `updatedAt`, `version` and the audit log alone), and its audit event (
 * docs/rest.md#audit-log: the changed fields, before and after, secrets redacted) is inserted by the same statement,
 * so that it commits or rolls back with the write. No entity is loaded or flushed; the statement
 * answers the record in its wire form (the resource's select list).
 *
 * Texts use `?` placeholders (src/db/sql.ts numbers them); every value is cast to its column's
 * type, so that PostgreSQL never has to guess a parameter's type.
 *
 * Each write can also be made conditional on a gate (`Statement.gated`): the request's token check
 * rides in it (src/auth/checked-sql.ts).
 */
export type { Statement };
/** A statement's text from its CTEs (in order) and its final select, gated or not. */
function withText(ctes: readonly string[], select: string, gate: WriteGate | null): string {
  return gate ? `with ${gate.ctes}, ${ctes.join(', ')} ${gate.answer(select)}` : `with ${ctes.join(', ')} ${select}`;
}

/**
 * A statement whose text is made by `gated` (with no gate: `gated(null)`), its plain text made only
 * when it is asked for (a checked write sends the gated one alone).
 *
 * A class, its getter on the prototype, not an object literal with `get text()`: V8 builds such a
 * literal through its runtime, and part of it lands in the old generation on every call (alone in
 * a loop, 150 of its 521 bytes outlived the young generation; none of a class's instance). What it
 * points to (the parameters, the closure and all it holds) then outlived every young collection
 * until the next full one: ~1 KB of every write moved into the old generation (bench/allocations.sh
 * with ALLOCATION_SURVIVORS=1), a full collection every ~3 s under writes alone, where the Koa floor
 * had none (docs/benchmarks.md).
 */
class GateableStatement implements Statement {
  constructor(
    readonly gated: (gate: WriteGate | null) => string,
    readonly params: unknown[],
  ) {}

  get text(): string {
    return this.gated(null);
  }
}

/** The row an insert makes of `values`: only when the gate's condition holds, when there is a gate. */
const insertedRow = (values: string, gate: WriteGate | null) => (gate ? `select ${values} where ${gate.condition}` : `values (${values})`);

/** ` and <the gate's condition>`, or nothing. */
const andGate = (gate: WriteGate | null) => (gate ? ` and ${gate.condition}` : '');

/** The audit columns every write fills. */
const AUDIT_INSERT = 'insert into audit_events (actor_token_id, actor_user_id, request_id, action, resource, record_id, changes)';

/** A field's SQL type, for the casts of its values. */
function sqlType(field: Field): string {
  switch (field.kind) {
    case 'id':
    case 'reference':
    case 'safeInt':
      return 'bigint';
    case 'int32':
    case 'revision':
      return 'integer';
    case 'date':
      return 'timestamptz';
    case 'json':
      return 'jsonb';
    case 'boolean':
      return 'boolean';
    case 'textList':
      return 'text[]';
    default:
      return 'text';
  }
}

/** A value as it goes into one column (a secret goes into two: its keyed hash and its ciphertext). */
export interface ColumnValue {
  column: string;
  type: string;
  value: unknown;
}

/** How a resource's values become column values: one column per field, unless the resource says otherwise (secrets). */
export type Encode = (name: string, field: Field, value: unknown) => ColumnValue[];

export const plainColumns: Encode = (_name, field, value) => [{ column: field.column, type: sqlType(field), value }];

/** The column a field is compared by: its own, or a secret's keyed hash. */
const comparedColumn = (field: Field) => (field.kind === 'secret' ? field.secretColumns!.hmac : field.column);

/** A timestamptz column as an audit event's JSON value: the wire date. */
const auditDate = (column: string) => `to_jsonb(to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`;

/** A field's value in an audit event (JSON): dates in the wire format, secrets and credentials redacted. */
function auditValue(field: Field, alias: string): string {
  const column = columnSql(alias, comparedColumn(field));
  if (redactedInAudit(field)) return `case when ${column} is null then null else '"[redacted]"'::jsonb end`;
  if (field.kind === 'date') return auditDate(column);
  return `to_jsonb(${column})`;
}

/** `{"field": {"before": …, "after": …}}` of the named fields whose value differs between `o` and `n` (null-safe). */
function changesSql(fields: readonly (readonly [string, Field])[], before: string | null, after: string): string {
  if (fields.length === 0) return `'{}'::jsonb`;
  const parts = fields.map(([name, field]) => {
    const was = before ? auditValue(field, before) : 'null';
    const differs = before
      ? `${columnSql(before, comparedColumn(field))} is distinct from ${columnSql(after, comparedColumn(field))}`
      : `${columnSql(after, comparedColumn(field))} is not null`;
    return `case when ${differs} then jsonb_build_object('${name}', jsonb_build_object('before', ${was}, 'after', ${auditValue(field, after)})) else '{}'::jsonb end`;
  });
  return parts.join(' || ');
}

/** The actor of an audit event: the caller's token and user, or none for the service's own writes. */
function actor(caller: Caller): unknown[] {
  const system = caller.tokenId === 0;
  return [system ? null : caller.tokenId, system ? null : caller.userId, caller.requestId ?? null];
}

const auditRow = (action: AuditAction, resource: string) => `?::bigint, ?::bigint, ?::text, '${action}', '${resource}'`;

export interface WriteContext {
  caller: Caller;
  encode?: Encode;
  /** Service-set columns written with the change, neither compared nor in the audit event (a token's secrets, sealed afresh). */
  alsoSet?: ColumnValue[] | null;
  /**
   * The select list the statement answers the record with (the resource's `columnsOf`: the fields
   * a GraphQL selection asks for); every output field when absent. Each column answered costs the
   * driver a field description and a value to parse on every write.
   */
  answer?: string;
  /**
   * An update without locking the row first (updateStatement): it may lose a race, and answers
   * whether it did (`writeRaced`), for its caller to run it again.
   */
  optimistic?: boolean;
}

/** The resource's fields that `values` holds, in the resource's order (not the body's: one statement shape per set of fields). */
const namedFields = (resource: Resource, values: Record<string, unknown>) => resource.entries.filter(([name]) => Object.hasOwn(values, name));

/** The column values of these fields' values. */
function columnValues(named: readonly (readonly [string, Field])[], values: Record<string, unknown>, encode: Encode): ColumnValue[] {
  // A loop, not flatMap: this runs on every write, and flatMap of arrays was ~2 µs of one (a profile's line ticks).
  const columns: ColumnValue[] = [];
  for (const [name, field] of named) for (const column of encode(name, field, values[name])) columns.push(column);
  return columns;
}

/**
 * Inserts a record with the given values (a create: every client field, defaults filled in) and
 * `extra` service-set columns; with `claimId`, on that id, only if it was reserved by "apply id"
 * (the reservation row is deleted by the same statement, which serializes concurrent claims):
 * no row comes back when it was not.
 */
export function insertStatement(
  resource: Resource,
  values: Record<string, unknown>,
  context: WriteContext & { extra?: ColumnValue[]; claimId?: number },
): Statement {
  const named = namedFields(resource, values);
  const columns = [...columnValues(named, values, context.encode ?? plainColumns), ...(context.extra ?? [])];
  const params: unknown[] = [];
  const claim = context.claimId !== undefined;
  if (claim) params.push(context.claimId);
  params.push(...columns.map((c) => c.value));
  params.push(...actor(context.caller));
  const names = columns.map((c) => c.column).join(', ');
  const placeholders = columns.map((c) => `?::${c.type}`).join(', ');
  const answer = context.answer ?? resource.columns;
  const text = (gate: WriteGate | null) => {
    const ctes = claim
      ? [
          `c as (delete from id_reservations where resource = '${resource.name}' and id = ?::bigint${andGate(gate)} returning id)`,
          `n as (insert into ${resource.table} (id, ${names}) select c.id, ${placeholders} from c returning *)`,
        ]
      : [`n as (insert into ${resource.table} (${names}) ${insertedRow(placeholders, gate)} returning *)`];
    ctes.push(`a as (${AUDIT_INSERT} select ${auditRow('create', resource.name)}, n.id, ${changesSql(named, null, 'n')} from n)`);
    return withText(ctes, `select ${answer} from n t`, gate);
  };
  return new GateableStatement(text, params);
}

/**
 * Changes the named fields of the live record `id` (`values`: wire name → checked value), plus
 * `touch`: service-set columns moved on every change (`updated_at`, a token's `version`). Answers
 * the record as it is after the write (or as it was, when nothing changed); no row when there is
 * no live record with that id.
 *
 * The audit event's `before` must be the row this update replaced. By default the statement locks
 * the row before reading it, so no other write can come in between. `context.optimistic` spares
 * that lock (a row lock is a write of its own: ~25 µs of PostgreSQL's CPU and ~70 bytes of WAL a
 * write, measured with pgbench): the statement reads the row and updates it only if it is still
 * that version (its `ctid` and `xmin`; PostgreSQL rechecks the condition on the newest version when another
 * write committed meanwhile), and answers `writeRaced` when it was not, having changed nothing.
 */
export function updateStatement(resource: Resource, id: number, values: Record<string, unknown>, action: AuditAction, context: WriteContext): Statement {
  const named = namedFields(resource, values);
  const columns = columnValues(named, values, context.encode ?? plainColumns);
  const compared = named.map(([name, field]) => {
    const value = field.kind === 'secret' ? columns.find((c) => c.column === field.secretColumns!.hmac)!.value : values[name];
    return { column: comparedColumn(field), type: field.kind === 'secret' ? 'bytea' : sqlType(field), value };
  });
  const written = [...columns, ...(context.alsoSet ?? []).filter((extra) => !columns.some((c) => c.column === extra.column))];
  const optimistic = context.optimistic === true;
  const writtenValues = written.map((c) => c.value);
  const comparedValues = compared.map((c) => c.value);
  // In the order the text's placeholders come: the optimistic form compares in its read, before the update.
  const params: unknown[] = optimistic
    ? [...comparedValues, id, ...writtenValues, ...actor(context.caller)]
    : [id, ...writtenValues, ...comparedValues, ...actor(context.caller)];
  // The text follows from the statement's shape alone (the action, the columns written, the fields
  // named); every value is a parameter.
  const answer = context.answer ?? resource.columns;
  const shape = `${optimistic ? 'o' : 'l'} ${action} ${written.map((c) => `${c.column}:${c.type}`).join(',')} ${named.map(([name]) => name).join(',')} ${answer === resource.columns ? '*' : answer}`;
  const text = (gate: WriteGate | null) =>
    shapedText(resource, gate ? `${gate.key} ${shape}` : shape, () => updateText(resource, written, compared, named, action, answer, optimistic, gate));
  return new GateableStatement(text, params);
}

function updateText(
  resource: Resource,
  written: readonly ColumnValue[],
  compared: readonly Omit<ColumnValue, 'value'>[],
  named: readonly (readonly [string, Field])[],
  action: AuditAction,
  answer: string,
  optimistic: boolean,
  gate: WriteGate | null,
): string {
  const set = written.map((c) => `${c.column} = ?::${c.type}`);
  const differs = compared.map((c) => `t.${c.column} is distinct from ?::${c.type}`);
  const audit = `a as (${AUDIT_INSERT} select ${auditRow(action, resource.name)}, n.id, ${changesSql(named, 'o', 'n')} from n join o on o.id = n.id)`;
  if (optimistic) {
    return withText(
      [
        `o as (select t.*, t.ctid as write_version, t.xmin as write_xmin, (${differs.join(' or ') || 'false'}) as write_changes from ${resource.table} t where t.id = ?::bigint and t.deleted_at is null${andGate(gate)})`,
        // The ctid finds the row (a TID scan); its xmin and deleted_at are also compared as filters,
        // which PostgreSQL rechecks on the newest version in every release (a TID scan's own
        // condition is rechecked only since the 2025 minor releases).
        `n as (update ${resource.table} t set ${[...set, ...touched(resource)].join(', ')} from o where t.id = o.id and t.ctid = o.write_version and t.xmin = o.write_xmin and t.deleted_at is null and o.write_changes returning t.*)`,
        audit,
      ],
      // Not written although it differed: another write changed the row first.
      `select ${answer}, false as "writeRaced" from n t union all select ${answer}, t.write_changes as "writeRaced" from o t where not exists (select 1 from n)`,
      gate,
    );
  }
  return withText(
    [
      `o as (select * from ${resource.table} where id = ?::bigint and deleted_at is null${andGate(gate)} for no key update)`,
      `n as (update ${resource.table} t set ${[...set, ...touched(resource)].join(', ')} from o where t.id = o.id and (${differs.join(' or ') || 'false'}) returning t.*)`,
      audit,
    ],
    `select ${answer} from (select * from n union all select * from o where not exists (select 1 from n)) t`,
    gate,
  );
}

/**
 * Statement texts by resource and shape, made once: a PATCH's text is ~1.5 KB, and building it and
 * then hashing a new string of that size to find its prepared statement (src/db/sql.ts) was
 * measurable on every write; the same string object again is found by its kept hash. Bounded per
 * resource (a shape is a subset of its writable fields, but a resource may have many); past the
 * bound a text is made afresh each time, as before.
 */
const TEXTS = new WeakMap<Resource, Map<string, string>>();
const MAX_SHAPES = 256;

function shapedText(resource: Resource, shape: string, make: () => string): string {
  let texts = TEXTS.get(resource);
  if (!texts) TEXTS.set(resource, (texts = new Map()));
  let text = texts.get(shape);
  if (text === undefined) {
    text = make();
    if (texts.size < MAX_SHAPES) texts.set(shape, text);
  }
  return text;
}

/** What every change moves: `updated_at`, and a revision counter (a token's `version`). */
function touched(resource: Resource): string[] {
  const moved = ['updated_at = now()'];
  for (const [, field] of resource.entries) if (field.kind === 'revision') moved.push(`${field.column} = t.${field.column} + 1`);
  return moved;
}

/** The audit rows (record id, changes) of the rows a cascade took, read from its CTE `alias`. */
function cascadeEventSql(dependent: Cascade, alias: string): { record: string; changes: string; order: string } {
  const { event } = dependent;
  if (event.action === 'delete') {
    return {
      record: `${alias}.id`,
      changes: `jsonb_build_object('deletedAt', jsonb_build_object('before', null, 'after', ${auditDate(`${alias}.deleted_at`)}))`,
      order: `${alias}.id`,
    };
  }
  const user = columnSql(alias, event.userColumn);
  const linked = columnSql(alias, event.linked.column);
  return {
    record: user,
    changes: `jsonb_build_object('${event.linked.field}', jsonb_build_object('before', ${linked}, 'after', null))`,
    order: `${user}, ${linked}`,
  };
}

/**
 * Soft-deletes the live record `id` and, in the same statement, the live rows that depend on it
 * (the resource's `cascade`: a user's tokens and links), after the record's own row is locked (so
 * that every delete locks in the same order). Appends, still in the same statement, the record's
 * audit event and one per row the cascade took (SPEC §9: one per record changed; §10: each is an
 * event for subscribers): an `UPDATE … RETURNING` per dependent table feeds one `INSERT … SELECT`,
 * whatever the number of rows. Answers the id; no row when there is no live record.
 */
export function deleteStatement(resource: Resource, id: number, action: AuditAction, context: WriteContext): Statement {
  const params: unknown[] = [id];
  const cascade = resource.cascade ?? [];
  const deletedAt = resource.fields.deletedAt as Field;
  const changes = `jsonb_build_object('deletedAt', jsonb_build_object('before', null, 'after', ${auditValue(deletedAt, 'n')}))`;
  // The record's own event first, then its dependents', table by table in the cascade's order:
  // the event ids are taken in the order the rows come.
  const events = [`(select ${auditRow(action, resource.name)}, n.id, ${changes} from n)`];
  params.push(...actor(context.caller));
  cascade.forEach((dependent, i) => {
    const { record, changes: taken, order } = cascadeEventSql(dependent, `c${i}`);
    // In a stable order (the ids an UPDATE returns come in the table's physical order).
    events.push(`(select ${auditRow(dependent.event.action, dependent.event.resource)}, ${record}, ${taken} from c${i} order by ${order})`);
    params.push(...actor(context.caller));
  });
  const text = (gate: WriteGate | null) => {
    const ctes = [
      `o as (select id from ${resource.table} where id = ?::bigint and deleted_at is null${andGate(gate)} for update)`,
      `n as (update ${resource.table} t set deleted_at = now(), updated_at = now() from o where t.id = o.id returning t.id, t.deleted_at)`,
    ];
    cascade.forEach((dependent, i) => {
      const { event } = dependent;
      const returned = event.action === 'delete' ? 'd.id, d.deleted_at' : `${columnSql('d', event.userColumn)}, ${columnSql('d', event.linked.column)}`;
      ctes.push(
        `c${i} as (update ${dependent.table} d set deleted_at = now(), updated_at = now() where d.${dependent.column} in (select id from n) and d.deleted_at is null returning ${returned})`,
      );
    });
    ctes.push(`a as (${AUDIT_INSERT} ${events.join(' union all ')})`);
    return withText(ctes, 'select n.id from n', gate);
  };
  return new GateableStatement(text, params);
}

/**
 * Brings the soft-deleted record `id` back (a new `updatedAt`, a token's next `version`). Answers
 * whether a record with that id exists and was live (`live`), and the record once restored.
 */
export function restoreStatement(resource: Resource, id: number, context: WriteContext): Statement {
  const params: unknown[] = [id];
  const extra = context.alsoSet ?? [];
  let text = `with o as (select * from ${resource.table} where id = ?::bigint for update)`;
  const set = ['deleted_at = null', ...extra.map((c) => `${c.column} = ?::${c.type}`), ...touched(resource)];
  params.push(...extra.map((c) => c.value));
  text += `, n as (update ${resource.table} t set ${set.join(', ')} from o where t.id = o.id and o.deleted_at is not null returning t.*)`;
  const deletedAt = resource.fields.deletedAt as Field;
  text += `, a as (${AUDIT_INSERT} select ${auditRow('restore', resource.name)}, n.id, ${changesSql([['deletedAt', deletedAt]], 'o', 'n')} from n join o on o.id = n.id)`;
  params.push(...actor(context.caller));
  text += ` select o.deleted_at is null as live, ${resource.columns.replace(/\bt\./g, 'n.')} from o left join n on true`;
  return { text, params };
}

/** Reserves the next id of the resource's sequence (a later create or PUT on it makes the record). */
export function applyStatement(resource: Resource, context: WriteContext): Statement {
  const next = `'${resource.name}', nextval(pg_get_serial_sequence('${resource.table}', 'id'))`;
  const text = (gate: WriteGate | null) =>
    withText(
      [
        `r as (insert into id_reservations (resource, id) ${insertedRow(next, gate)} returning id)`,
        `a as (${AUDIT_INSERT} select ${auditRow('apply', resource.name)}, r.id, '{}'::jsonb from r)`,
      ],
      'select r.id from r',
      gate,
    );
  return new GateableStatement(text, actor(context.caller));
}

/** One audit event per given record, outside a resource's own statements (links, bulk revokes). */
export function auditStatement(
  caller: Caller,
  events: readonly { action: AuditAction; resource: string; recordID: number; changes: Record<string, { before: unknown; after: unknown }> }[],
): Statement {
  const rows = events.map(() => '(?::bigint, ?::bigint, ?::text, ?::text, ?::text, ?::bigint, ?::jsonb)').join(', ');
  const who = actor(caller);
  const params = events.flatMap((e) => [...who, e.action, e.resource, e.recordID, JSON.stringify(e.changes)]);
  return { text: `${AUDIT_INSERT} values ${rows}`, params };
}
