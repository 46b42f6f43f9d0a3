import { LockMode } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { Application } from '../applications/application.entity.js';
import { requirePermission, type Caller } from '../auth/caller.js';
import { readerFor, whereSql, type Rows } from '../db/reads.js';
import { transaction } from '../db/transaction.js';
import { appendAudit, changesOf } from '../audit/audit.service.js';
import { andAll, compileList, orderSql, type ListFields, type ListInput, type Page } from '../list/list.js';
import { compileKeyset, type ConnectionInput } from '../list/keyset.js';
import { connectionsByParent, pagesByParent, type NestedSource } from '../list/pages.js';
import { Role } from '../roles/role.entity.js';
import { parseId } from '../shared/crud.js';
import { AppError } from '../shared/errors.js';
import { readWriteBody, type WritableFields } from '../shared/input.js';
import { namedFromRow, NAMED_COLUMNS, NAMED_LIST_FIELDS, type NamedWire } from '../shared/named-record.js';
import { User } from '../users/user.entity.js';
import { UserApplication } from './link.entities.js';
import { APPLICATION_LINK_COLUMNS, applicationLinkFromEntity, applicationLinkFromRow, type ApplicationLinkRecord } from './link.presenter.js';

export const MAX_LINK_IDS = 1000;

/** The linked record's fields (alias `t`), plus (for applications) the link's right (alias `l`). */
export const USER_APPLICATION_LIST_FIELDS: ListFields = {
  ...NAMED_LIST_FIELDS,
  right: { column: 'l."right"', kind: 'safeInt' },
  // GraphQL's ApplicationLink names the application's id this way.
  applicationID: { column: 't.id', kind: 'id' },
};
export const USER_ROLE_LIST_FIELDS: ListFields = NAMED_LIST_FIELDS;
/** The body of PUT /user/{id}/application/{applicationID}. */
export const LINK_RIGHT_BODY: WritableFields = { right: { kind: 'safeInt', required: true } };
/**
 * GraphQL's nested `User.applications` lists the links themselves (`ApplicationLink`), so there
 * `createdAt` and `updatedAt` are the link's own, as the type shows them.
 */
export const APPLICATION_LINK_LIST_FIELDS: ListFields = {
  ...USER_APPLICATION_LIST_FIELDS,
  createdAt: { column: 'l.created_at', kind: 'date' },
  updatedAt: { column: 'l.updated_at', kind: 'date' },
};

const LIVE_LINK = { sql: 'l.deleted_at is null and t.deleted_at is null', params: [] };
const APPLICATION_LINKS: NestedSource<ApplicationLinkRecord> = {
  from: 'user_applications l join applications t on t.id = l.application_id',
  columns: APPLICATION_LINK_COLUMNS,
  parentColumn: 'l.user_id',
  live: LIVE_LINK,
  fromRow: applicationLinkFromRow,
};
const ROLE_LINKS: NestedSource<NamedWire> = {
  from: 'user_roles l join roles t on t.id = l.role_id',
  columns: NAMED_COLUMNS,
  parentColumn: 'l.user_id',
  live: LIVE_LINK,
  fromRow: namedFromRow,
};
const LIVE_USER = 'select 1 as live from users where id = ? and deleted_at is null';
const LIVE_APPLICATION = 'select 1 as live from applications where id = ? and deleted_at is null';
const LINK_RIGHT = 'select "right" from user_applications where user_id = ? and application_id = ? and deleted_at is null';
const APPLICATION_LINK_BY_IDS = `select ${APPLICATION_LINK_COLUMNS} from ${APPLICATION_LINKS.from}
   where l.user_id = ? and l.application_id = ? and ${LIVE_LINK.sql}`;

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
    const created = await em.execute<Record<string, string>[]>(
      `insert into ${kind.table} (user_id, ${kind.column}) values ${rows}
       on conflict (user_id, ${kind.column}) do update
         set ${kind.fresh} deleted_at = null, created_at = now(), updated_at = now()
         where ${kind.table}.deleted_at is not null
       returning ${kind.column} as linked`,
      ids.flatMap((id) => [userId, id]),
    );
    await appendAudit(em, caller, created.map((row) => linkEvent(kind, 'link', userId, Number(row.linked))));
    return created.length;
  });
}

