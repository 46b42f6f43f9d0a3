import { requirePermission, type Caller } from '../auth/caller.js';
import type { Sql, Transaction } from '../db/sql.js';
import { AppError } from '../errors.js';
import type { CompiledKeyset, Connection } from '../list/keyset.js';
import { andAll, orderSql, type CompiledList, type Page } from '../list/list.js';
import { connectionsByParent, pagesByParent } from '../list/pages.js';
import type { AuditAction } from './audit.js';
import { defaultOf } from './input.js';
import { LIVE_LINK, type Relation, type RelationSelection } from './relation.js';
import { columnName, columnSql } from './resource.js';
import { auditStatement } from './writes.js';

/** An item of a relation's lists: a link (with its child below the child's name), or the linked record itself. */
export type RelationItem = Record<string, unknown>;

/** A parent's link to a child: the parent not live (REST's 404 naming it), or the link, null when there is none. */
export type LinkLookup = { parent: false } | { parent: true; link: RelationItem | null };

/** A literal SQL value of a link field's default (what a new or revived link starts with). */
const literal = (value: unknown) => (typeof value === 'number' ? String(value) : value === null ? 'null' : `'${String(value).replace(/'/g, "''")}'`);

/** What the reads and the writes of a relation share: its statements, its 404s, the parent's lock and the link events. */
function relationCore(relation: Relation, options: { changeAction?: AuditAction }) {
  const { parent, child, parentColumn, childColumn, source } = relation;
  const permissions = { list: parent.permissions.read, change: parent.permissions.write } as const;
  const LIVE_PARENT = `select 1 as live from ${parent.table} where id = ? and deleted_at is null`;
  const LINK_BY_IDS = `select ${source.columns} from ${source.from} where l.${parentColumn} = ? and l.${childColumn} = ? and ${LIVE_LINK.sql}`;
  const fresh = relation.linkEntries.map(([, field]) => `${columnName(field.column)} = ${literal(defaultOf(field))},`).join(' ');
  const parentNotFound = (id: number) => AppError.notFound(`no ${parent.label} with id ${id}`);
  const notLinked = (parentId: number, childId: number) => AppError.notFound(`${parent.label} ${parentId} is not linked to ${child.label} ${childId}`);

  /**
   * The first lock of every link write (link, unlink, a link's fields): the parent's row, FOR NO KEY
   * UPDATE, which one writer of the parent's links holds at a time, until its transaction ends (a
   * concurrent delete of the parent waits too); a missing or deleted parent is a 404.
   *
   * Without it, a link and an unlink of the same user locked the same link rows in different
   * orders (the link in id order; the unlink in the order its scan met them, and a revived link's
   * new row version may leave its page, whose index entry then waits for the other transaction)
   * and deadlocked: at 16 calls at a time, a third of them waited a `deadlock_timeout` and some
   * ended as 409s. FOR NO KEY UPDATE does not conflict with the FOR KEY SHARE that inserting a
   * link or a token takes on the user row, only with writers of the row itself.
   */
  async function lockLiveParent(tx: Transaction, parentId: number): Promise<void> {
    const [row] = await tx.rows(`select id from ${parent.table} where id = ? and deleted_at is null for no key update`, [parentId]);
    if (!row) throw parentNotFound(parentId);
  }

  async function audit(tx: Transaction, caller: Caller, action: 'link' | 'unlink', parentId: number, childIds: readonly number[]): Promise<void> {
    if (childIds.length === 0) return;
    const statement = auditStatement(
      caller,
      childIds.map((childId) => relation.linkEvent(action, parentId, childId)),
    );
    await tx.rows(statement.text, statement.params);
  }

  return { relation, options, permissions, LIVE_PARENT, LINK_BY_IDS, fresh, parentNotFound, notLinked, lockLiveParent, audit };
}

type Core = ReturnType<typeof relationCore>;

