import { requirePermission, type Caller } from '../auth/caller.js';
import type { Sql, Transaction } from '../db/sql.js';
import { AppError } from '../errors.js';
import type { CompiledKeyset } from '../list/keyset.js';
import { andAll, orderSql, type CompiledList, type ListFields, type Page } from '../list/list.js';
import { connectionsByParent, pagesByParent, type NestedSource } from '../list/pages.js';
import { applications } from '../applications/application.resource.js';
import { roles } from '../roles/role.resource.js';
import type { NamedRecord, NamedResource } from '../resource/named.js';
import { columnSql } from '../resource/resource.js';
import { auditStatement } from '../resource/writes.js';

/** A user's link to an application, with the application (GraphQL's ApplicationLink). */
export interface ApplicationLinkRecord {
  applicationID: number;
  userID: number;
  right: number;
  createdAt: string;
  updatedAt: string;
  application: NamedRecord;
}

export const MAX_LINK_IDS = 1000;

/**
 * The list fields of a user's links: the linked record's own (alias `t`), plus for applications
 * the link's right (alias `l`) and `applicationID`, GraphQL's name of the application's id.
 */
export const USER_APPLICATION_LIST_FIELDS: ListFields = {
  ...applications.listFields,
  right: { column: columnSql('l', 'right'), kind: 'safeInt' },
  applicationID: { column: 't.id', kind: 'id' },
};
export const USER_ROLE_LIST_FIELDS: ListFields = roles.listFields;
/**
 * GraphQL's nested `User.applications` lists the links themselves (`ApplicationLink`), so there
 * `createdAt` and `updatedAt` are the link's own, as the type shows them.
 */
export const APPLICATION_LINK_LIST_FIELDS: ListFields = {
  ...USER_APPLICATION_LIST_FIELDS,
  createdAt: { column: 'l.created_at', kind: 'date' },
  updatedAt: { column: 'l.updated_at', kind: 'date' },
};

/** What one application link read selects: the application's columns (its record), and the link's. */
const APPLICATION_LINK_COLUMNS = `${applications.columns}, l."right" as "right", l.user_id as "userID", l.created_at as "linkCreatedAt", l.updated_at as "linkUpdatedAt"`;

/** What GraphQL selects of application links: the link's fields, and the application's below `application`. */
export interface ApplicationLinkFields {
  link: ReadonlySet<string>;
  application: ReadonlySet<string>;
}

/** The select list of application links reading only the selected fields (the ids always). */
function applicationLinkColumns(fields: ApplicationLinkFields | undefined): string {
  if (!fields) return APPLICATION_LINK_COLUMNS;
  const { link } = fields;
  return [
    applications.columnsOf(fields.application),
    'l.user_id as "userID"',
    ...(link.has('right') ? ['l."right" as "right"'] : []),
    ...(link.has('createdAt') ? ['l.created_at as "linkCreatedAt"'] : []),
    ...(link.has('updatedAt') ? ['l.updated_at as "linkUpdatedAt"'] : []),
  ].join(', ');
}

interface ApplicationLinkRow extends NamedRecord {
  right: number;
  userID: number;
  linkCreatedAt: string;
  linkUpdatedAt: string;
}

const applicationLinkOf = (row: Record<string, unknown>): ApplicationLinkRecord => {
  const { right, userID, linkCreatedAt, linkUpdatedAt, ...application } = row as unknown as ApplicationLinkRow;
  return { applicationID: application.id, userID, right, createdAt: linkCreatedAt, updatedAt: linkUpdatedAt, application };
};