/** One link made or removed: an event of the user's `application_link` or `role_link`. */
const linkEvent = (kind: LinkKind, action: 'link' | 'unlink', userId: number, targetId: number) => ({
  action,
  resource: `${kind.label}_link`,
  recordID: userId,
  changes: changesOf(action === 'link' ? {} : { [`${kind.label}ID`]: targetId }, action === 'link' ? { [`${kind.label}ID`]: targetId } : {}),
});

async function unlink(orm: MikroORM, kind: LinkKind, caller: Caller, rawUserId: unknown, body: unknown): Promise<number> {
  requirePermission(caller, 'user:write');
  const userId = parseId(rawUserId);
  const ids = parseIdList(body, `${kind.label}IDs`);
  return transaction(orm, async (em) => {
    await requireLiveUser(em, userId, true);
    if (ids.length === 0) return 0;
    const removed = await em.execute<Record<string, string>[]>(
      `update ${kind.table} set deleted_at = now(), updated_at = now()
       where user_id = ? and ${kind.column} in (${ids.map(() => '?').join(', ')}) and deleted_at is null
       returning ${kind.column} as unlinked`,
      [userId, ...ids],
    );
    await appendAudit(em, caller, removed.map((row) => linkEvent(kind, 'unlink', userId, Number(row.unlinked))));
    return removed.length;
  });
}

/** One user's links (REST /user/{id}/application/ and /role/): the page, its total and the user's check at once. */
async function listLinks<R>(
  rows: Rows, source: NestedSource<R>, fields: ListFields, caller: Caller, rawUserId: unknown, input: ListInput,
): Promise<Page<R>> {
  requirePermission(caller, 'user:read');
  const userId = parseId(rawUserId);
  const q = compileList(input, fields);
  const where = andAll({ sql: `${source.parentColumn} = ?`, params: [userId] }, source.live, q.where)!;
  const [user, found, counted] = await Promise.all([
    rows(LIVE_USER, [userId]),
    rows(`select ${source.columns} from ${source.from}${whereSql(where)} order by ${orderSql(q.order)} limit ? offset ?`, [
      ...where.params,
      q.limit,
      q.offset,
    ]),
    rows<{ total: string }>(`select count(*) as total from ${source.from}${whereSql(where)}`, where.params),
  ]);
  if (user.length === 0) throw AppError.notFound(`no user with id ${userId}`);
  const fromRow = source.fromRow as (row: unknown) => R;
  return { total: Number(counted[0].total), page: q.page, pageSize: q.pageSize, data: found.map(fromRow) };
}

/** The alias MikroORM gives the root table of a UserApplication query (checked by a test of the SQL). */
const LINK_ALIAS = 'u0';

