import { Args, ArgsType, Ctx, Extensions, ID, InputType, Int, Mutation, ObjectType, Query, Resolver, type ClassType } from 'type-graphql';
import { requirePermission } from '../auth/caller.js';
import { parseId, parseIdList } from '../resource/input.js';
import type { Relation, RelationSelection } from '../resource/relation.js';
import type { RelationService } from '../resource/relation-service.js';
import { CACHEABLE } from './cacheable.js';
import { ConnectionArgs, ConnectionType } from './connection.js';
import { callerOf, type GraphQLContext } from './context.js';
import { DateTimeFilter, IDFilter, SortDirection } from './filters.js';
import { PageArgs, PageType } from './page.js';
import { define, filterOf, named, scalarOf, type RecordTypes } from './record-types.js';
import { method, params } from './record-resolver.js';
import { DateTime } from './scalars.js';
import { nestedListField, type NestedLists } from './nested-list.js';
import { CONNECTION_RECORDS, PAGE_RECORDS, selectedFields, type FieldAt } from './selection.js';

/**
 * A relation over GraphQL (src/resource/relation.ts), derived from its definition: the nested
 * list and connection fields on the parent's type (`User.applications`, `User.rolesConnection`),
 * one statement for a whole page of parents; for a relation with link fields, the link's type
 * (`ApplicationLink`: its fields and the child below its name), its filter and order, and the
 * query of one link (`userApplication`); the link and unlink mutations, and the change of a link's
 * fields. A nested list has no `deleted` argument: links are live by definition (an unlink, or
 * the delete of either side, soft-deletes the link).
 */

/** One relation as a module's resolvers serve it. */
export interface RelationEntry {
  relation: Relation;
  /** The relation's operations in the request's context. */
  service(ctx: GraphQLContext): RelationService;
  /** The child's record types (its object type, page, connection, list arguments). */
  child: RecordTypes;
}

/** The types a relation's nested fields answer with. */
interface NestedTypes {
  Page: ClassType;
  Connection: ClassType;
  ListArgs: ClassType;
  ConnectionArgs: ClassType;
  /** The link's own type (null: the relation lists the child's records). */
  Link: ClassType | null;
}

const a = (label: string) => (/^[aeio]/.test(label) ? `an ${label}` : `a ${label}`);
const lower = (type: string) => type[0].toLowerCase() + type.slice(1);
/** "right", "right and weight": the names of a relation's link fields. */
const linkNames = (relation: Relation) => relation.linkEntries.map(([name]) => name).join(' and ');

/** A GraphQL ID list as the link operations take it: digits become numbers; anything else is left for the check to refuse. */
const idValues = (ids: readonly string[]) => ids.map((id) => (/^[1-9]\d{0,15}$/.test(id) ? Number(id) : id));

/** ApplicationLink, its page, connection, filter, order and list arguments. */
function linkTypes(relation: Relation, child: RecordTypes, cacheable: boolean): NestedTypes {
  const { parent, child: childResource } = relation;
  const name = `${childResource.type}Link`;
  const cache = (cls: ClassType, field: string) => (cacheable ? Extensions(CACHEABLE)(cls.prototype, field) : undefined);
  const Link = named(name);
  define(Link, relation.childIdField, () => ID);
  define(Link, relation.parentIdField, () => ID);
  for (const [field, spec] of relation.linkEntries) define(Link, field, () => scalarOf(spec), { nullable: spec.nullable, description: spec.description });
  define(Link, 'createdAt', () => DateTime, { description: 'When it was created (set by the service).' });
  define(Link, 'updatedAt', () => DateTime, { description: 'When it last changed (set by the service).' });
  define(Link, childResource.name, () => child.Type);
  for (const field of [relation.childIdField, relation.parentIdField, ...relation.linkEntries.map(([n]) => n), 'createdAt', 'updatedAt', childResource.name])
    cache(Link, field);
  ObjectType(name, {
    description: `${a(parent.label).replace(/^a/, 'A')}’s link to ${a(childResource.label)}, with its ${linkNames(relation)}.`,
    simpleResolvers: true,
  })(Link);
  const Page = named(`${name}Page`, PageType(Link, cacheable) as unknown as ClassType);
  ObjectType(`${name}Page`, { simpleResolvers: true })(Page);
  const Connection = named(`${name}Connection`, ConnectionType(Link, name, cacheable) as unknown as ClassType);
  ObjectType(`${name}Connection`, { simpleResolvers: true })(Connection);

  // The child's own fields (not its id and dates, which a link has of its own), then the link's.
  const own = childResource.entries.filter(([field, spec]) => spec.listed && !['id', 'createdAt', 'updatedAt'].includes(field));
  const keys: [string, ClassType, string | undefined][] = [
    [relation.childIdField, IDFilter, undefined],
    ...own.map(([field, spec]): [string, ClassType, string] => [field, filterOf(spec), `The ${childResource.label}’s ${field}.`]),
    ...relation.linkEntries.map(([field, spec]): [string, ClassType, string | undefined] => [field, filterOf(spec), spec.filterDescription]),
    ['createdAt', DateTimeFilter, 'When the link was made.'],
    ['updatedAt', DateTimeFilter, 'When the link last changed.'],
  ];
  const Filter = named(`${name}Filter`);
  for (const [field, type, description] of keys) define(Filter, field, () => type, { nullable: true, description });
  for (const op of ['and', 'or']) define(Filter, op, () => [Filter], { nullable: true });
  define(Filter, 'not', () => Filter, { nullable: true });
  const ownNames = ['id', ...own.map(([field]) => field)].join(' and ');
  InputType(`${name}Filter`, {
    description: `Conditions on ${a(parent.label)}’s ${childResource.label} links: the ${childResource.label}’s ${ownNames}; the link’s ${[...relation.linkEntries.map(([n]) => n), 'dates'].join(' and ')}.`,
  })(Filter);
  const OrderBy = named(`${name}OrderBy`);
  for (const [field] of keys) define(OrderBy, field, () => SortDirection, { nullable: true });
  InputType(`${name}OrderBy`, { description: 'One sort key: set exactly one field.' })(OrderBy);

  const args = (Base: ClassType, suffix: string) => {
    const Args_ = named(`${name}${suffix}`, Base);
    define(Args_, 'filter', () => Filter, { nullable: true });
    define(Args_, 'orderBy', () => [OrderBy], { nullable: true });
    ArgsType()(Args_);
    return Args_;
  };
  return { Page, Connection, ListArgs: args(PageArgs, 'ListArgs'), ConnectionArgs: args(ConnectionArgs, 'ConnectionArgs'), Link };
}

