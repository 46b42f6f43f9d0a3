import {
  ForeignKeyConstraintViolationException,
  LockMode,
  UniqueConstraintViolationException,
  type EntityClass,
  type FilterQuery,
} from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { requirePermission, type Caller, type Resource } from '../auth/caller.js';
import { readerOf, transaction } from '../db/transaction.js';
import { compileList, type ListFields, type ListInput, type Page } from '../list/list.js';
import { AppError } from './errors.js';
import { parseAttrs, readWriteBody, type WritableFields } from './input.js';
import { checkId } from './values.js';

/** What every stored record has: a bigint id, service-set timestamps, soft deletion. */
export interface LiveRecord {
  id: number;
  createdAt: Date;
  updatedAt: Date;
  deletedAt: Date | null;
}

/** How one record type plugs into the shared operations. */
export interface CrudDefinition<E extends LiveRecord> {
  resource: Resource;
  /** "user", "token", …: used in messages. */
  label: string;
  entity: EntityClass<E>;
  table: string;
  writable: WritableFields;
  listFields: ListFields;
  /** Wire name → entity property where they differ (a token's `userID` is its `user`). */
  properties?: Readonly<Record<string, string>>;
  /** Checks against other records and the caller, inside the write's transaction. */
  check?(em: EntityManager, values: Record<string, unknown>, caller: Caller): Promise<void>;
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
}

export interface Replaced<E> {
  record: E;
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
export function crudService<E extends LiveRecord>(orm: MikroORM, def: CrudDefinition<E>) {
  const read = `${def.resource}:read` as const;
  const write = `${def.resource}:write` as const;
  const live = (id: number) => ({ id, deletedAt: null }) as FilterQuery<E>;

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

  /** The live record, locked for this transaction, once the caller may change it. */
  async function lockLive(em: EntityManager, id: number, caller: Caller): Promise<E> {
    const record = await em.findOne(def.entity, live(id), { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!record) throw AppError.notFound(`no ${def.label} with id ${id}`);
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
    return record;
  }

  /** Applies validated values to a live record (shared by PUT, PATCH and special setters). */
  async function update(caller: Caller, rawId: unknown, values: Record<string, unknown>): Promise<E> {
    requirePermission(caller, write);
    const id = parseId(rawId);
    return inTransaction(values, async (em) => {
      const record = await lockLive(em, id, caller);
      await def.check?.(em, values, caller);
      if (assign(record, values)) {
        record.updatedAt = new Date();
        def.onChange?.(record);
      }
      await em.flush();
      return record;
    });
  }

  return {
    async list(caller: Caller, input: ListInput): Promise<Page<E>> {
      requirePermission(caller, read);
      const q = compileList(input, def.listFields);
      const em = readerOf(orm);
      const where = { $and: [{ deletedAt: null }, q.where] } as FilterQuery<E>;
      const [data, total] = await em.findAndCount(def.entity, where, {
        orderBy: q.orderBy as never,
        limit: q.limit,
        offset: q.offset,
      });
      return { total, page: q.page, pageSize: q.pageSize, data };
    },

    /** The live record, or null (GraphQL's single-record queries answer null). */
    async find(caller: Caller, rawId: unknown): Promise<E | null> {
      requirePermission(caller, read);
      return readerOf(orm).findOne(def.entity, live(parseId(rawId)));
    },

    async get(caller: Caller, rawId: unknown): Promise<E> {
      requirePermission(caller, read);
      const id = parseId(rawId);
      const record = await readerOf(orm).findOne(def.entity, live(id));
      if (!record) throw AppError.notFound(`no ${def.label} with id ${id}`);
      return record;
    },

    async create(caller: Caller, body: unknown): Promise<E> {
      requirePermission(caller, write);
      const values = readWriteBody(body, def.writable, 'create');
      return inTransaction(values, (em) => insert(em, caller, values));
    },

    /**
     * PUT: replaces every writable field of a live record; on an id reserved by "apply id" that has
     * no record yet, creates it. Claiming the reservation row serializes concurrent PUTs of one id.
     */
    async replace(caller: Caller, rawId: unknown, body: unknown): Promise<Replaced<E>> {
      requirePermission(caller, write);
      const id = parseId(rawId);
      const values = readWriteBody(body, def.writable, 'replace');
      return inTransaction(values, async (em) => {
        const claimed = await em.execute<{ id: string }[]>(
          'delete from id_reservations where resource = ? and id = ? returning id',
          [def.resource, id],
        );
        if (claimed.length > 0) return { record: await insert(em, caller, values, id), created: true };
        const record = await lockLive(em, id, caller);
        await def.check?.(em, values, caller);
        if (assign(record, values)) {
          record.updatedAt = new Date();
          def.onChange?.(record);
        }
        await em.flush();
        return { record, created: false };
      });
    },

    /** PATCH: changes the fields named by `attrs` (the Attrs header), else those in the body. */
    async patch(caller: Caller, rawId: unknown, body: unknown, attrsHeader?: string): Promise<E> {
      requirePermission(caller, write);
      parseId(rawId);
      const values = readWriteBody(body, def.writable, 'patch', parseAttrs(attrsHeader, def.writable));
      return update(caller, rawId, values);
    },

    update,

    async destroy(caller: Caller, rawId: unknown): Promise<void> {
      requirePermission(caller, write);
      const id = parseId(rawId);
      await inTransaction({}, async (em) => {
        const record = await lockLive(em, id, caller);
        const now = new Date();
        record.deletedAt = now;
        record.updatedAt = now;
        await em.flush();
        await def.cascade?.(em, id, now);
      });
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
        return Number(row.id);
      });
    },
  };
}

export type CrudService<E extends LiveRecord> = ReturnType<typeof crudService<E>>;