export function linkService(orm: MikroORM) {
  const rows = readerFor(orm);

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
      listLinks(rows, APPLICATION_LINKS, USER_APPLICATION_LIST_FIELDS, caller, userId, input),
    /** The same list for many users at once (GraphQL's nested User.applications); totals only when `count`. */
    listApplicationsForUsers(caller: Caller, userIds: readonly number[], input: ListInput, count = true) {
      requirePermission(caller, 'user:read');
      return pagesByParent(rows, APPLICATION_LINKS, userIds, compileList(input, APPLICATION_LINK_LIST_FIELDS), count);
    },
    /** Keyset pages of many users' application links (GraphQL's nested User.applicationsConnection). */
    applicationConnectionsForUsers(caller: Caller, userIds: readonly number[], input: ConnectionInput, count = true) {
      requirePermission(caller, 'user:read');
      return connectionsByParent(rows, APPLICATION_LINKS, userIds, compileKeyset(input, APPLICATION_LINK_LIST_FIELDS), count);
    },
    linkApplications: (caller: Caller, userId: unknown, body: unknown) => link(orm, APPLICATION_LINK, caller, userId, body),
    unlinkApplications: (caller: Caller, userId: unknown, body: unknown) => unlink(orm, APPLICATION_LINK, caller, userId, body),

    listRoles: (caller: Caller, userId: unknown, input: ListInput) => listLinks(rows, ROLE_LINKS, USER_ROLE_LIST_FIELDS, caller, userId, input),
    /** The same list for many users at once (GraphQL's nested User.roles); totals only when `count`. */
    listRolesForUsers(caller: Caller, userIds: readonly number[], input: ListInput, count = true) {
      requirePermission(caller, 'user:read');
      return pagesByParent(rows, ROLE_LINKS, userIds, compileList(input, USER_ROLE_LIST_FIELDS), count);
    },
    /** Keyset pages of many users' roles (GraphQL's nested User.rolesConnection). */
    roleConnectionsForUsers(caller: Caller, userIds: readonly number[], input: ConnectionInput, count = true) {
      requirePermission(caller, 'user:read');
      return connectionsByParent(rows, ROLE_LINKS, userIds, compileKeyset(input, USER_ROLE_LIST_FIELDS), count);
    },
    linkRoles: (caller: Caller, userId: unknown, body: unknown) => link(orm, ROLE_LINK, caller, userId, body),
    unlinkRoles: (caller: Caller, userId: unknown, body: unknown) => unlink(orm, ROLE_LINK, caller, userId, body),

    /**
     * The original family's authorization call (GET /authorize/{applicationID}/): the user owning
     * the caller's token and the right of its link to the application, 0 when not linked. Any
     * valid token may ask about itself; an application that does not exist (or is deleted) is a 404.
     */
    async authorize(caller: Caller, rawApplicationId: unknown): Promise<{ userID: number; userRight: number }> {
      const applicationId = parseId(rawApplicationId, 'applicationID');
      const [application, [link]] = await Promise.all([
        rows(LIVE_APPLICATION, [applicationId]),
        rows<{ right: string }>(LINK_RIGHT, [caller.userId, applicationId]),
      ]);
      if (application.length === 0) throw AppError.notFound(`no application with id ${applicationId}`);
      return { userID: caller.userId, userRight: link ? Number(link.right) : 0 };
    },

    async getApplicationLink(caller: Caller, rawUserId: unknown, rawApplicationId: unknown): Promise<ApplicationLinkRecord> {
      requirePermission(caller, 'user:read');
      const userId = parseId(rawUserId);
      const applicationId = parseId(rawApplicationId, 'applicationID');
      const [user, [link]] = await Promise.all([rows(LIVE_USER, [userId]), rows(APPLICATION_LINK_BY_IDS, [userId, applicationId])]);
      if (user.length === 0) throw AppError.notFound(`no user with id ${userId}`);
      if (!link) throw AppError.notFound(`user ${userId} is not linked to application ${applicationId}`);
      return applicationLinkFromRow(link as never);
    },

    /** PUT of a link's right; never creates a link (404 when there is none). */
    async updateApplicationLink(caller: Caller, rawUserId: unknown, rawApplicationId: unknown, body: unknown): Promise<ApplicationLinkRecord> {
      requirePermission(caller, 'user:write');
      const userId = parseId(rawUserId);
      const applicationId = parseId(rawApplicationId, 'applicationID');
      const { right } = readWriteBody(body, LINK_RIGHT_BODY, 'create') as { right: number };
      const updated = await transaction(orm, async (em) => {
        const found = await findApplicationLink(em, userId, applicationId, true);
        const before = found.right;
        if (found.right !== right) {
          found.right = right;
          found.updatedAt = new Date();
        }
        await em.flush();
        if (before !== right) {
          await appendAudit(em, caller, [
            { action: 'right', resource: 'application_link', recordID: userId, changes: { applicationID: { before: applicationId, after: applicationId }, ...changesOf({ right: before }, { right }) } },
          ]);
        }
        return found;
      });
      return applicationLinkFromEntity(updated);
    },
  };
}

export type LinkService = ReturnType<typeof linkService>;
