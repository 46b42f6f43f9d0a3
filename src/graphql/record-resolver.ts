import type { GraphQLResolveInfo } from 'graphql';
import { Arg, Args, Ctx, Extensions, ID, Info, Mutation, Query, Resolver, type ClassType } from 'type-graphql';
import { requirePermission } from '../auth/caller.js';
import { parseId, parseWrite } from '../resource/input.js';
import type { Resource } from '../resource/resource.js';
import type { RecordService } from '../resource/service.js';
import { CACHEABLE } from './cacheable.js';
import { connectionInput } from './connection.js';
import { callerOf, type GraphQLContext } from './context.js';
import { inArgument } from './errors.js';
import { listInput } from './filters.js';
import type { RecordTypes } from './record-types.js';
import { plainResolve } from './plain-resolvers.js';
import { readNestedAhead } from './prefetch.js';
import { CONNECTION_RECORDS, PAGE_RECORDS, selectedFields, selects } from './selection.js';

/**
 * The GraphQL operations of a record type over its service (type-graphql's resolvers-inheritance
 * example: one generic resolver, many types), each parsing its arguments at the edge, checking the
 * permission first (so that a 403 wins over a 400, as on REST), calling the service and answering
 * the record. Queries `<plural>`, `<plural>Connection`, `<singular>(id)`; mutations `create…`,
 * `update…`, `patch…`, `destroy…`, `restore…` and, for users and tokens, `apply…ID`, in the order
 * `mutations` lists them, with the resource's own among them.
 */
export type Standard = 'create' | 'update' | 'patch' | 'destroy' | 'restore' | 'apply';

/** A resource's own mutation, placed among the standard ones. */
export type Custom = (resolver: ClassType) => void;

export interface RecordResolverOptions {
  /** Whether its reads may be answered from the read cache (the directory: users, applications, roles). */
  cacheable: boolean;
  mutations: readonly (Standard | Custom)[];
  /** The resource's own queries, after the standard ones. */
  queries?: readonly Custom[];
  descriptions?: Partial<Record<Standard, string>>;
}

/** Defines a method on a resolver class and returns its descriptor, for the decorators. */
export function method(cls: ClassType, name: string, fn: (...args: never[]) => unknown): PropertyDescriptor {
  Object.defineProperty(cls.prototype, name, { value: fn, writable: true, configurable: true });
  return Object.getOwnPropertyDescriptor(cls.prototype, name)!;
}

/** Applies parameter decorators in argument order (the schema lists arguments as they are applied). */
export function params(cls: ClassType, name: string, ...decorators: ((prototype: object, propertyKey: string, parameterIndex: number) => void)[]): void {
  decorators.forEach((decorate, index) => decorate(cls.prototype, name, index));
}

const lower = (type: string) => type[0].toLowerCase() + type.slice(1);

/** type-graphql's return type function (its ReturnTypeFunc, which it does not export). */
type Returns = Extract<Parameters<typeof Query>[0], () => unknown>;

/** One parameter of a root field's method: an argument by name (type-graphql's `@Arg`), or all of them as one object (`@Args`). */
type RootArg = { name: string; type: Parameters<typeof Arg>[1] } | { all: () => ClassType };

/** One root field on a resolver class: its method (arguments, then the context, then `info` if it reads it) and its decorators. */
interface RootField {
  key: string;
  kind: 'query' | 'mutation';
  returns: Returns;
  options: { name?: string; description?: string; nullable?: boolean };
  args: readonly RootArg[];
  withInfo?: boolean;
  cacheable?: boolean;
  resolve: (...args: never[]) => unknown;
}

/**
 * Declares a root field with type-graphql (its type, arguments and description: one schema) and
 * resolves it with its method called straight from graphql-js's arguments (src/graphql/plain-resolvers.ts
 * says why): type-graphql's wrapper made instances of the input classes and awaited a validation
 * step with validation off, ~10 µs of a GraphQL write. The arguments are graphql-js's coerced
 * values, which every resolver here parses at the edge as it did the instances.
 */