const LIVE_LINK = { sql: 'l.deleted_at is null and t.deleted_at is null', params: [] };
const APPLICATION_LINKS: NestedSource<ApplicationLinkRecord> = {
  from: 'user_applications l join applications t on t.id = l.application_id',
  columns: APPLICATION_LINK_COLUMNS,
  parentColumn: 'l.user_id',
  live: LIVE_LINK,
  fromRow: applicationLinkOf,
};
const ROLE_LINKS: NestedSource<NamedRecord> = {
  from: 'user_roles l join roles t on t.id = l.role_id',
  columns: roles.columns,
  parentColumn: 'l.user_id',
  live: LIVE_LINK,
  fromRow: (row) => row as unknown as NamedRecord,
};
const LIVE_USER = 'select 1 as live from users where id = ? and deleted_at is null';
const LIVE_APPLICATION = 'select 1 as live from applications where id = ? and deleted_at is null';
const LINK_RIGHT = 'select "right" from user_applications where user_id = ? and application_id = ? and deleted_at is null';
const APPLICATION_LINK_BY_IDS = `select ${APPLICATION_LINK_COLUMNS} from ${APPLICATION_LINKS.from} where l.user_id = ? and l.application_id = ? and ${LIVE_LINK.sql}`;

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

/**
 * The first lock of every link write (link, unlink, a link's right): the user's row, FOR NO KEY
 * UPDATE, which one writer of the user's links holds at a time, until its transaction ends (a
 * concurrent delete of the user waits too); a missing or deleted user is a 404.
 *
 * Without it, a link and an unlink of the same user locked the same link rows in different
 * orders (the link in id order; the unlink in the order its scan met them, and a revived link's
 * new row version may leave its page, whose index entry then waits for the other transaction)
 * and deadlocked: at 16 calls at a time, a third of them waited a `deadlock_timeout` and some
 * ended as 409s. FOR NO KEY UPDATE does not conflict with the FOR KEY SHARE that inserting a
 * link or a token takes on the user row, only with writers of the row itself.
 */
async function lockLiveUser(tx: Transaction, userId: number): Promise<void> {
  const [user] = await tx.rows('select id from users where id = ? and deleted_at is null for no key update', [userId]);
  if (!user) throw AppError.notFound(`no user with id ${userId}`);
}

interface LinkKind {
  label: 'application' | 'role';
  target: NamedResource;
  table: string;
  column: string;
  /** Columns a new (or revived) link starts with. */
  fresh: string;
}

const APPLICATION_LINK: LinkKind = { label: 'application', target: applications, table: 'user_applications', column: 'application_id', fresh: '"right" = 0,' };
const ROLE_LINK: LinkKind = { label: 'role', target: roles, table: 'user_roles', column: 'role_id', fresh: '' };

/** One link made or removed: an event of the user's `application_link` or `role_link`. */
const linkEvent = (kind: LinkKind, action: 'link' | 'unlink', userId: number, targetId: number) => ({
  action,
  resource: `${kind.label}_link`,
  recordID: userId,
  changes: { [`${kind.label}ID`]: action === 'link' ? { before: null, after: targetId } : { before: targetId, after: null } },
});

/**
 * Links are idempotent and atomic: all ids must name live records (else 400 listing the unknown
 * ones, and nothing changes); ids already linked are left alone; the count is of links created.
 * An unlinked row is kept, marked deleted, and revived by a later link.
 */
function link(kind: LinkKind, caller: Caller, sql: Sql, userId: number, ids: readonly number[]): Promise<number> {
  requirePermission(caller, 'user:write');
  return sql.transaction(async (tx) => {
    await lockLiveUser(tx, userId);
    if (ids.length === 0) return 0;
    const found = await tx.rows<{ id: number }>(
      `select id from ${kind.target.table} where id = any(?::bigint[]) and deleted_at is null order by id for share`,
      [`{${ids.join(',')}}`],
    );
    const live = new Set(found.map((r) => r.id));
    const unknown = ids.filter((id) => !live.has(id));
    if (unknown.length) throw AppError.invalid([{ field: `${kind.label}IDs`, message: `no live ${kind.label} with id ${unknown.join(', ')}` }]);
    const created = await tx.rows<{ linked: number }>(
      `insert into ${kind.table} (user_id, ${kind.column}) select ?, unnest(?::bigint[])
       on conflict (user_id, ${kind.column}) do update
         set ${kind.fresh} deleted_at = null, created_at = now(), updated_at = now()
         where ${kind.table}.deleted_at is not null
       returning ${kind.column} as linked`,
      [userId, `{${ids.join(',')}}`],
    );
    if (created.length) {
      const audit = auditStatement(
        caller,
        created.map((row) => linkEvent(kind, 'link', userId, row.linked)),
      );
      await tx.rows(audit.text, audit.params);
    }
    return created.length;
  });
}

