import { requirePermission, type Caller } from '../auth/caller.js';
import type { AuditAction } from './audit.js';
import { isServerError, runWrite, type Sql, type Transaction } from '../db/sql.js';
import { idArray } from '../db/wire.js';
import { AppError } from '../errors.js';
import { compileKeyset, connectionOf, sortColumns, type CompiledKeyset, type Connection, type ConnectionInput } from '../list/keyset.js';
import {
  andAll,
  compileList,
  deletedScopeSql,
  offsetPageSql,
  orderSql,
  parseDeleted,
  type CompiledList,
  type DeletedScope,
  type ListFields,
  type ListInput,
  type Page,
  type SqlFragment,
} from '../list/list.js';
import type { Field } from './field.js';
import type { Cascade, RecordOf, Resource, WritableOf } from './resource.js';
import {
  applyStatement,
  deleteStatement,
  insertStatement,
  restoreStatement,
  updateStatement,
  type ColumnValue,
  type Encode,
  type Statement,
  type WriteContext,
} from './writes.js';

/**
 * The operations every record type shares, over one resource definition: list (offset pages and
 * keyset connections), get, create (on the next id or a reserved one), replace (PUT, which also
 * creates on a reserved id), patch, destroy (soft), restore and apply id. Each takes the caller,
 * typed values (parsed at the edge: src/resource/input.ts) and the `Sql` to run on: the pool, or
 * a transaction a caller opened (a GraphQL mutation of several fields).
 *
 * Reads are plain rows in their wire form (src/resource/resource.ts: the select list names each
 * column as its field). A write of one record is one statement (src/resource/writes.ts) unless the
 * resource has checks that read other rows first (`checks`): then that statement runs in a
 * transaction after them.
 */

/** Runs of an update without the row's lock before it locks it (service: updateRows). */
const OPTIMISTIC_RUNS = 3;

/** A top-level list's inputs as a protocol hands them over: the list language plus `deleted` (docs/rest.md#deleted-records-restore-and-deletedonlyinclude: `only` or `include`). */
export interface RecordListInput extends ListInput {
  deleted?: unknown;
}
export interface RecordConnectionInput extends ConnectionInput {
  deleted?: unknown;
}

/** A top-level list, parsed: which records (live, deleted or both), and the page of the list language. */
export interface RecordQuery extends CompiledList {
  scope: DeletedScope;
}
export interface RecordKeysetQuery extends CompiledKeyset {
  scope: DeletedScope;
}

/** Parses a top-level list's inputs against a list's fields (400 naming what is wrong). */
export const parseRecordQuery = (input: RecordListInput, fields: ListFields): RecordQuery => ({
  scope: parseDeleted(input.deleted),
  ...compileList(input, fields),
});
export const parseRecordKeyset = (input: RecordConnectionInput, fields: ListFields): RecordKeysetQuery => ({
  scope: parseDeleted(input.deleted),
  ...compileKeyset(input, fields),
});

/**
 * How a read is answered: `fields` reads only those fields of each record (GraphQL: what the query
 * selects; absent: every field, as REST answers them); `count: false` leaves a page's `total` out
 * (GraphQL, when it is not selected).
 */
export interface ReadOptions {
  fields?: ReadonlySet<string>;
}
export interface ListOptions extends ReadOptions {
  count?: boolean;
}

export interface Replaced<R> {
  record: R;
  /** True when the PUT created the record on an id reserved by "apply id". */
  created: boolean;
}

/** What a resource adds to the shared operations (tokens: their secrets and their rules). */
export interface RecordHooks<R extends Resource> {
  /** The list language's fields, when they differ from the resource's (a token's secrets, matched by keyed hash). */
  listFields?: ListFields;
  /** The record of a row read (a token's secrets opened). */
  fromRow?(row: Record<string, unknown>): RecordOf<R>;
  /** How a value is stored, when not in its own column (a secret: its keyed hash and ciphertext). */
  encode?: Encode;
  /** Service-set columns of a new record (a token's `client`). */
  onCreate?(caller: Caller): ColumnValue[];
  /** Service-set columns written with every change of a record (a token's secrets, sealed afresh). */
  onChange?(current: RecordOf<R>): ColumnValue[];
  /** The 409 of a unique index the values break. */
  conflict(values: Partial<WritableOf<R>>): AppError;
  /**
   * Whether the caller may end what a delete of record `id` takes with it (the resource's
   * `cascade`; a user's tokens: only those it could have granted). Runs in the delete's
   * transaction once the record is locked, only when it is live; a refusal changes nothing.
   */
  cascadeGuard?(tx: Transaction, caller: Caller, id: number): Promise<void>;
  /**
   * Checks that read other rows, in the write's transaction, before its statement: the record as
   * it is (locked; absent on a create), the values to write, what the write is.
   */
  checks?: {
    write(tx: Transaction, caller: Caller, values: Partial<WritableOf<R>>, current: RecordOf<R> | null): Promise<void>;
    /** Whether the caller may change or delete this record at all (a token: only one it could have granted). */
    guard?(current: RecordOf<R>, caller: Caller): void;
    restore?(tx: Transaction, caller: Caller, current: RecordOf<R>): Promise<void>;
  };
}

