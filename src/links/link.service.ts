import { LockMode, type FilterQuery } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { Application } from '../applications/application.entity.js';
import { requirePermission, type Caller } from '../auth/caller.js';
import { readerOf, transaction } from '../db/transaction.js';
import { compileList, type ListFields, type ListInput, type Page } from '../list/list.js';
import { findPagesByParent } from '../list/pages.js';
import { Role } from '../roles/role.entity.js';
import { parseId } from '../shared/crud.js';
import { AppError } from '../shared/errors.js';
import { readWriteBody } from '../shared/input.js';
import { NAMED_LIST_FIELDS } from '../shared/named-record.js';
import { User } from '../users/user.entity.js';
import { UserApplication, UserRole } from './link.entities.js';

export const MAX_LINK_IDS = 1000;

/** The linked record's fields, reached through the link, plus (for applications) the link's right. */
function throughLink(relation: string): Record<string, ListFields[string]> {
  return Object.fromEntries(
    Object.entries(NAMED_LIST_FIELDS).map(([name, field]) => [name, { ...field, path: [relation, ...field.path] }]),
  );
}
export const USER_APPLICATION_LIST_FIELDS: ListFields = {
  ...throughLink('application'),
  right: { path: ['right'], kind: 'int32' },
  // GraphQL's ApplicationLink names the application's id this way.
  applicationID: { path: ['application', 'id'], kind: 'id' },
};
export const USER_ROLE_LIST_FIELDS: ListFields = throughLink('role');
/**
 * GraphQL's nested `User.applications` lists the links themselves (`ApplicationLink`), so there
 * `createdAt` and `updatedAt` are the link's own, as the type shows them.
 */
export const APPLICATION_LINK_LIST_FIELDS: ListFields = {
  ...USER_APPLICATION_LIST_FIELDS,
  createdAt: { path: ['createdAt'], kind: 'date' },
  updatedAt: { path: ['updatedAt'], kind: 'date' },
};

/**
 * A link body: a JSON array of at most 1000 positive integer ids; duplicates count once. The ids
 * come back sorted, so that every request locks rows in the same order (no deadlock between two
 * requests that name the same ids in opposite orders).
 */
export function parseIdList(body: unknown, field: string): number[] {
  if (!Array.isArray(body)) throw AppError.invalid([{ field, message: 'must be a JSON array of ids' }]);
  if (body.length > MAX_LINK_IDS) throw AppError.invalid([{ field, message: `must have at most ${MAX_LINK_IDS} ids` }]);
  const bad = body.findIndex((id) => typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1);
  if (bad !== -1) throw AppError.invalid([{ field: `${field}[${bad}]`, message: 'must be a positive integer' }]);
  return [...new Set(body as number[])].sort((a, b) => a - b);
}

async function requireLiveUser(em: EntityManager, userId: number, lock = false): Promise<void> {
  const user = await em.findOne(
    User,
    { id: userId, deletedAt: null },
    { fields: ['id'], ...(lock ? { lockMode: LockMode.PESSIMISTIC_READ } : {}) },
  );
  if (!user) throw AppError.notFound(`no user with id ${userId}`);
}

interface LinkKind {
  label: 'application' | 'role';
  target: typeof Application | typeof Role;
  table: string;
  column: string;
  /** Columns a new (or revived) link starts with. */
  fresh: string;
}

const APPLICATION_LINK: LinkKind = {
  label: 'application', target: Application, table: 'user_applications', column: 'application_id', fresh: '"right" = 0,',
};
const ROLE_LINK: LinkKind = { label: 'role', target: Role, table: 'user_roles', column: 'role_id', fresh: '' };

/**
 * Links are idempotent and atomic: all ids must name live records (else 400 listing the unknown
 * ones, and nothing changes); ids already linked are left alone; the count is of links created.
 * An unlinked row is kept, marked deleted, and revived by a later link.
 */
async function link(orm: MikroORM, kind: LinkKind, caller: Caller, rawUserId: unknown, body: unknown): Promise<number> {
  requirePermission(caller, 'user:write');
  const userId = parseId(rawUserId);
  const ids = parseIdList(body, `${kind.label}IDs`);
  return transaction(orm, async (em) => {
    await requireLiveUser(em, userId, true);
    if (ids.length === 0) return 0;
    const found = await em.find(kind.target, { id: { $in: ids }, deletedAt: null }, { fields: ['id'], orderBy: { id: 'asc' }, lockMode: LockMode.PESSIMISTIC_READ });
    const live = new Set(found.map((r) => r.id));
    const unknown = ids.filter((id) => !live.has(id));
    if (unknown.length) {
      throw AppError.invalid([{ field: `${kind.label}IDs`, message: `no live ${kind.label} with id ${unknown.join(', ')}` }]);
    }
    const rows = ids.map(() => '(?, ?)').join(', ');
    const result = await em.execute(
      `insert into ${kind.table} (user_id, ${kind.column}) values ${rows}
       on conflict (user_id, ${kind.column}) do update
         set ${kind.fresh} deleted_at = null, created_at = now(), updated_at = now()
         where ${kind.table}.deleted_at is not null`,
      ids.flatMap((id) => [userId, id]),
      'run',
    );
    return (result as unknown as { affectedRows: number }).affectedRows;
  });
}