/** The reads: a parent's list, many parents' pages and connections, one link. */
function relationReads({ relation, permissions, LIVE_PARENT, LINK_BY_IDS, parentNotFound, notLinked }: Core) {
  const { source } = relation;
  return {
    /** One parent's items (REST's /user/{id}/application/): the page, its total and the parent's check at once. */
    async list(caller: Caller, sql: Sql, parentId: number, q: CompiledList): Promise<Page<RelationItem>> {
      requirePermission(caller, permissions.list);
      const where = andAll({ sql: `${source.parentColumn} = ?`, params: [parentId] }, source.live, q.where)!;
      const [found, rows, counted] = await Promise.all([
        sql.rows(LIVE_PARENT, [parentId]),
        sql.rows<Record<string, unknown>>(`select ${source.columns} from ${source.from} where ${where.sql} order by ${orderSql(q.order)} limit ? offset ?`, [
          ...where.params,
          q.limit,
          q.offset,
        ]),
        sql.rows<{ total: number }>(`select count(*) as total from ${source.from} where ${where.sql}`, where.params),
      ]);
      if (found.length === 0) throw parentNotFound(parentId);
      return { total: counted[0].total, page: q.page, pageSize: q.pageSize, data: rows.map(source.fromRow) };
    },

    /** The same list for many parents at once (GraphQL's nested `User.applications`); totals only when `count`. */
    pages(
      caller: Caller,
      sql: Sql,
      parentIds: readonly number[],
      list: CompiledList,
      count = true,
      selection?: RelationSelection,
    ): Promise<Map<number, Page<RelationItem>>> {
      requirePermission(caller, permissions.list);
      return pagesByParent(sql, source, parentIds, list, count, relation.columnsOf(selection));
    },

    /** Keyset pages of many parents' items (GraphQL's nested `User.applicationsConnection`). */
    connections(
      caller: Caller,
      sql: Sql,
      parentIds: readonly number[],
      keyset: CompiledKeyset,
      count = true,
      selection?: RelationSelection,
    ): Promise<Map<number, Connection<RelationItem>>> {
      requirePermission(caller, permissions.list);
      return connectionsByParent(sql, source, parentIds, keyset, count, relation.columnsOf(selection));
    },

    /** Whether the parent is live, and its link to the child (both read at once). */
    async find(caller: Caller, sql: Sql, parentId: number, childId: number): Promise<LinkLookup> {
      requirePermission(caller, permissions.list);
      const [found, [row]] = await Promise.all([sql.rows(LIVE_PARENT, [parentId]), sql.rows(LINK_BY_IDS, [parentId, childId])]);
      return found.length === 0 ? { parent: false } : { parent: true, link: row ? source.fromRow(row) : null };
    },

    /** The 404 of a lookup that found no link: naming the parent when it is not live, else the missing link. */
    notFound: (lookup: LinkLookup, parentId: number, childId: number): AppError => (lookup.parent ? notLinked(parentId, childId) : parentNotFound(parentId)),
  };
}