type Row = Record<string, unknown>;

/** What a record service is made with besides its resource and hooks. */
export interface RecordDeps {
  /** What a delete takes with it besides the definition's own `cascade`: the links of the relations the resource is part of. */
  cascadeOf(resource: Resource): readonly Cascade[];
}

/**
 * What the reads and the writes of one resource share: the resource (its cascade completed with its
 * relations'), each operation's permission, its statements, how a row becomes its record, the
 * count, the locks and the checks of a write.
 */
function recordCore<R extends Resource>(definition: R, hooks: RecordHooks<R>, deps: RecordDeps) {
  type Rec = RecordOf<R> & { id: number };
  type Values = Partial<WritableOf<R>>;
  // Deletes take the links of its relations with them, after the dependents its definition names.
  const resource: R = { ...definition, cascade: [...(definition.cascade ?? []), ...deps.cascadeOf(definition)] };
  const { read, write } = resource.permissions;
  /** The permission of each operation: what the service checks, and what REST and GraphQL check first (a 403 before a 400). */
  const permissions = { list: read, get: read, create: write, replace: write, patch: write, destroy: write, restore: write, applyId: write } as const;
  const listFields = hooks.listFields ?? resource.listFields;
  const fromRow = (hooks.fromRow ?? ((row: Row) => row as Rec)) as (row: Row) => Rec;
  const withDeletedAt = (row: Row) => ({ ...fromRow(row), deletedAt: row.deletedAt }) as Rec;
  const BY_ID = `select ${resource.columns} from ${resource.table} t where t.id = ? and t.deleted_at is null`;
  const BY_IDS = `select ${resource.columns} from ${resource.table} t where t.id = any(?::bigint[]) and t.deleted_at is null`;
  const LOCKED = `select ${resource.columns}, t.deleted_at is not null as deleted from ${resource.table} t where t.id = ? for update`;
  const LIVE_COUNT = `select live as total from live_counts where table_name = '${resource.table}'`;
  const whereSql = (where: SqlFragment | null) => (where ? ` where ${where.sql}` : '');

  // A resource whose records are made from their rows by a hook (a token: its secrets opened) reads whole rows.
  const projects = !hooks.fromRow;
  /** What a write runs with: the caller, how values are stored, and the fields it answers (`options.fields`, when the resource projects). */
  // One shape for every write (no conditional spreads: each was an object made and copied on every write).
  const context = (caller: Caller, options: ReadOptions = {}): WriteContext => ({
    caller,
    encode: hooks.encode,
    answer: options.fields && projects ? resource.columnsOf(options.fields) : undefined,
  });
  /** The select list of a read of the scope: the fields asked for, or all. */
  const columnsFor = (fields: ReadonlySet<string> | undefined, scope: DeletedScope = 'live') =>
    fields && projects ? resource.columnsOf(fields, scope !== 'live') : scope === 'live' ? resource.columns : resource.columnsWithDeletedAt;
  const presenterOf = (scope: DeletedScope) => (scope === 'live' ? fromRow : withDeletedAt);
  const byId = (fields: ReadonlySet<string> | undefined) =>
    fields && projects ? `select ${columnsFor(fields)} from ${resource.table} t where t.id = ? and t.deleted_at is null` : BY_ID;

  /** How many records of the scope match: the live count the writes keep when unfiltered (a counted resource), else counted. */
  async function countMatches(sql: Sql, scope: DeletedScope, filter: SqlFragment | null): Promise<number> {
    const where = andAll(deletedScopeSql(scope), filter);
    const [row] =
      scope === 'live' && !filter && resource.counted
        ? await sql.rows<{ total: number }>(LIVE_COUNT)
        : await sql.rows<{ total: number }>(`select count(*) as total from ${resource.table} t${whereSql(where)}`, where?.params ?? []);
    return Number(row?.total ?? 0);
  }

  /** Runs a statement of a write; a unique or foreign-key violation becomes the resource's 409 or a 400. */
  async function writeRows(sql: Sql, statement: Statement, values: Values): Promise<Row[]> {
    try {
      return await runWrite<Row>(sql, statement);
    } catch (err) {
      if (isServerError(err) && err.code === '23505') throw hooks.conflict(values);
      if (isServerError(err) && err.code === '23503') throw AppError.badRequest(`the ${resource.label} refers to a record that does not exist`);
      throw err;
    }
  }

  /**
   * Runs an update (writes.ts updateStatement, made by `update` for its form): first without
   * locking the row; when another write changed the row between the statement's read and its
   * update, that statement changed nothing, and the update runs again on the row as it is now.
   * After OPTIMISTIC_RUNS such losses (a row written many times at once) it locks the row first,
   * which cannot lose. Inside a transaction that locked the row already (checked), the first run
   * cannot lose either.
   */
  async function updateRows(sql: Sql, update: (optimistic: boolean) => Statement, values: Values): Promise<Row[]> {
    for (let run = 1; run <= OPTIMISTIC_RUNS; run++) {
      const [row] = await writeRows(sql, update(true), values);
      if (!row) return [];
      const { writeRaced, ...record } = row;
      if (!writeRaced) return [record];
    }
    return writeRows(sql, update(false), values);
  }

  /** The record as it is, locked for the rest of the transaction, with whether it is deleted; null when there is none. */
  async function lock(tx: Transaction, id: number): Promise<{ record: Rec; deleted: boolean } | null> {
    const [row] = await tx.rows<Row>(LOCKED, [id]);
    if (!row) return null;
    const { deleted, ...rest } = row;
    return { record: fromRow(rest), deleted: deleted as boolean };
  }

  /**
   * Runs a write: with checks, in a transaction, the record locked and checked first (a missing one
   * is a 404 before anything else, unless `mayCreate`: a PUT on a reserved id); without, its one
   * statement on `sql` as it is (on the pool, a transaction of its own). `run` gets the record as
   * it was, when the checks read it.
   */
  async function checked<T>(
    sql: Sql,
    caller: Caller,
    target: { id: number; mayCreate?: boolean } | null,
    values: Values,
    run: (sql: Sql, current: Rec | null) => Promise<T>,
  ): Promise<T> {
    const checks = hooks.checks;
    if (!checks) return run(sql, null);
    return sql.transaction(async (tx) => {
      const locked = target ? await lock(tx, target.id) : null;
      const current = locked && !locked.deleted ? locked.record : null;
      if (target && !current && !target.mayCreate) throw notFound(target.id);
      if (current) checks.guard?.(current, caller);
      await checks.write(tx, caller, values, current);
      return run(tx, current);
    });
  }

  const notFound = (id: number) => AppError.notFound(`no ${resource.label} with id ${id}`);

  return {
    resource,
    hooks,
    permissions,
    listFields,
    fromRow,
    columnsFor,
    presenterOf,
    byId,
    BY_ID,
    BY_IDS,
    countMatches,
    writeRows,
    updateRows,
    lock,
    checked,
    notFound,
    context,
    whereSql,
    projects,
  };
}

