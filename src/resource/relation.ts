import type { ListFields } from '../list/list.js';
import type { NestedSource } from '../list/pages.js';
import { withColumn, type Field, type FieldSpec } from './field.js';
import { columnSql, listFieldOf, type Body, type Cascade, type Resource } from './resource.js';

/**
 * A relation between two resources, defined once (a user's applications, with the link's `right`;
 * a user's roles): a link table holding a parent's id and a child's id, soft-deleted like a record
 * (an unlink, or the delete of either side, marks it deleted; a later link revives it), and the
 * fields a link carries of its own. Everything else is derived: here the list fields, the select
 * lists, the rows' shape, the audit events and what a delete of either side takes with it; in
 * src/resource/relation-service.ts the operations (list per parent, link, unlink, a link's fields);
 * in src/graphql/relation.ts the nested fields, their types and the link mutations; in
 * src/http/relation-routes.ts the REST routes under the parent and their OpenAPI; in
 * src/realtime/relation-events.ts the link events.
 *
 * A relation with link fields is listed as its links (GraphQL's `ApplicationLink`: the link's own
 * fields, and the child below its name); one without, as the linked records themselves.
 */
export interface RelationSpec<P extends Resource = Resource, C extends Resource = Resource> {
  parent: P;
  child: C;
  /** The link table, and its columns holding the parent's and the child's ids. */
  table: string;
  parentColumn: string;
  childColumn: string;
  /** The fields of a link (`right`), written by clients with their own operation; in the order they are shown. */
  linkFields?: Record<string, FieldSpec>;
  /** The audit log's resource of its events (`application_link`); the event's record is the parent. */
  auditResource: string;
}

export interface Relation<P extends Resource = Resource, C extends Resource = Resource> extends RelationSpec<P, C> {
  /** `userID`: the parent's id in a link and in the audit events. */
  parentIdField: string;
  /** `applicationID`: the child's id in a link, in the audit events, in link bodies (`applicationIDs`). */
  childIdField: string;
  /** The link's fields by name, with their columns (empty: the relation lists records, not links). */
  linkEntries: readonly (readonly [string, Field])[];
  /** The body of a change of a link's fields (`{"right": n}`); null without link fields. */
  linkBody: Body | null;
  /**
   * The list language over a parent's children as REST lists them (the child's records, each with
   * the link's fields): the child's fields (alias `t`), the link's fields (alias `l`), and with
   * link fields `applicationID`, the child's id as a link names it.
   */
  listFields: ListFields;
  /**
   * The same over the links themselves (GraphQL's nested `User.applications`): there `createdAt` and
   * `updatedAt` are the link's own, as the link type shows them.
   */
  linkListFields: ListFields;
  /** Where a parent's children come from (src/list/pages.ts), every column read. */
  source: NestedSource<Record<string, unknown>>;
  /** The select list of the given fields only (GraphQL: what a query selects; the ids always). */
  columnsOf(selection: RelationSelection | undefined): string;
  /** What a soft delete of a record of `resource` takes with it: its live links, each its parent's `unlink` event. */
  cascadeOf(resource: Resource): Cascade[];
  /** The audit event of one link made or removed (the parent's record). */
  linkEvent(action: 'link' | 'unlink', parentId: number, childId: number): LinkAuditEvent;
}

/** What GraphQL selects of a relation's items: the fields of a link, and those of the child below its name (or of the child itself, without link fields). */
export interface RelationSelection {
  link: ReadonlySet<string>;
  child: ReadonlySet<string>;
}

export interface LinkAuditEvent {
  action: 'link' | 'unlink';
  resource: string;
  recordID: number;
  changes: Record<string, { before: number | null; after: number | null }>;
}

/** What makes a link live: its own row and its child's. */
export const LIVE_LINK = { sql: 'l.deleted_at is null and t.deleted_at is null', params: [] };