/** The writes: link, unlink, a link's fields. */
function relationWrites({ relation, options, permissions, LINK_BY_IDS, fresh, notLinked, lockLiveParent, audit }: Core) {
  const { child, table, parentColumn, childColumn, source } = relation;
  return {
    /**
     * Links are idempotent and atomic: all ids must name live children (else 400 listing the
     * unknown ones, and nothing changes); ids already linked are left alone; the count is of links
     * made. An unlinked row is kept, marked deleted, and revived by a later link (its fields back at
     * their defaults).
     */
    link(caller: Caller, sql: Sql, parentId: number, ids: readonly number[]): Promise<number> {
      requirePermission(caller, permissions.change);
      return sql.transaction(async (tx) => {
        await lockLiveParent(tx, parentId);
        if (ids.length === 0) return 0;
        const found = await tx.rows<{ id: number }>(`select id from ${child.table} where id = any(?::bigint[]) and deleted_at is null order by id for share`, [
          `{${ids.join(',')}}`,
        ]);
        const live = new Set(found.map((r) => r.id));
        const unknown = ids.filter((id) => !live.has(id));
        if (unknown.length) throw AppError.invalid([{ field: `${relation.childIdField}s`, message: `no live ${child.label} with id ${unknown.join(', ')}` }]);
        const created = await tx.rows<{ linked: number }>(
          `insert into ${table} (${parentColumn}, ${childColumn}) select ?, unnest(?::bigint[])
       on conflict (${parentColumn}, ${childColumn}) do update
         set ${fresh} deleted_at = null, created_at = now(), updated_at = now()
         where ${table}.deleted_at is not null
       returning ${childColumn} as linked`,
          [parentId, `{${ids.join(',')}}`],
        );
        await audit(
          tx,
          caller,
          'link',
          parentId,
          created.map((row) => row.linked),
        );
        return created.length;
      });
    },

    /** Removes the parent's links to these children; an id not linked is left alone; the count is of links removed. */
    unlink(caller: Caller, sql: Sql, parentId: number, ids: readonly number[]): Promise<number> {
      requirePermission(caller, permissions.change);
      return sql.transaction(async (tx) => {
        await lockLiveParent(tx, parentId);
        if (ids.length === 0) return 0;
        const removed = await tx.rows<{ unlinked: number }>(
          `update ${table} set deleted_at = now(), updated_at = now()
       where ${parentColumn} = ? and ${childColumn} = any(?::bigint[]) and deleted_at is null
       returning ${childColumn} as unlinked`,
          [parentId, `{${ids.join(',')}}`],
        );
        await audit(
          tx,
          caller,
          'unlink',
          parentId,
          removed.map((row) => row.unlinked),
        );
        return removed.length;
      });
    },

    /**
     * Changes a link's fields (PUT of a link's `right`); never creates a link (404 when there is
     * none). An audit event of the parent, with the child's id and each changed field, when
     * anything changed.
     */
    async update(caller: Caller, sql: Sql, parentId: number, childId: number, values: Record<string, unknown>): Promise<RelationItem> {
      requirePermission(caller, permissions.change);
      const fields = relation.linkEntries.filter(([name]) => Object.hasOwn(values, name));
      return sql.transaction(async (tx) => {
        await lockLiveParent(tx, parentId);
        // Only the link row besides: locking the child too would wait on the link requests of
        // other parents holding it FOR SHARE.
        const [current] = await tx.rows<Record<string, unknown>>(
          `select ${fields.map(([name, field]) => `${columnSql('l', field.column)} as "${name}"`).join(', ') || '1 as found'} from ${source.from}
            where l.${parentColumn} = ? and l.${childColumn} = ? and ${LIVE_LINK.sql} for update of l`,
          [parentId, childId],
        );
        if (!current) throw notLinked(parentId, childId);
        const changed = fields.filter(([name]) => current[name] !== values[name]);
        if (changed.length) {
          await tx.rows(
            `update ${table} set ${changed.map(([, field]) => `${columnName(field.column)} = ?`).join(', ')}, updated_at = now() where ${parentColumn} = ? and ${childColumn} = ?`,
            [...changed.map(([name]) => values[name]), parentId, childId],
          );
          const changes = {
            [relation.childIdField]: { before: childId, after: childId },
            ...Object.fromEntries(changed.map(([name]) => [name, { before: current[name], after: values[name] }])),
          };
          const statement = auditStatement(caller, [
            { action: options.changeAction ?? 'patch', resource: relation.auditResource, recordID: parentId, changes },
          ]);
          await tx.rows(statement.text, statement.params);
        }
        const [row] = await tx.rows(LINK_BY_IDS, [parentId, childId]);
        return source.fromRow(row);
      });
    },
  };
}

/**
 * The operations over one relation (src/resource/relation.ts), on behalf of a caller holding the
 * parent's permission (a user's links need `user:read` to read and `user:write` to change, as the
 * user's own fields do): a parent's list, many parents' pages at once (GraphQL's nested fields),
 * link and unlink (idempotent and atomic), one link, and a change of a link's fields.
 */
export function relationService(relation: Relation, options: { changeAction?: AuditAction } = {}) {
  const core = relationCore(relation, options);
  return { relation, permissions: core.permissions, ...relationReads(core), ...relationWrites(core) };
}

export type RelationService = ReturnType<typeof relationService>;
