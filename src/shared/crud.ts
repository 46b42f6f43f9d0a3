import {
  ForeignKeyConstraintViolationException,
  LockMode,
  UniqueConstraintViolationException,
  type EntityClass,
  type FilterQuery,
} from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { requirePermission, type Caller, type Resource } from '../auth/caller.js';
import { idArray, readerFor, whereSql, wireDate } from '../db/reads.js';
import { transaction } from '../db/transaction.js';
import { compileKeyset, connectionOf, sortColumns, type Connection, type ConnectionInput } from '../list/keyset.js';
import {
  andAll,
  compileList,
  deletedScopeSql,
  orderSql,
  parseDeleted,
  type DeletedScope,
  type ListFields,
  type ListInput,
  type Page,
  type SqlFragment,
} from '../list/list.js';
import { appendAudit, changesOf, type AuditAction } from '../audit/audit.service.js';
import { AppError } from './errors.js';
import { parseAttrs, readWriteBody, requireObject, type WritableFields } from './input.js';
import { checkId } from './values.js';

/** What every stored record has: a bigint id, service-set timestamps, soft deletion. */
export interface LiveRecord {
  id: number;
  createdAt: Date;
  updatedAt: Date;
  deletedAt: Date | null;
}

/**
 * A top-level list's inputs: the list language plus `deleted` (SPEC §9: `only` or `include` reads
 * soft-deleted records too, each then carrying `deletedAt`). Nested and link lists have no `deleted`.
 */
export interface RecordListInput extends ListInput {
  deleted?: unknown;
}
export interface RecordConnectionInput extends ConnectionInput {
  deleted?: unknown;
}

/** A record of a list read with `deleted`: when it was deleted, null for a live one. */
export type WithDeletedAt<R> = R & { deletedAt: string | null };

/** How a list call is answered: `count: false` leaves `total` out (GraphQL, when it is not selected). */
export interface ListOptions {
  count?: boolean;
}

/** How one record type plugs into the shared operations. */
export interface CrudDefinition<E extends LiveRecord, R extends { id: number }> {
  resource: Resource;
  /** "user", "token", …: used in messages. */
  label: string;
  entity: EntityClass<E>;
  table: string;
  /** The read path: the columns a read selects (table alias `t`), and the wire record of a row. */
  columns: string;
  fromRow(row: never): R;
  /** The wire record of an entity the write path wrote. */
  fromEntity(record: E): R;
  writable: WritableFields;
  listFields: ListFields;
  /** Wire name → entity property where they differ (a token's `userID` is its `user`). */
  properties?: Readonly<Record<string, string>>;
  /**
   * Checks against other records and the caller, inside the write's transaction; `record` is the
   * live record being changed (absent on a create).
   */
  check?(em: EntityManager, values: Record<string, unknown>, caller: Caller, record?: E): Promise<void>;
  /** Fills what a loaded record keeps outside its columns (a token's decrypted secrets). */
  loaded?(record: E): void;
  /** Whether the caller may change or delete this existing record (throws when not). */
  guard?(record: E, caller: Caller): void;
  /** Service-set fields of a new record (a token's `client`). */
  onCreate?(record: E, caller: Caller): void;
  /** Bookkeeping on every change (a token's `version`). */
  onChange?(record: E): void;
  /** The 409 for a unique index violated by `values`. */
  conflict(values: Record<string, unknown>): AppError;
  /** Soft-deletes what depends on a record being deleted (a user's tokens and links). */
  cascade?(em: EntityManager, id: number, now: Date): Promise<void>;
  /**
   * Whether a deleted record may come back, inside the restore's transaction (a token needs a live
   * owner: a token of a deleted user could never authenticate). Throws when not.
   */
  checkRestore?(em: EntityManager, record: E, caller: Caller): Promise<void>;
}

export interface Replaced<R> {
  record: R;
  /** True when the PUT created the record on an id reserved by "apply id". */
  created: boolean;
}

/** Parses a record id from a path or a GraphQL ID; a malformed one is a 400 naming `field`. */
export function parseId(raw: unknown, field = 'id'): number {
  const checked = checkId(raw);
  if (!checked.ok) throw AppError.invalid([{ field, message: checked.message }]);
  return checked.value;
}

const sameValue = (a: unknown, b: unknown) =>
  a instanceof Date && b instanceof Date ? a.getTime() === b.getTime() : a === b;

/**
 * The operations every record type shares: list, get, create, replace (PUT, which also creates on
 * a reserved id), patch, destroy (soft), and apply id. Each checks the caller's permission first,
 * validates its input before touching the database, and writes inside one transaction.
 */
