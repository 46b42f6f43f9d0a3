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
import { Entity } from './federation.js';
import { listInput } from './filters.js';
import type { RecordTypes } from './record-types.js';
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
  /**
   * Whether the record type is an Apollo Federation entity keyed by `id` (GRAPHQL_FEDERATION=true,
   * src/graphql/federation.ts): a router's reference resolves as `<singular>(id)` would, with the
   * read permission, in one statement for all the references of the request.
   */
  entity?: boolean;
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

export function recordResolver<R extends Resource>(
  resource: R,
  /** The record's service of the request's service (a process may run several, each with its keys). */
  serviceOf: (ctx: GraphQLContext) => RecordService<R>,
  types: RecordTypes,
  options: RecordResolverOptions,
): ClassType {
  const { type } = resource;
  const singular = lower(type);
  const plural = `${singular}s`;
  const { read, write } = resource.permissions;
  const Resolver_ = { [`${type}Resolver`]: class {} }[`${type}Resolver`];
  const proto = Resolver_.prototype;
  const cache = (name: string) => (options.cacheable ? Extensions(CACHEABLE)(proto, name) : undefined);
  const describe = (op: Standard, fallback?: string) => {
    const description = options.descriptions?.[op] ?? fallback;
    return description ? { description } : {};
  };
  const writeInput = (input: unknown, mode: 'create' | 'replace' | 'patch') => parseWrite(resource, input, mode, undefined, { idsAsText: true });

  // Queries: the list, its keyset twin, one record.
  let d = method(Resolver_, 'list', async (args: never, ctx: GraphQLContext, info: GraphQLResolveInfo) => {
    const caller = callerOf(ctx);
    requirePermission(caller, read);
    const service = serviceOf(ctx);
    return service.list(caller, ctx.sql, service.parseList(listInput(args)), { count: selects(info, 'total'), fields: selectedFields(info, PAGE_RECORDS) });
  });
  params(
    Resolver_,
    'list',
    Args(() => types.ListArgsWithDeleted),
    Ctx(),
    Info(),
  );
  Query(() => types.Page, { name: plural })(proto, 'list', d);
  cache('list');

  d = method(Resolver_, 'connection', async (args: never, ctx: GraphQLContext, info: GraphQLResolveInfo) => {
    const caller = callerOf(ctx);
    requirePermission(caller, read);
    const service = serviceOf(ctx);
    return service.connection(caller, ctx.sql, service.parseKeyset(connectionInput(args)), {
      count: selects(info, 'totalCount'),
      fields: selectedFields(info, CONNECTION_RECORDS),
    });
  });
  params(
    Resolver_,
    'connection',
    Args(() => types.ConnectionArgsWithDeleted),
    Ctx(),
    Info(),
  );
  Query(() => types.Connection, { name: `${plural}Connection`, description: `${type}s as keyset pages (Relay connection): first/after or last/before.` })(
    proto,
    'connection',
    d,
  );
  cache('connection');

  d = method(Resolver_, 'one', async (id: string, ctx: GraphQLContext, info: GraphQLResolveInfo) => {
    const caller = callerOf(ctx);
    requirePermission(caller, read);
    return serviceOf(ctx).find(caller, ctx.sql, parseId(id), { fields: selectedFields(info) });
  });
  params(
    Resolver_,
    'one',
    Arg('id', () => ID),
    Ctx(),
    Info(),
  );
  Query(() => types.Type, { name: singular, nullable: true, description: `null when there is no live ${singular} with this id.` })(proto, 'one', d);
  cache('one');
  for (const query of options.queries ?? []) query(Resolver_);

  const standard: Record<Standard, () => void> = {
    create() {
      d = method(Resolver_, 'create', async (input: unknown, ctx: GraphQLContext) => {
        const caller = callerOf(ctx);
        requirePermission(caller, write);
        return inArgument('input', () => serviceOf(ctx).create(caller, ctx.sql, writeInput(input, 'create')));
      });
      params(
        Resolver_,
        'create',
        Arg('input', () => types.Input!),
        Ctx(),
      );
      Mutation(() => types.Type, { name: `create${type}`, ...describe('create') })(proto, 'create', d);
    },
    update() {
      d = method(Resolver_, 'update', async (id: string, input: unknown, ctx: GraphQLContext) => {
        const caller = callerOf(ctx);
        requirePermission(caller, write);
        const recordId = parseId(id);
        return (await inArgument('input', () => serviceOf(ctx).replace(caller, ctx.sql, recordId, writeInput(input, 'replace')))).record;
      });
      params(
        Resolver_,
        'update',
        Arg('id', () => ID),
        Arg('input', () => types.Input!),
        Ctx(),
      );
      Mutation(() => types.Type, { name: `update${type}`, ...describe('update', 'Replaces every writable field.') })(proto, 'update', d);
    },
    patch() {
      d = method(Resolver_, 'patch', async (id: string, input: unknown, ctx: GraphQLContext) => {
        const caller = callerOf(ctx);
        requirePermission(caller, write);
        const recordId = parseId(id);
        return inArgument('input', () => serviceOf(ctx).patch(caller, ctx.sql, recordId, writeInput(input, 'patch')));
      });
      params(
        Resolver_,
        'patch',
        Arg('id', () => ID),
        Arg('input', () => types.Patch!),
        Ctx(),
      );
      Mutation(() => types.Type, { name: `patch${type}`, ...describe('patch', 'Changes only the fields given.') })(proto, 'patch', d);
    },
    destroy() {
      d = method(Resolver_, 'destroy', async (id: string, ctx: GraphQLContext) => {
        const caller = callerOf(ctx);
        requirePermission(caller, write);
        await serviceOf(ctx).destroy(caller, ctx.sql, parseId(id));
        return true;
      });
      params(
        Resolver_,
        'destroy',
        Arg('id', () => ID),
        Ctx(),
      );
      Mutation(() => Boolean, { name: `destroy${type}`, ...describe('destroy') })(proto, 'destroy', d);
    },
    restore() {
      d = method(Resolver_, 'restore', async (id: string, ctx: GraphQLContext) => {
        const caller = callerOf(ctx);
        requirePermission(caller, write);
        return serviceOf(ctx).restore(caller, ctx.sql, parseId(id));
      });
      params(
        Resolver_,
        'restore',
        Arg('id', () => ID),
        Ctx(),
      );
      Mutation(() => types.Type, { name: `restore${type}`, ...describe('restore') })(proto, 'restore', d);
    },
    apply() {
      d = method(Resolver_, 'apply', async (ctx: GraphQLContext) => {
        const caller = callerOf(ctx);
        requirePermission(caller, write);
        return String(await serviceOf(ctx).applyId(caller, ctx.sql));
      });
      params(Resolver_, 'apply', Ctx());
      Mutation(() => ID, { name: `apply${type}ID`, ...describe('apply', `Reserves the next ${singular} id; update${type} on it creates the ${singular}.`) })(
        proto,
        'apply',
        d,
      );
    },
  };
  if (options.entity) {
    Entity(async (reference, ctx, info) => {
      const caller = callerOf(ctx);
      requirePermission(caller, read);
      // The columns of the fields `_entities` selects (those of other types' fragments are no columns here).
      return ctx.loaders.byId(serviceOf(ctx), selectedFields(info)).load(parseId(reference.id));
    })(types.Type);
  }
  for (const mutation of options.mutations) {
    if (typeof mutation === 'string') standard[mutation]();
    else mutation(Resolver_);
  }
  Resolver()(Resolver_);
  return Resolver_;
}