type Core<R extends Resource> = ReturnType<typeof recordCore<R>>;

/** The reads: a page, a keyset page, one record (null or a 404), many by id. */
function recordReads<R extends Resource>(core: Core<R>) {
  type Rec = RecordOf<R> & { id: number };
  const { resource, permissions, listFields, fromRow, columnsFor, presenterOf, byId, BY_ID, BY_IDS, countMatches, notFound, whereSql, projects } = core;
  return {
    /** A top-level list's inputs, parsed against this resource's list fields. */
    parseList: (input: RecordListInput) => parseRecordQuery(input, listFields),
    parseKeyset: (input: RecordConnectionInput) => parseRecordKeyset(input, listFields),

    /**
     * A page of live records, or with `deleted` of deleted ones too (each with `deletedAt`). The
     * total is counted beside the page, not after it.
     */
    async list(caller: Caller, sql: Sql, q: RecordQuery, options: ListOptions = {}): Promise<Page<Rec>> {
      requirePermission(caller, permissions.list);
      const { scope } = q;
      const where = andAll(deletedScopeSql(scope), q.where);
      const columns = columnsFor(options.fields, scope);
      const present = presenterOf(scope);
      const statement = offsetPageSql(columns, resource.table, where, q.order, q);
      const page = sql.rows<Row>(statement.sql, statement.params);
      const [data, total] = await Promise.all([page, options.count === false ? null : countMatches(sql, scope, q.where)]);
      return { total, page: q.page, pageSize: q.pageSize, data: data.map(present) };
    },

    /** A keyset page (GraphQL's `…Connection`): `first`/`after` or `last`/`before`; totalCount only when `count`. */
    async connection(caller: Caller, sql: Sql, keyset: RecordKeysetQuery, options: ListOptions = {}): Promise<Connection<Rec>> {
      requirePermission(caller, permissions.list);
      const { scope } = keyset;
      const where = andAll(deletedScopeSql(scope), keyset.where, keyset.bound);
      const columns = columnsFor(options.fields, scope);
      const present = presenterOf(scope);
      const [found, total] = await Promise.all([
        sql.rows<Row>(
          `select ${columns}, ${sortColumns(keyset.order)} from ${resource.table} t${whereSql(where)} order by ${orderSql(keyset.order, keyset.backward)} limit ?`,
          [...(where?.params ?? []), keyset.limit + 1],
        ),
        options.count === false ? null : countMatches(sql, scope, keyset.where),
      ]);
      return connectionOf(keyset, found, present, total);
    },

    /** The live record, or null (GraphQL's single-record queries answer null). */
    async find(caller: Caller, sql: Sql, id: number, options: ReadOptions = {}): Promise<Rec | null> {
      requirePermission(caller, permissions.get);
      const [row] = await sql.rows<Row>(byId(options.fields), [id]);
      return row ? fromRow(row) : null;
    },

    async get(caller: Caller, sql: Sql, id: number): Promise<Rec> {
      requirePermission(caller, permissions.get);
      const [row] = await sql.rows<Row>(BY_ID, [id]);
      if (!row) throw notFound(id);
      return fromRow(row);
    },

    /** Live records by id, in one statement (GraphQL's batches); absent ids are simply missing. */
    async findMany(caller: Caller, sql: Sql, ids: readonly number[], options: ReadOptions = {}): Promise<Rec[]> {
      requirePermission(caller, permissions.get);
      const text =
        options.fields && projects
          ? `select ${columnsFor(options.fields)} from ${resource.table} t where t.id = any(?::bigint[]) and t.deleted_at is null`
          : BY_IDS;
      return (await sql.rows<Row>(text, [idArray(ids)])).map(fromRow);
    },
  };
}