export function defineRelation<P extends Resource, C extends Resource>(spec: RelationSpec<P, C>): Relation<P, C> {
  const { parent, child, table } = spec;
  const parentIdField = `${parent.name}ID`;
  const childIdField = `${child.name}ID`;
  const linkEntries = Object.entries(spec.linkFields ?? {}).map(([name, s]) => [name, withColumn(name, s)] as const);
  const links = linkEntries.length > 0;
  const linkColumn = (field: Field) => columnSql('l', field.column);
  const listFields: ListFields = {
    ...child.listFields,
    ...Object.fromEntries(linkEntries.map(([name, field]) => [name, listFieldOf(field, 'l')])),
    ...(links ? { [childIdField]: { column: 't.id', kind: 'id' as const } } : {}),
  };
  const linkListFields: ListFields = links
    ? { ...listFields, createdAt: { column: 'l.created_at', kind: 'date' }, updatedAt: { column: 'l.updated_at', kind: 'date' } }
    : listFields;

  // A link row: the child's columns (its record), and the link's (`linkCreatedAt`: the child has a createdAt of its own).
  const linkFieldColumns = (names: ReadonlySet<string> | null) =>
    linkEntries.filter(([name]) => !names || names.has(name)).map(([name, field]) => `${linkColumn(field)} as "${name}"`);
  const parentIdColumn = `l.${spec.parentColumn} as "${parentIdField}"`;
  const linkDates = (names: ReadonlySet<string> | null) => [
    ...(!names || names.has('createdAt') ? ['l.created_at as "linkCreatedAt"'] : []),
    ...(!names || names.has('updatedAt') ? ['l.updated_at as "linkUpdatedAt"'] : []),
  ];
  const allColumns = links ? [child.columns, ...linkFieldColumns(null), parentIdColumn, ...linkDates(null)].join(', ') : child.columns;
  // A link's own columns in a row; the rest is the child's record (with a nested page's parent_id and rn).
  const linkKeys = new Set([parentIdField, 'linkCreatedAt', 'linkUpdatedAt', ...linkEntries.map(([name]) => name)]);
  const fromRow = links
    ? (row: Record<string, unknown>) => {
        const record: Record<string, unknown> = {};
        for (const key in row) if (!linkKeys.has(key)) record[key] = row[key];
        const link: Record<string, unknown> = { [childIdField]: record.id, [parentIdField]: row[parentIdField] };
        for (const [name] of linkEntries) link[name] = row[name];
        link.createdAt = row.linkCreatedAt;
        link.updatedAt = row.linkUpdatedAt;
        link[child.name] = record;
        return link;
      }
    : (row: Record<string, unknown>) => row;
  const cascadeEvent = {
    resource: spec.auditResource,
    action: 'unlink',
    userColumn: spec.parentColumn,
    linked: { field: childIdField, column: spec.childColumn },
  } as const;

  return {
    ...spec,
    parentIdField,
    childIdField,
    linkEntries,
    linkBody: links ? { writable: linkEntries } : null,
    listFields,
    linkListFields,
    source: {
      from: `${table} l join ${child.table} t on t.id = l.${spec.childColumn}`,
      columns: allColumns,
      parentColumn: `l.${spec.parentColumn}`,
      live: LIVE_LINK,
      fromRow,
    },
    columnsOf(selection) {
      if (!selection) return allColumns;
      if (!links) return child.columnsOf(selection.child);
      return [child.columnsOf(selection.child), parentIdColumn, ...linkFieldColumns(selection.link), ...linkDates(selection.link)].join(', ');
    },
    cascadeOf(resource) {
      const column = resource === parent ? spec.parentColumn : resource === child ? spec.childColumn : null;
      return column ? [{ table, column, event: cascadeEvent }] : [];
    },
    linkEvent: (action, parentId, childId) => ({
      action,
      resource: spec.auditResource,
      recordID: parentId,
      changes: { [childIdField]: action === 'link' ? { before: null, after: childId } : { before: childId, after: null } },
    }),
  };
}