function unlink(kind: LinkKind, caller: Caller, sql: Sql, userId: number, ids: readonly number[]): Promise<number> {
  requirePermission(caller, 'user:write');
  return sql.transaction(async (tx) => {
    await lockLiveUser(tx, userId);
    if (ids.length === 0) return 0;
    const removed = await tx.rows<{ unlinked: number }>(
      `update ${kind.table} set deleted_at = now(), updated_at = now()
       where user_id = ? and ${kind.column} = any(?::bigint[]) and deleted_at is null
       returning ${kind.column} as unlinked`,
      [userId, `{${ids.join(',')}}`],
    );
    if (removed.length) {
      const audit = auditStatement(
        caller,
        removed.map((row) => linkEvent(kind, 'unlink', userId, row.unlinked)),
      );
      await tx.rows(audit.text, audit.params);
    }
    return removed.length;
  });
}

/** One user's links (REST /user/{id}/application/ and /role/): the page, its total and the user's check at once. */
async function listLinks<R>(sql: Sql, source: NestedSource<R>, caller: Caller, userId: number, q: CompiledList): Promise<Page<R>> {
  requirePermission(caller, 'user:read');
  const where = andAll({ sql: `${source.parentColumn} = ?`, params: [userId] }, source.live, q.where)!;
  const [user, found, counted] = await Promise.all([
    sql.rows(LIVE_USER, [userId]),
    sql.rows<Record<string, unknown>>(`select ${source.columns} from ${source.from} where ${where.sql} order by ${orderSql(q.order)} limit ? offset ?`, [
      ...where.params,
      q.limit,
      q.offset,
    ]),
    sql.rows<{ total: number }>(`select count(*) as total from ${source.from} where ${where.sql}`, where.params),
  ]);
  if (user.length === 0) throw AppError.notFound(`no user with id ${userId}`);
  return { total: counted[0].total, page: q.page, pageSize: q.pageSize, data: found.map(source.fromRow) };
}

/** Whether the user is live, and its link to the application (both read at once). */
async function applicationLink(caller: Caller, sql: Sql, userId: number, applicationId: number) {
  requirePermission(caller, 'user:read');
  const [user, [row]] = await Promise.all([sql.rows(LIVE_USER, [userId]), sql.rows(APPLICATION_LINK_BY_IDS, [userId, applicationId])]);
  return { userFound: user.length > 0, link: row ? applicationLinkOf(row) : null };
}