async function unlink(orm: MikroORM, kind: LinkKind, caller: Caller, rawUserId: unknown, body: unknown): Promise<number> {
  requirePermission(caller, 'user:write');
  const userId = parseId(rawUserId);
  const ids = parseIdList(body, `${kind.label}IDs`);
  return transaction(orm, async (em) => {
    await requireLiveUser(em, userId, true);
    if (ids.length === 0) return 0;
    const result = await em.execute(
      `update ${kind.table} set deleted_at = now(), updated_at = now()
       where user_id = ? and ${kind.column} in (${ids.map(() => '?').join(', ')}) and deleted_at is null`,
      [userId, ...ids],
      'run',
    );
    return (result as unknown as { affectedRows: number }).affectedRows;
  });
}

async function listLinks<L extends object>(
  orm: MikroORM, entity: new () => L, relation: string, fields: ListFields, caller: Caller, rawUserId: unknown, input: ListInput,
): Promise<Page<L>> {
  requirePermission(caller, 'user:read');
  const userId = parseId(rawUserId);
  const q = compileList(input, fields);
  const em = readerOf(orm);
  await requireLiveUser(em, userId);
  const where = { $and: [{ user: userId, deletedAt: null, [relation]: { deletedAt: null } }, q.where] } as FilterQuery<L>;
  const [data, total] = await em.findAndCount(entity, where, {
    populate: [relation] as never,
    orderBy: q.orderBy as never,
    limit: q.limit,
    offset: q.offset,
  });
  return { total, page: q.page, pageSize: q.pageSize, data };
}

/** The same list for many users in one statement (GraphQL's nested User.applications / User.roles). */
async function listLinksForUsers<L extends { user: number }>(
  orm: MikroORM, entity: new () => L, relation: string, fields: ListFields, caller: Caller, userIds: readonly number[], input: ListInput,
): Promise<Map<number, Page<L>>> {
  requirePermission(caller, 'user:read');
  const q = compileList(input, fields);
  const where = { $and: [{ deletedAt: null, [relation]: { deletedAt: null } }, q.where] } as FilterQuery<L>;
  return findPagesByParent(readerOf(orm), entity, { parent: 'user', parentIds: userIds, where, list: q, populate: [relation] });
}

/** The alias MikroORM gives the root table of a UserApplication query (checked by a test of the SQL). */
const LINK_ALIAS = 'u0';

export function linkService(orm: MikroORM) {
  async function findApplicationLink(em: EntityManager, userId: number, applicationId: number, lock: boolean) {
    await requireLiveUser(em, userId);
    const found = await em.findOne(
      UserApplication,
      { user: userId, application: { id: applicationId, deletedAt: null }, deletedAt: null },
      // Only the link row is locked (FOR UPDATE OF its alias): locking the joined application too
      // would wait on, and deadlock with, a link request holding it FOR SHARE.
      { populate: ['application'], ...(lock ? { lockMode: LockMode.PESSIMISTIC_WRITE, lockTableAliases: [LINK_ALIAS] } : {}) },
    );
    if (!found) throw AppError.notFound(`user ${userId} is not linked to application ${applicationId}`);
    return found;
  }

  return {
    listApplications: (caller: Caller, userId: unknown, input: ListInput) =>
      listLinks(orm, UserApplication, 'application', USER_APPLICATION_LIST_FIELDS, caller, userId, input),
    listApplicationsForUsers: (caller: Caller, userIds: readonly number[], input: ListInput) =>
      listLinksForUsers(orm, UserApplication, 'application', APPLICATION_LINK_LIST_FIELDS, caller, userIds, input),
    linkApplications: (caller: Caller, userId: unknown, body: unknown) => link(orm, APPLICATION_LINK, caller, userId, body),
    unlinkApplications: (caller: Caller, userId: unknown, body: unknown) => unlink(orm, APPLICATION_LINK, caller, userId, body),

    listRoles: (caller: Caller, userId: unknown, input: ListInput) =>
      listLinks(orm, UserRole, 'role', USER_ROLE_LIST_FIELDS, caller, userId, input),
    listRolesForUsers: (caller: Caller, userIds: readonly number[], input: ListInput) =>
      listLinksForUsers(orm, UserRole, 'role', USER_ROLE_LIST_FIELDS, caller, userIds, input),
    linkRoles: (caller: Caller, userId: unknown, body: unknown) => link(orm, ROLE_LINK, caller, userId, body),
    unlinkRoles: (caller: Caller, userId: unknown, body: unknown) => unlink(orm, ROLE_LINK, caller, userId, body),

    async getApplicationLink(caller: Caller, rawUserId: unknown, rawApplicationId: unknown): Promise<UserApplication> {
      requirePermission(caller, 'user:read');
      const userId = parseId(rawUserId);
      const applicationId = parseId(rawApplicationId, 'applicationID');
      return findApplicationLink(readerOf(orm), userId, applicationId, false);
    },

    /** PUT of a link's right; never creates a link (404 when there is none). */
    async updateApplicationLink(caller: Caller, rawUserId: unknown, rawApplicationId: unknown, body: unknown): Promise<UserApplication> {
      requirePermission(caller, 'user:write');
      const userId = parseId(rawUserId);
      const applicationId = parseId(rawApplicationId, 'applicationID');
      const { right } = readWriteBody(body, { right: { kind: 'int32', required: true } }, 'create') as { right: number };
      return transaction(orm, async (em) => {
        const found = await findApplicationLink(em, userId, applicationId, true);
        if (found.right !== right) {
          found.right = right;
          found.updatedAt = new Date();
        }
        await em.flush();
        return found;
      });
    },
  };
}

export type LinkService = ReturnType<typeof linkService>;
