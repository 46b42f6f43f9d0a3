import { GraphQLJSONObject, SafeIntResolver } from 'graphql-scalars';
import type { GraphQLScalarType } from 'graphql';
import { ArgsType, Extensions, Field, ID, InputType, Int, ObjectType, type ClassType } from 'type-graphql';
import type { Field as FieldDef } from '../resource/field.js';
import type { Resource } from '../resource/resource.js';
import { ConnectionArgs, ConnectionType } from './connection.js';
import {
  BooleanFilter,
  DateTimeFilter,
  DELETED_ARG,
  DeletedRecords,
  IDFilter,
  IntFilter,
  SafeIntFilter,
  SecretFilter,
  SortDirection,
  StringFilter,
} from './filters.js';
import { CACHEABLE } from './cacheable.js';
import { PageArgs, PageType } from './page.js';
import { DateTime } from './scalars.js';

/**
 * The GraphQL types of a resource, derived from its definition (type-graphql's classes, built as
 * its resolvers-inheritance example builds one generic resource for many types): the object type,
 * its page and connection, the write inputs, the filter and order inputs, and the list arguments.
 * A field added to a definition shows up in every one of them.
 */

/** A class with the given name, extending `Base` if given (type-graphql follows the class chain for inherited fields). */
export const named = (name: string, Base: ClassType = class {}): ClassType => ({ [name]: class extends Base {} })[name];

/** The GraphQL type of a field's values (a scalar, or a list of strings). */
export function scalarOf(field: FieldDef): GraphQLScalarType | typeof String | typeof Boolean | [typeof String] {
  switch (field.kind) {
    case 'boolean':
      return Boolean;
    case 'textList':
      return [String];
    case 'id':
    case 'reference':
      return ID;
    case 'int32':
      return Int;
    case 'safeInt':
      return SafeIntResolver;
    case 'date':
      return DateTime;
    case 'json':
      return GraphQLJSONObject;
    default:
      return String;
  }
}

/** The filter input of a field's kind (docs/rest.md#lists-filter-orderby-page-pagesize's operators, typed). */
export function filterOf(field: FieldDef): ClassType {
  switch (field.kind) {
    case 'id':
    case 'reference':
    case 'revision':
      return IDFilter;
    case 'int32':
      return IntFilter;
    case 'safeInt':
      return SafeIntFilter;
    case 'date':
      return DateTimeFilter;
    case 'secret':
      return SecretFilter;
    case 'boolean':
      return BooleanFilter;
    default:
      return StringFilter;
  }
}

export const define = (cls: ClassType, name: string, type: () => unknown, options: { nullable?: boolean; description?: string } = {}) =>
  Field(type as never, { nullable: options.nullable ?? false, ...(options.description ? { description: options.description } : {}) })(cls.prototype, name);

export interface RecordTypes {
  Type: ClassType;
  Page: ClassType;
  Connection: ClassType;
  Input: ClassType | null;
  Patch: ClassType | null;
  Filter: ClassType;
  OrderBy: ClassType;
  /** page, pageSize, filter, orderBy (a nested list of the records). */
  ListArgs: ClassType;
  /** The same, with `deleted` (a top-level list). */
  ListArgsWithDeleted: ClassType;
  ConnectionArgs: ClassType;
  ConnectionArgsWithDeleted: ClassType;
}

export function recordTypes(resource: Resource, options: { cacheable: boolean }): RecordTypes {
  const { type } = resource;
  const Type = named(type);
  const fields = [...resource.output, ...resource.entries.filter(([name]) => name === 'deletedAt')];
  for (const [name, field] of fields) {
    define(Type, name, () => scalarOf(field), { nullable: field.nullable, description: field.description });
    // Every field of a directory record is read from its row: cacheable with it.
    if (options.cacheable) Extensions(CACHEABLE)(Type.prototype, name);
  }
  // Simple resolvers: a record's fields are properties of its row, read by GraphQL's default resolver.
  ObjectType(type, { simpleResolvers: true, ...(resource.description ? { description: resource.description } : {}) })(Type);
  const Page = named(`${type}Page`, PageType(Type, options.cacheable) as unknown as ClassType);
  ObjectType(`${type}Page`, { simpleResolvers: true })(Page);
  const Connection = named(`${type}Connection`, ConnectionType(Type, type, options.cacheable) as unknown as ClassType);
  ObjectType(`${type}Connection`, { simpleResolvers: true })(Connection);

  let Input: ClassType | null = null;
  let Patch: ClassType | null = null;
  if (resource.writable.length) {
    Input = named(`${type}Input`);
    Patch = named(`${type}Patch`);
    for (const [name, field] of resource.writable) {
      define(Input, name, () => scalarOf(field), { nullable: !field.required });
      define(Patch, name, () => scalarOf(field), { nullable: true });
    }
    InputType(`${type}Input`, resource.inputDescription ? { description: resource.inputDescription } : {})(Input);
    InputType(`${type}Patch`, { description: 'The fields to change; fields left out stay as they are.' })(Patch);
  }

  const Filter = named(`${type}Filter`);
  for (const [name, field] of resource.entries.filter(([, f]) => f.listed)) {
    define(Filter, name, () => filterOf(field), { nullable: true, description: field.filterDescription });
  }
  define(Filter, 'and', () => [Filter], { nullable: true });
  define(Filter, 'or', () => [Filter], { nullable: true });
  define(Filter, 'not', () => Filter, { nullable: true });
  InputType(`${type}Filter`, { description: `Conditions on ${resource.label}s; sibling fields are and-ed.` })(Filter);

  const OrderBy = named(`${type}OrderBy`);
  for (const [name] of resource.entries.filter(([, f]) => f.listed && f.graphqlOrder)) define(OrderBy, name, () => SortDirection, { nullable: true });
  const unsortable = resource.entries.filter(([, f]) => f.listed && f.kind === 'secret').map(([name]) => name);
  const why = unsortable.length ? ` (${unsortable.join(' and ')} are stored encrypted and cannot be sorted on)` : '';
  InputType(`${type}OrderBy`, { description: `One sort key: set exactly one field${why}.` })(OrderBy);

  /** List arguments over a base (page or keyset), with `deleted` or not. */
  const args = (base: ClassType, withDeleted: boolean) => {
    const Args = named(`${type}${base.name}${withDeleted ? 'WithDeleted' : ''}`, base);
    define(Args, 'filter', () => Filter, { nullable: true });
    define(Args, 'orderBy', () => [OrderBy], { nullable: true });
    if (withDeleted) define(Args, 'deleted', () => DeletedRecords, { nullable: true, description: DELETED_ARG });
    ArgsType()(Args);
    return Args;
  };
  return {
    Type,
    Page,
    Connection,
    Input,
    Patch,
    Filter,
    OrderBy,
    ListArgs: args(PageArgs, false),
    ListArgsWithDeleted: args(PageArgs, true),
    ConnectionArgs: args(ConnectionArgs, false),
    ConnectionArgsWithDeleted: args(ConnectionArgs, true),
  };
}