/** The writes: create, replace (PUT), patch, destroy (soft), restore, apply id. */
function recordWrites<R extends Resource>(core: Core<R>) {
  type Rec = RecordOf<R> & { id: number };
  type Values = Partial<WritableOf<R>>;
  const { resource, hooks, permissions, fromRow, writeRows, updateRows, lock, checked, notFound, context } = core;
  return {
    /**
     * Creates a record with the next id, or with `id` (docs/rest.md#conventions): the original service's clients
     * reserve one with "apply id" and then create the record with it. A reserved, unused id is
     * claimed; the id of a record that exists, even deleted, is a 409; any other id a 400.
     */
    async create(caller: Caller, sql: Sql, values: Values, id?: number, options: ReadOptions = {}): Promise<Rec> {
      requirePermission(caller, permissions.create);
      const statement = insertStatement(resource, values, { ...context(caller, options), extra: hooks.onCreate?.(caller), claimId: id });
      const [row] = await checked(sql, caller, null, values, (runner) => writeRows(runner, statement, values));
      if (row) return fromRow(row);
      const [existing] = await sql.rows(`select 1 as found from ${resource.table} where id = ?`, [id]);
      if (existing) throw AppError.conflict(`a ${resource.label} with id ${id} exists already`);
      throw AppError.invalid([{ field: 'id', message: `id ${id} was not reserved; leave id out to get the next one` }]);
    },

    /**
     * PUT: replaces every writable field of the live record; on an id reserved by "apply id" that
     * has no record yet, creates it.
     */
    async replace(caller: Caller, sql: Sql, id: number, values: Values, options: ReadOptions = {}): Promise<Replaced<Rec>> {
      requirePermission(caller, permissions.replace);
      const claim = insertStatement(resource, values, { ...context(caller, options), extra: hooks.onCreate?.(caller), claimId: id });
      const attempt = () =>
        checked(sql, caller, { id, mayCreate: true }, values, async (runner, current): Promise<Replaced<Rec> | null> => {
          const update = (optimistic: boolean) =>
            updateStatement(resource, id, values, 'update', { ...context(caller, options), alsoSet: current && hooks.onChange?.(current), optimistic });
          const [updated] = await updateRows(runner, update, values);
          if (updated) return { record: fromRow(updated), created: false };
          const [created] = await writeRows(runner, claim, values);
          return created ? { record: fromRow(created), created: true } : null;
        });
      // Neither updated nor created: no live record was there when the update looked, and no
      // reservation when the claim did. A create of this id racing this PUT (a POST with it, or
      // another PUT) explains both: its claim deleted the reservation, and this claim, waiting
      // for that row, went on only once that create had committed (or found it committed). So
      // the record is there now, and the same write again (the checks included, on the record as
      // it is) updates it; a 404 only when there is still none, an id never handed out.
      const replaced = (await attempt()) ?? (await attempt());
      if (!replaced) throw notFound(id);
      return replaced;
    },

    /**
     * Changes the given fields of the live record (PATCH, a user's status: `action` names it in the
     * audit log). As create and replace: `options.fields` (GraphQL's selection) are the fields the
     * answer needs, and the statement answers only those and the id; every field without it (REST).
     */
    async patch(caller: Caller, sql: Sql, id: number, values: Values, action: AuditAction = 'patch', options: ReadOptions = {}): Promise<Rec> {
      requirePermission(caller, permissions.patch);
      const [row] = await checked(sql, caller, { id }, values, (runner, current) =>
        updateRows(
          runner,
          (optimistic) =>
            updateStatement(resource, id, values, action, { ...context(caller, options), alsoSet: current && hooks.onChange?.(current), optimistic }),
          values,
        ),
      );
      if (!row) throw notFound(id);
      return fromRow(row);
    },

    /** Soft delete, with what depends on the record; `action` names it in the audit log (a token's is `revoke`). */
    async destroy(caller: Caller, sql: Sql, id: number, action: AuditAction = 'delete'): Promise<void> {
      requirePermission(caller, permissions.destroy);
      const statement = deleteStatement(resource, id, action, context(caller));
      const run = (runner: Sql) => runWrite(runner, statement);
      const guard = hooks.cascadeGuard;
      // What depends on the record is soft-deleted by the statement after the record is locked by
      // one of its own: a statement sees the rows committed when it began, and a dependent row (a
      // token) committed while the delete waited for the record's lock must be seen too; the
      // cascade's guard reads them, under that lock, before anything changes.
      const [row] = hooks.checks
        ? await checked(sql, caller, { id }, {}, async (runner) => {
            if (guard) await runner.transaction((tx) => guard(tx, caller, id));
            return run(runner);
          })
        : resource.cascade?.length
          ? await sql.transaction(async (tx) => {
              const [live] = await tx.rows(`select id from ${resource.table} where id = ? and deleted_at is null for update`, [id]);
              if (live && guard) await guard(tx, caller, id);
              return run(tx);
            })
          : await run(sql);
      if (!row) throw notFound(id);
    },

    /**
     * Brings a soft-deleted record back (docs/rest.md#deleted-records-restore-and-deletedonlyinclude), as the same record: same id, same values, a new
     * `updatedAt`. What its delete took with it stays deleted. An unknown id is a 404; a live
     * record a 409 (nothing to restore); so is a record whose unique name or accessToken a live
     * record holds now, and whatever the resource's restore check refuses.
     */
    async restore(caller: Caller, sql: Sql, id: number): Promise<Rec> {
      requirePermission(caller, permissions.restore);
      return sql.transaction(async (tx) => {
        const current = await lock(tx, id);
        if (!current) throw notFound(id);
        if (!current.deleted) throw AppError.conflict(`the ${resource.label} with id ${id} is not deleted`);
        hooks.checks?.guard?.(current.record, caller);
        await hooks.checks?.restore?.(tx, caller, current.record);
        const statement = restoreStatement(resource, id, { ...context(caller), alsoSet: hooks.onChange?.(current.record) });
        // A live record may hold the unique value the restored one had (unique indexes cover live
        // rows): the conflict names it from the record's own values (its dates as the wire's text).
        const [row] = await writeRows(tx, statement, current.record as unknown as Values);
        const { live: _live, ...record } = row;
        return fromRow(record);
      });
    },

    /** Reserves the next id of the record's own sequence; a later PUT (or create) on it makes the record. */
    async applyId(caller: Caller, sql: Sql): Promise<number> {
      requirePermission(caller, permissions.applyId);
      const statement = applyStatement(resource, context(caller));
      const [row] = await runWrite<{ id: number }>(sql, statement);
      return row.id;
    },
  };
}

export function recordService<R extends Resource>(definition: R, hooks: RecordHooks<R>, deps: RecordDeps) {
  const core = recordCore(definition, hooks, deps);
  return { resource: core.resource, permissions: core.permissions, listFields: core.listFields, ...recordReads(core), ...recordWrites(core) };
}

export type RecordService<R extends Resource> = ReturnType<typeof recordService<R>>;

/** A field of the resource (for hooks that need one by name). */
export const fieldOf = (resource: Resource, name: string): Field => resource.fields[name];