const nestedTypes = new Map<Relation, NestedTypes>();
function typesOf(entry: RelationEntry, cacheable: boolean): NestedTypes {
  let types = nestedTypes.get(entry.relation);
  if (!types) {
    const { child } = entry;
    types = entry.relation.linkEntries.length
      ? linkTypes(entry.relation, child, cacheable)
      : { Page: child.Page, Connection: child.Connection, ListArgs: child.ListArgs, ConnectionArgs: child.ConnectionArgs, Link: null };
    nestedTypes.set(entry.relation, types);
  }
  return types;
}

/** What a nested field reads of its items: a link's fields and its child's, or the child's. */
function selectionOf(relation: Relation, info: FieldAt, records: readonly string[]): RelationSelection {
  const selected = selectedFields(info, records);
  return relation.linkEntries.length ? { link: selected, child: selectedFields(info, [...records, relation.child.name]) } : { link: selected, child: selected };
}

/** The query of one link (`userApplication(userID, applicationID)`): null when the parent is not live or not linked. */
function linkQuery(Resolver_: ClassType, entry: RelationEntry, Link: ClassType, cacheable: boolean): void {
  const { relation } = entry;
  const { parent, child } = relation;
  const name = `${lower(parent.type)}${child.type}`;
  const Args_ = named(`${parent.type}${child.type}Args`);
  define(Args_, relation.parentIdField, () => ID);
  define(Args_, relation.childIdField, () => ID);
  ArgsType()(Args_);
  const d = method(Resolver_, name, async (args: Record<string, string>, ctx: GraphQLContext) => {
    const caller = callerOf(ctx);
    const service = entry.service(ctx);
    requirePermission(caller, service.permissions.list);
    const parentId = parseId(args[relation.parentIdField], relation.parentIdField);
    const childId = parseId(args[relation.childIdField], relation.childIdField);
    const lookup = await service.find(caller, ctx.sql, parentId, childId);
    return lookup.parent ? lookup.link : null;
  });
  params(
    Resolver_,
    name,
    Args(() => Args_),
    Ctx(),
  );
  Query(() => Link, { nullable: true, description: `null when the ${parent.label} is not linked to the ${child.label}.` })(Resolver_.prototype, name, d);
  if (cacheable) Extensions(CACHEABLE)(Resolver_.prototype, name);
}