export function linkService() {
  return {
    listApplications: (caller: Caller, sql: Sql, userId: number, list: CompiledList) => listLinks(sql, APPLICATION_LINKS, caller, userId, list),
    /** The same list for many users at once (GraphQL's nested User.applications); totals only when `count`. */
    listApplicationsForUsers(caller: Caller, sql: Sql, userIds: readonly number[], list: CompiledList, count = true, fields?: ApplicationLinkFields) {
      requirePermission(caller, 'user:read');
      return pagesByParent(sql, APPLICATION_LINKS, userIds, list, count, applicationLinkColumns(fields));
    },
    /** Keyset pages of many users' application links (GraphQL's nested User.applicationsConnection). */
    applicationConnectionsForUsers(caller: Caller, sql: Sql, userIds: readonly number[], keyset: CompiledKeyset, count = true, fields?: ApplicationLinkFields) {
      requirePermission(caller, 'user:read');
      return connectionsByParent(sql, APPLICATION_LINKS, userIds, keyset, count, applicationLinkColumns(fields));
    },
    linkApplications: (caller: Caller, sql: Sql, userId: number, ids: readonly number[]) => link(APPLICATION_LINK, caller, sql, userId, ids),
    unlinkApplications: (caller: Caller, sql: Sql, userId: number, ids: readonly number[]) => unlink(APPLICATION_LINK, caller, sql, userId, ids),

    listRoles: (caller: Caller, sql: Sql, userId: number, list: CompiledList) => listLinks(sql, ROLE_LINKS, caller, userId, list),
    /** The same list for many users at once (GraphQL's nested User.roles); totals only when `count`. */
    listRolesForUsers(caller: Caller, sql: Sql, userIds: readonly number[], list: CompiledList, count = true, fields?: ReadonlySet<string>) {
      requirePermission(caller, 'user:read');
      return pagesByParent(sql, ROLE_LINKS, userIds, list, count, fields && roles.columnsOf(fields));
    },
    /** Keyset pages of many users' roles (GraphQL's nested User.rolesConnection). */
    roleConnectionsForUsers(caller: Caller, sql: Sql, userIds: readonly number[], keyset: CompiledKeyset, count = true, fields?: ReadonlySet<string>) {
      requirePermission(caller, 'user:read');
      return connectionsByParent(sql, ROLE_LINKS, userIds, keyset, count, fields && roles.columnsOf(fields));
    },
    linkRoles: (caller: Caller, sql: Sql, userId: number, ids: readonly number[]) => link(ROLE_LINK, caller, sql, userId, ids),
    unlinkRoles: (caller: Caller, sql: Sql, userId: number, ids: readonly number[]) => unlink(ROLE_LINK, caller, sql, userId, ids),

    /**
     * The original family's authorization call (GET /authorize/{applicationID}/): the user owning
     * the caller's token and the right of its link to the application, 0 when not linked. Any
     * valid token may ask about itself; an application that does not exist (or is deleted) is a 404.
     */
    async authorize(caller: Caller, sql: Sql, applicationId: number): Promise<{ userID: number; userRight: number }> {
      const [application, [linked]] = await Promise.all([
        sql.rows(LIVE_APPLICATION, [applicationId]),
        sql.rows<{ right: number }>(LINK_RIGHT, [caller.userId, applicationId]),
      ]);
      if (application.length === 0) throw AppError.notFound(`no application with id ${applicationId}`);
      return { userID: caller.userId, userRight: linked ? linked.right : 0 };
    },

    /** The link, a 404 naming what is missing: the user, or the link (REST). */
    async getApplicationLink(caller: Caller, sql: Sql, userId: number, applicationId: number): Promise<ApplicationLinkRecord> {
      const { userFound, link } = await applicationLink(caller, sql, userId, applicationId);
      if (!userFound) throw AppError.notFound(`no user with id ${userId}`);
      if (!link) throw AppError.notFound(`user ${userId} is not linked to application ${applicationId}`);
      return link;
    },

    /** The link, or null when the user does not exist or is not linked to the application (GraphQL's userApplication). */
    async findApplicationLink(caller: Caller, sql: Sql, userId: number, applicationId: number): Promise<ApplicationLinkRecord | null> {
      const { userFound, link } = await applicationLink(caller, sql, userId, applicationId);
      return userFound ? link : null;
    },

    /** PUT of a link's right; never creates a link (404 when there is none). */
    async updateApplicationLink(caller: Caller, sql: Sql, userId: number, applicationId: number, right: number): Promise<ApplicationLinkRecord> {
      requirePermission(caller, 'user:write');
      return sql.transaction(async (tx) => {
        await lockLiveUser(tx, userId);
        // Only the link row besides: locking the application too would wait on the link requests
        // of other users holding it FOR SHARE.
        const [current] = await tx.rows<{ right: number }>(
          `select l."right" from user_applications l join applications t on t.id = l.application_id
            where l.user_id = ? and l.application_id = ? and ${LIVE_LINK.sql} for update of l`,
          [userId, applicationId],
        );
        if (!current) throw AppError.notFound(`user ${userId} is not linked to application ${applicationId}`);
        if (current.right !== right) {
          await tx.rows('update user_applications set "right" = ?, updated_at = now() where user_id = ? and application_id = ?', [
            right,
            userId,
            applicationId,
          ]);
          const changes = { applicationID: { before: applicationId, after: applicationId }, right: { before: current.right, after: right } };
          const audit = auditStatement(caller, [{ action: 'right', resource: 'application_link', recordID: userId, changes }]);
          await tx.rows(audit.text, audit.params);
        }
        const [row] = await tx.rows(APPLICATION_LINK_BY_IDS, [userId, applicationId]);
        return applicationLinkOf(row);
      });
    },
  };
}

export type LinkService = ReturnType<typeof linkService>;