function rootField(Resolver_: ClassType, field: RootField): void {
  const d = method(Resolver_, field.key, field.resolve);
  params(
    Resolver_,
    field.key,
    ...field.args.map((arg) => ('all' in arg ? Args(arg.all) : Arg(arg.name, arg.type))),
    Ctx(),
    ...(field.withInfo ? [Info()] : []),
  );
  (field.kind === 'query' ? Query : Mutation)(field.returns, field.options)(Resolver_.prototype, field.key, d);
  if (field.cacheable) Extensions(CACHEABLE)(Resolver_.prototype, field.key);
  const picks = field.args.map((arg) => ('all' in arg ? (args: Record<string, unknown>) => args : (args: Record<string, unknown>) => args[arg.name]));
  const resolve = field.resolve as (...params: unknown[]) => unknown;
  // `info` goes last whether the method reads it or not (one it does not declare is ignored).
  plainResolve(Resolver_.prototype, field.key, (_root, args, ctx, info) => resolve(...picks.map((pick) => pick(args)), ctx, info));
}

/** The queries of a record type: the list, its keyset twin, one record (each its service's `list` or `get` permission first). */
function recordQueries<R extends Resource>(
  serviceOf: (ctx: GraphQLContext) => RecordService<R>,
  type: string,
  types: RecordTypes,
  cacheable: boolean,
): RootField[] {
  const singular = lower(type);
  const plural = `${singular}s`;
  return [
    {
      key: 'list',
      kind: 'query',
      returns: () => types.Page,
      options: { name: plural },
      args: [{ all: () => types.ListArgsWithDeleted }],
      withInfo: true,
      cacheable,
      resolve: async (args: never, ctx: GraphQLContext, info: GraphQLResolveInfo) => {
        const caller = callerOf(ctx);
        const service = serviceOf(ctx);
        requirePermission(caller, service.permissions.list);
        const page = await service.list(caller, ctx.sql, service.parseList(listInput(args)), {
          count: selects(info, 'total'),
          fields: selectedFields(info, PAGE_RECORDS),
        });
        await readNestedAhead(ctx, info, page.data, PAGE_RECORDS);
        return page;
      },
    },
    {
      key: 'connection',
      kind: 'query',
      returns: () => types.Connection,
      options: { name: `${plural}Connection`, description: `${type}s as keyset pages (Relay connection): first/after or last/before.` },
      args: [{ all: () => types.ConnectionArgsWithDeleted }],
      withInfo: true,
      cacheable,
      resolve: async (args: never, ctx: GraphQLContext, info: GraphQLResolveInfo) => {
        const caller = callerOf(ctx);
        const service = serviceOf(ctx);
        requirePermission(caller, service.permissions.list);
        const keyset = service.parseKeyset(connectionInput(args));
        const connection = await service.connection(caller, ctx.sql, keyset, {
          count: selects(info, 'totalCount'),
          fields: selectedFields(info, CONNECTION_RECORDS),
        });
        await readNestedAhead(
          ctx,
          info,
          connection.edges.map((edge) => edge.node),
          CONNECTION_RECORDS,
        );
        return connection;
      },
    },
    {
      key: 'one',
      kind: 'query',
      returns: () => types.Type,
      options: { name: singular, nullable: true, description: `null when there is no live ${singular} with this id.` },
      args: [{ name: 'id', type: () => ID }],
      withInfo: true,
      cacheable,
      resolve: async (id: string, ctx: GraphQLContext, info: GraphQLResolveInfo) => {
        const caller = callerOf(ctx);
        const service = serviceOf(ctx);
        requirePermission(caller, service.permissions.get);
        return service.find(caller, ctx.sql, parseId(id), { fields: selectedFields(info) });
      },
    },
  ];
}