/** `linkUserApplications(id, applicationIDs)` and `unlinkUserApplications(…)`: how many links were made or removed. */
function linkMutation(Resolver_: ClassType, entry: RelationEntry, action: 'link' | 'unlink'): void {
  const { relation } = entry;
  const { parent, child } = relation;
  const name = `${action}${parent.type}${child.type}s`;
  const idsField = `${relation.childIdField}s`;
  const Args_ = named(`${action}${child.type}sArgs`);
  define(Args_, 'id', () => ID);
  define(Args_, idsField, () => [ID]);
  ArgsType()(Args_);
  const d = method(Resolver_, name, async (args: Record<string, string & string[]>, ctx: GraphQLContext) => {
    const caller = callerOf(ctx);
    const service = entry.service(ctx);
    requirePermission(caller, service.permissions.change);
    const parentId = parseId(args.id);
    return service[action](caller, ctx.sql, parentId, parseIdList(idValues(args[idsField]), idsField));
  });
  params(
    Resolver_,
    name,
    Args(() => Args_),
    Ctx(),
  );
  const description =
    action === 'link' ? `Links the ${child.label}s; answers how many links were created.` : `Unlinks the ${child.label}s; answers how many links were removed.`;
  Mutation(() => Int, { description })(Resolver_.prototype, name, d);
}

/** `updateUserApplication(id, applicationID, right)`: a link's fields (never creates a link). */
function updateMutation(Resolver_: ClassType, entry: RelationEntry, Link: ClassType): void {
  const { relation } = entry;
  const { parent, child } = relation;
  const name = `update${parent.type}${child.type}`;
  const Args_ = named(`${parent.type}${child.type}UpdateArgs`);
  define(Args_, 'id', () => ID);
  define(Args_, relation.childIdField, () => ID);
  for (const [field, spec] of relation.linkEntries) define(Args_, field, () => scalarOf(spec), { nullable: !spec.required });
  ArgsType()(Args_);
  const d = method(Resolver_, name, async (args: Record<string, unknown>, ctx: GraphQLContext) => {
    const caller = callerOf(ctx);
    const service = entry.service(ctx);
    requirePermission(caller, service.permissions.change);
    const parentId = parseId(args.id);
    const childId = parseId(args[relation.childIdField], relation.childIdField);
    const values = Object.fromEntries(relation.linkEntries.filter(([field]) => args[field] !== undefined).map(([field]) => [field, args[field]]));
    return service.update(caller, ctx.sql, parentId, childId, values);
  });
  params(
    Resolver_,
    name,
    Args(() => Args_),
    Ctx(),
  );
  Mutation(() => Link, { description: `Sets the ${linkNames(relation)} of an existing link (never creates one).` })(Resolver_.prototype, name, d);
}

/**
 * The nested lists of one relation on the parent's type (`applications`, `applicationsConnection`):
 * for each list of parents, one statement (src/graphql/nested-list.ts).
 */
function nestedLists(entry: RelationEntry, types: NestedTypes, cacheable: boolean): NestedLists {
  const { relation } = entry;
  const { parent, child } = relation;
  const listFields = relation.linkEntries.length ? relation.linkListFields : relation.listFields;
  return {
    name: `${child.name}s`,
    types: () => types,
    parent: parent.label,
    items: relation.linkEntries.length ? `${child.label} links` : `${child.label}s`,
    permission: parent.permissions.read,
    cacheable,
    open(ctx) {
      const service = entry.service(ctx);
      requirePermission(callerOf(ctx), service.permissions.list);
      return {
        listFields,
        pages: (list, count, at) => {
          const selection = selectionOf(relation, at, PAGE_RECORDS);
          return (caller, sql, ids) => service.pages(caller, sql, ids, list, count, selection);
        },
        connections: (keyset, count, at) => {
          const selection = selectionOf(relation, at, CONNECTION_RECORDS);
          return (caller, sql, ids) => service.connections(caller, sql, ids, keyset, count, selection);
        },
      };
    },
  };
}

/**
 * The resolvers of a module's relations, all of one parent type: the link queries and the
 * mutations (relation by relation), and the nested fields on the parent's type (every relation's
 * page, then every relation's connection).
 */
export function relationResolvers(parentType: () => ClassType, entries: readonly RelationEntry[], options: { cacheable: boolean }): ClassType[] {
  const { cacheable } = options;
  const LinkResolver = named('RelationResolver');
  for (const entry of entries) {
    const types = typesOf(entry, cacheable);
    if (types.Link) linkQuery(LinkResolver, entry, types.Link, cacheable);
    linkMutation(LinkResolver, entry, 'link');
    linkMutation(LinkResolver, entry, 'unlink');
    if (types.Link) updateMutation(LinkResolver, entry, types.Link);
  }
  Resolver()(LinkResolver);
  const NestedResolver = named('NestedRelationResolver');
  const lists = entries.map((entry) => nestedLists(entry, typesOf(entry, cacheable), cacheable));
  for (const kind of ['page', 'connection'] as const) for (const each of lists) nestedListField(NestedResolver, each, kind);
  Resolver(parentType)(NestedResolver);
  return [LinkResolver, NestedResolver];
}