export function crudService<E extends LiveRecord, R extends { id: number }>(orm: MikroORM, def: CrudDefinition<E, R>) {
  const read = `${def.resource}:read` as const;
  const write = `${def.resource}:write` as const;
  const live = (id: number) => ({ id, deletedAt: null }) as FilterQuery<E>;
  const rows = readerFor(orm);
  const fromRow = def.fromRow as (row: unknown) => R;
  const BY_ID = `select ${def.columns} from ${def.table} t where t.id = ? and t.deleted_at is null`;
  const LIVE_COUNT = `select live as total from live_counts where table_name = '${def.table}'`;
  // A list with `deleted` also reads when each record was deleted (and only such a list does, so
  // the default answers stay exactly the original's records).
  const COLUMNS_WITH_DELETED_AT = `${def.columns}, t.deleted_at`;
  const withDeletedAt = (row: unknown): WithDeletedAt<R> => ({
    ...fromRow(row),
    deletedAt: wireDate((row as { deleted_at: string | null }).deleted_at),
  });
  /** The columns a list of the scope reads and how its rows are presented. */
  const readerOf = (scope: DeletedScope) =>
    scope === 'live' ? { columns: def.columns, present: fromRow } : { columns: COLUMNS_WITH_DELETED_AT, present: withDeletedAt as (row: unknown) => R };

  /**
   * How many records of the scope match. Live records unfiltered: the live count the writes keep
   * (live_counts), one primary-key read; anything else is counted.
   */
  async function countMatches(scope: DeletedScope, filter: SqlFragment | null): Promise<number> {
    const where = andAll(deletedScopeSql(scope), filter);
    const [row] =
      scope === 'live' && !filter
        ? await rows<{ total: string }>(LIVE_COUNT)
        : await rows<{ total: string }>(`select count(*) as total from ${def.table} t${whereSql(where)}`, where?.params ?? []);
    return Number(row?.total ?? 0);
  }

  async function findById(id: number): Promise<R | null> {
    const [row] = await rows(BY_ID, [id]);
    return row ? fromRow(row) : null;
  }

  /** Copies validated wire values onto the record; says whether anything changed. */
  function assign(record: E, values: Record<string, unknown>): boolean {
    let changed = false;
    const target = record as Record<string, unknown>;
    for (const [name, value] of Object.entries(values)) {
      const property = def.properties?.[name] ?? name;
      if (!sameValue(target[property], value)) {
        target[property] = value;
        changed = true;
      }
    }
    return changed;
  }

  /** Runs a write in a transaction; a unique or foreign-key violation becomes a 409 or 400. */
  async function inTransaction<T>(values: Record<string, unknown>, work: (em: EntityManager) => Promise<T>): Promise<T> {
    try {
      return await transaction(orm, work);
    } catch (err) {
      if (err instanceof UniqueConstraintViolationException) throw def.conflict(values);
      if (err instanceof ForeignKeyConstraintViolationException) {
        throw AppError.badRequest(`the ${def.label} refers to a record that does not exist`);
      }
      throw err;
    }
  }

  /** The live record (or, for a restore, any), locked for this transaction, once the caller may change it. */
  async function lockLive(em: EntityManager, id: number, caller: Caller, which: FilterQuery<E> = live(id)): Promise<E> {
    const record = await em.findOne(def.entity, which, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!record) throw AppError.notFound(`no ${def.label} with id ${id}`);
    def.loaded?.(record);
    def.guard?.(record, caller);
    return record;
  }

  async function insert(em: EntityManager, caller: Caller, values: Record<string, unknown>, id?: number): Promise<E> {
    await def.check?.(em, values, caller);
    const record = em.create(def.entity, {} as never);
    assign(record, values);
    if (id !== undefined) record.id = id;
    const now = new Date();
    record.createdAt = now;
    record.updatedAt = now;
    def.onCreate?.(record, caller);
    await em.flush();
    await appendAudit(em, caller, [{ action: 'create', resource: def.resource, recordID: record.id, changes: changesOf({}, values) }]);
    return record;
  }

  /** A record's values of these fields, by their wire names. */
  const snapshot = (record: E, names: readonly string[]) =>
    Object.fromEntries(names.map((name) => [name, (record as Record<string, unknown>)[def.properties?.[name] ?? name]]));

  /** Applies values to a live record, and appends the write's audit event (changed fields only). */
  async function change(em: EntityManager, caller: Caller, record: E, values: Record<string, unknown>, action: AuditAction): Promise<void> {
    const before = snapshot(record, Object.keys(values));
    if (assign(record, values)) {
      record.updatedAt = new Date();
      def.onChange?.(record);
    }
    await em.flush();
    const after = snapshot(record, Object.keys(values));
    // One event per record changed: a write that matched but changed nothing leaves none.
    const changes = changesOf(before, after);
    if (Object.keys(changes).length) await appendAudit(em, caller, [{ action, resource: def.resource, recordID: record.id, changes }]);
  }

  /** Applies validated values to a live record (shared by PUT, PATCH and special setters such as status). */
  async function update(caller: Caller, rawId: unknown, values: Record<string, unknown>, action: AuditAction = 'update'): Promise<R> {
    requirePermission(caller, write);
    const id = parseId(rawId);
    const record = await inTransaction(values, async (em) => {
      const record = await lockLive(em, id, caller);
      await def.check?.(em, values, caller, record);
      await change(em, caller, record, values, action);
      return record;
    });
    return def.fromEntity(record);
  }

  return {
    /**
     * A page of live records, or with `deleted` of deleted ones too (each with `deletedAt`). The
     * total of an unfiltered live list is the live count the writes keep (live_counts), one
     * primary-key read; any other is counted, beside the page, not after it.
     */
    async list(caller: Caller, input: RecordListInput, options: ListOptions = {}): Promise<Page<R>> {
      requirePermission(caller, read);
      const scope = parseDeleted(input.deleted);
      const q = compileList(input, def.listFields);
      const where = andAll(deletedScopeSql(scope), q.where);
      const { columns, present } = readerOf(scope);
      const page = rows(`select ${columns} from ${def.table} t${whereSql(where)} order by ${orderSql(q.order)} limit ? offset ?`, [
        ...(where?.params ?? []),
        q.limit,
        q.offset,
      ]);
      const [data, total] = await Promise.all([page, options.count === false ? null : countMatches(scope, q.where)]);
      return { total, page: q.page, pageSize: q.pageSize, data: data.map(present) };
    },

    /** A keyset page (GraphQL's `…Connection`): `first`/`after` or `last`/`before`; totalCount only when `count`. */
    async connection(caller: Caller, input: RecordConnectionInput, options: ListOptions = {}): Promise<Connection<R>> {
      requirePermission(caller, read);
      const scope = parseDeleted(input.deleted);
      const keyset = compileKeyset(input, def.listFields);
      const where = andAll(deletedScopeSql(scope), keyset.where, keyset.bound);
      const { columns, present } = readerOf(scope);
      const [found, total] = await Promise.all([
        rows<Record<string, unknown>>(
          `select ${columns}, ${sortColumns(keyset.order)} from ${def.table} t${whereSql(where)} order by ${orderSql(keyset.order, keyset.backward)} limit ?`,
          [...(where?.params ?? []), keyset.limit + 1],
        ),
        options.count === false ? null : countMatches(scope, keyset.where),
      ]);
      return connectionOf(keyset, found, present, total);
    },

    /** The live record, or null (GraphQL's single-record queries answer null). */
    async find(caller: Caller, rawId: unknown): Promise<R | null> {
      requirePermission(caller, read);
      return findById(parseId(rawId));
    },

    async get(caller: Caller, rawId: unknown): Promise<R> {
      requirePermission(caller, read);
      const id = parseId(rawId);
      const record = await findById(id);
      if (!record) throw AppError.notFound(`no ${def.label} with id ${id}`);
      return record;
    },

    /** Live records by id, in one statement (GraphQL's batches); absent ids are simply missing. */
    async findMany(caller: Caller, ids: readonly number[]): Promise<R[]> {
      requirePermission(caller, read);
      const found = await rows(`select ${def.columns} from ${def.table} t where t.id = any(?::bigint[]) and t.deleted_at is null`, [
        idArray(ids),
      ]);
      return found.map(fromRow);
    },

    /**
     * Creates a record with the next id, or with the `id` the body carries (SPEC §4): the original
     * service's clients reserve one with "apply id" and then POST the record with it. A reserved,
     * unused id is claimed (the reservation row serializes concurrent claims); the id of a record
     * that exists, even deleted, is a 409; any other id a 400. `0` and `null` mean no id (Go's zero
     * value, which those clients send for a record without one).
     */
    async create(caller: Caller, body: unknown): Promise<R> {
      requirePermission(caller, write);
      const values = readWriteBody(body, def.writable, 'create');
      const given = requireObject(body).id;
      // Ids in bodies are JSON numbers (SPEC §3); only paths carry them as text.
      const id = given === undefined || given === null || given === 0 ? undefined : parseId(typeof given === 'number' ? given : NaN);
      const created = await inTransaction(values, async (em) => {
        if (id !== undefined) {
          const claimed = await em.execute<{ id: string }[]>(
            'delete from id_reservations where resource = ? and id = ? returning id',
            [def.resource, id],
          );
          if (claimed.length === 0) {
            const [existing] = await em.execute<{ id: string }[]>(`select id from ${def.table} where id = ?`, [id]);
            if (existing) throw AppError.conflict(`a ${def.label} with id ${id} exists already`);
            throw AppError.invalid([{ field: 'id', message: `id ${id} was not reserved; leave id out to get the next one` }]);
          }
        }
        return insert(em, caller, values, id);
      });
      return def.fromEntity(created);
    },

    /**
     * PUT: replaces every writable field of a live record; on an id reserved by "apply id" that has
     * no record yet, creates it. Claiming the reservation row serializes concurrent PUTs of one id.
     */
    async replace(caller: Caller, rawId: unknown, body: unknown): Promise<Replaced<R>> {
      requirePermission(caller, write);
      const id = parseId(rawId);
      const values = readWriteBody(body, def.writable, 'replace');
      const replaced = await inTransaction(values, async (em) => {
        const claimed = await em.execute<{ id: string }[]>(
          'delete from id_reservations where resource = ? and id = ? returning id',
          [def.resource, id],
        );
        if (claimed.length > 0) return { record: await insert(em, caller, values, id), created: true };
        const record = await lockLive(em, id, caller);
        await def.check?.(em, values, caller, record);
        await change(em, caller, record, values, 'update');
        return { record, created: false };
      });
      return { record: def.fromEntity(replaced.record), created: replaced.created };
    },

    /** PATCH: changes the fields named by `attrs` (the Attrs header), else those in the body. */
    async patch(caller: Caller, rawId: unknown, body: unknown, attrsHeader?: string): Promise<R> {
      requirePermission(caller, write);
      parseId(rawId);
      const values = readWriteBody(body, def.writable, 'patch', parseAttrs(attrsHeader, def.writable));
      return update(caller, rawId, values, 'patch');
    },

    update,

    /** Soft delete; `action` names it in the audit log (a token's revocation is a `revoke`). */
    async destroy(caller: Caller, rawId: unknown, action: AuditAction = 'delete'): Promise<void> {
      requirePermission(caller, write);
      const id = parseId(rawId);
      await inTransaction({}, async (em) => {
        const record = await lockLive(em, id, caller);
        const now = new Date();
        record.deletedAt = now;
        record.updatedAt = now;
        await em.flush();
        await def.cascade?.(em, id, now);
        await appendAudit(em, caller, [{ action, resource: def.resource, recordID: id, changes: changesOf({ deletedAt: null }, { deletedAt: now }) }]);
      });
    },

    /**
     * Brings a soft-deleted record back (SPEC §9), as the same record: same id, same values, a new
     * `updatedAt` (and a token's next `version`). What its delete took with it (a user's tokens and
     * links, an application's links) stays deleted: those are restored one by one, if at all.
     * An unknown id is a 404; a live record a 409 (there is nothing to restore); so is a record
     * whose unique name or accessToken a live record holds now (the unique indexes cover live rows
     * only), and whatever `checkRestore` refuses.
     */
    async restore(caller: Caller, rawId: unknown): Promise<R> {
      requirePermission(caller, write);
      const id = parseId(rawId);
      const values: Record<string, unknown> = {}; // what a unique violation names (def.conflict)
      const restored = await inTransaction(values, async (em) => {
        const record = await lockLive(em, id, caller, { id } as FilterQuery<E>);
        if (record.deletedAt === null) throw AppError.conflict(`the ${def.label} with id ${id} is not deleted`);
        await def.checkRestore?.(em, record, caller);
        Object.assign(values, snapshot(record, Object.keys(def.writable)));
        await change(em, caller, record, { deletedAt: null }, 'restore');
        return record;
      });
      return def.fromEntity(restored);
    },

    /** Reserves the next id of the record's own sequence; a later PUT on it creates the record. */
    async applyId(caller: Caller): Promise<number> {
      requirePermission(caller, write);
      return transaction(orm, async (em) => {
        const [row] = await em.execute<{ id: string }[]>(
          `insert into id_reservations (resource, id)
           values (?, nextval(pg_get_serial_sequence('${def.table}', 'id'))) returning id`,
          [def.resource],
        );
        await appendAudit(em, caller, [{ action: 'apply', resource: def.resource, recordID: Number(row.id), changes: {} }]);
        return Number(row.id);
      });
    },
  };
}

export type CrudService<E extends LiveRecord, R extends { id: number }> = ReturnType<typeof crudService<E, R>>;