/** The standard mutations of a record type, by name (each its service's permission first, then its input parsed). */
function recordMutations<R extends Resource>(
  resource: R,
  serviceOf: (ctx: GraphQLContext) => RecordService<R>,
  types: RecordTypes,
  descriptions: Partial<Record<Standard, string>>,
): Record<Standard, RootField> {
  const { type } = resource;
  const singular = lower(type);
  const describe = (op: Standard, fallback?: string) => {
    const description = descriptions[op] ?? fallback;
    return description ? { description } : {};
  };
  /** Input parsed as the service's definition says (a webhook's: its event patterns over the running modules' audit resources). */
  const writeInput = (service: RecordService<R>, input: unknown, mode: 'create' | 'replace' | 'patch') =>
    parseWrite(service.resource, input, mode, undefined, { idsAsText: true });
  /** The caller and the service, once the operation's permission is checked. */
  const begin = (ctx: GraphQLContext, op: keyof RecordService<R>['permissions']) => {
    const caller = callerOf(ctx);
    const service = serviceOf(ctx);
    requirePermission(caller, service.permissions[op]);
    return { caller, service };
  };
  const mutation = (
    key: Standard,
    returns: Returns,
    name: string,
    description: object,
    args: RootArg[],
    resolve: RootField['resolve'],
    withInfo = false,
  ): RootField => ({
    key,
    kind: 'mutation',
    returns,
    options: { name, ...description },
    args,
    withInfo,
    resolve,
  });
  const id: RootArg = { name: 'id', type: () => ID };
  return {
    create: mutation(
      'create',
      () => types.Type,
      `create${type}`,
      describe('create'),
      [{ name: 'input', type: () => types.Input! }],
      async (input: unknown, ctx: GraphQLContext, info: GraphQLResolveInfo) => {
        const { caller, service } = begin(ctx, 'create');
        return inArgument('input', () => service.create(caller, ctx.sql, writeInput(service, input, 'create'), undefined, { fields: selectedFields(info) }));
      },
      true,
    ),
    update: mutation(
      'update',
      () => types.Type,
      `update${type}`,
      describe('update', 'Replaces every writable field.'),
      [id, { name: 'input', type: () => types.Input! }],
      async (raw: string, input: unknown, ctx: GraphQLContext, info: GraphQLResolveInfo) => {
        const { caller, service } = begin(ctx, 'replace');
        const recordId = parseId(raw);
        const fields = selectedFields(info);
        return (await inArgument('input', () => service.replace(caller, ctx.sql, recordId, writeInput(service, input, 'replace'), { fields }))).record;
      },
      true,
    ),
    patch: mutation(
      'patch',
      () => types.Type,
      `patch${type}`,
      describe('patch', 'Changes only the fields given.'),
      [id, { name: 'input', type: () => types.Patch! }],
      async (raw: string, input: unknown, ctx: GraphQLContext, info: GraphQLResolveInfo) => {
        const { caller, service } = begin(ctx, 'patch');
        const recordId = parseId(raw);
        const fields = selectedFields(info);
        return inArgument('input', () => service.patch(caller, ctx.sql, recordId, writeInput(service, input, 'patch'), 'patch', { fields }));
      },
      true,
    ),
    destroy: mutation(
      'destroy',
      () => Boolean,
      `destroy${type}`,
      describe('destroy'),
      [id],
      async (raw: string, ctx: GraphQLContext) => {
        const { caller, service } = begin(ctx, 'destroy');
        await service.destroy(caller, ctx.sql, parseId(raw));
        return true;
      },
    ),
    restore: mutation(
      'restore',
      () => types.Type,
      `restore${type}`,
      describe('restore'),
      [id],
      async (raw: string, ctx: GraphQLContext) => {
        const { caller, service } = begin(ctx, 'restore');
        return service.restore(caller, ctx.sql, parseId(raw));
      },
    ),
    apply: mutation(
      'apply',
      () => ID,
      `apply${type}ID`,
      describe('apply', `Reserves the next ${singular} id; update${type} on it creates the ${singular}.`),
      [],
      async (ctx: GraphQLContext) => {
        const { caller, service } = begin(ctx, 'applyId');
        return String(await service.applyId(caller, ctx.sql));
      },
    ),
  };
}

export function recordResolver<R extends Resource>(
  resource: R,
  /** The record's service of the request's service (a process may run several, each with its keys). */
  serviceOf: (ctx: GraphQLContext) => RecordService<R>,
  types: RecordTypes,
  options: RecordResolverOptions,
): ClassType {
  const { type } = resource;
  const Resolver_ = { [`${type}Resolver`]: class {} }[`${type}Resolver`];
  for (const query of recordQueries(serviceOf, type, types, options.cacheable)) rootField(Resolver_, query);
  for (const query of options.queries ?? []) query(Resolver_);
  const standard = recordMutations(resource, serviceOf, types, options.descriptions ?? {});
  for (const mutation of options.mutations) {
    if (typeof mutation === 'string') rootField(Resolver_, standard[mutation]);
    else mutation(Resolver_);
  }
  Resolver()(Resolver_);
  return Resolver_;
}
