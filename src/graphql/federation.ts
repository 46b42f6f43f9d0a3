import { buildSubgraphSchema, type GraphQLResolverMap } from '@apollo/subgraph';
import { getResolversFromSchema, MapperKind, mapSchema } from '@graphql-tools/utils';
import {
  execute,
  isObjectType,
  Kind,
  parse,
  printSchema,
  visit,
  type DirectiveNode,
  type DocumentNode,
  type GraphQLFieldResolver,
  type GraphQLResolveInfo,
  type GraphQLSchema,
  type ObjectTypeDefinitionNode,
} from 'graphql';
import { requirePermission, type Permission } from '../auth/caller.js';
import { AppError } from '../errors.js';
import { parseId } from '../resource/input.js';
import type { Resource } from '../resource/resource.js';
import { callerOf, type GraphQLContext } from './context.js';
import { selectedFields } from './selection.js';

/**
 * The service as an Apollo Federation 2 subgraph (GRAPHQL_FEDERATION=true, docs/graphql.md#behind-a-router).
 *
 * One schema definition: the type-graphql schema (schema.ts) is the source, and the subgraph is
 * derived from it. Its SDL (graphql-js's `printSchema`) gets the federation `@link`, a
 * `@key(fields: "id")` on every entity (the record types the modules declare in their `entities`:
 * src/module/module.ts, given here by src/module/registry.ts) and `@inaccessible` on the subscription root, and
 * `@apollo/subgraph`'s `buildSubgraphSchema` builds the subgraph from that SDL (adding `_service`,
 * `_entities`, `_Entity` and `_Any`) with the resolvers of the type-graphql schema, taken through
 * @graphql-tools/utils' `getResolversFromSchema` (fields, subscriptions, custom scalars, enum
 * values, abstract types), and each entity's reference resolver. The field extensions, which
 * resolvers do not carry (the read cache's `readCache` mark, `plainResolver`), are copied back
 * onto the built schema with `mapSchema`.
 *
 * Subscriptions stay on this service's own endpoint (WebSocket and SSE run on the type-graphql
 * schema, src/realtime/): `@inaccessible` keeps them in the subgraph (composition sees them) but
 * out of the supergraph's API, so no router offers a subscription it would have to proxy.
 */

/** The Federation version the subgraph links: 2.3 (@key and @inaccessible are all it needs; routers of the last years compose it). */
export const FEDERATION_SPEC = 'https://specs.apollo.dev/federation/v2.3';

/**
 * Resolves a reference (`{__typename, id}`) to the record, or null when there is none. It must not
 * throw synchronously: an `async` function's rejection becomes an error at the reference's own
 * path (`_entities.3`), and the other references still resolve.
 */
export type ReferenceResolver = (reference: { id?: unknown }, ctx: GraphQLContext, info: GraphQLResolveInfo) => Promise<unknown>;

/** An entity of the subgraph: an object type keyed by `id`, and how a reference to it resolves. */
export interface EntityDeclaration {
  type: string;
  key: 'id';
  resolveReference: ReferenceResolver;
}

/**
 * A record type as an entity (a module's `entities`, src/module/module.ts): a reference resolves as
 * the record's query by id would, with its read permission (the service's `permissions.get`),
 * through `Loaders.byId`, so that all the references to one type in a request are one statement,
 * reading the columns of the fields `_entities` selects.
 */
export function recordEntity(resource: Resource, serviceOf: (ctx: GraphQLContext) => { permissions: { get: Permission } }): EntityDeclaration {
  return {
    type: resource.type,
    key: 'id',
    async resolveReference(reference, ctx, info) {
      const caller = callerOf(ctx);
      requirePermission(caller, serviceOf(ctx).permissions.get);
      // The columns of the fields `_entities` selects (those of other types' fragments are no columns here).
      return ctx.loaders.byId(resource, selectedFields(info)).load(parseId(reference.id));
    },
  };
}

/** The directives and the `extend schema @link(…)` the subgraph SDL adds, parsed from SDL text. */
function federationNodes(key: string) {
  const document = parse(`extend schema @link(url: "${FEDERATION_SPEC}", import: ["@key", "@inaccessible"]) type T @key(fields: "${key}") @inaccessible`, {
    noLocation: true,
  });
  const [link, marked] = document.definitions as [DocumentNode['definitions'][number], ObjectTypeDefinitionNode];
  const [keyDirective, inaccessible] = marked.directives as [DirectiveNode, DirectiveNode];
  return { link, keyDirective, inaccessible };
}

/** The subgraph's own definitions: the type-graphql schema's SDL with the federation directives. */
export function subgraphDocument(schema: GraphQLSchema, entities: readonly EntityDeclaration[]): DocumentNode {
  const entityTypes = new Set(entities.map((e) => e.type));
  const subscription = schema.getSubscriptionType()?.name;
  const { link, keyDirective, inaccessible } = federationNodes('id');
  const document = visit(parse(printSchema(schema), { noLocation: true }), {
    ObjectTypeDefinition(node) {
      const added = [...(entityTypes.has(node.name.value) ? [keyDirective] : []), ...(node.name.value === subscription ? [inaccessible] : [])];
      return added.length ? { ...node, directives: [...(node.directives ?? []), ...added] } : undefined;
    },
  });
  return { kind: Kind.DOCUMENT, definitions: [link, ...document.definitions] };
}

/** The subgraph schema derived from the type-graphql schema (see above), with its entities. */
export function subgraphSchema(schema: GraphQLSchema, entities: readonly EntityDeclaration[]): GraphQLSchema {
  for (const entity of entities) {
    if (!isObjectType(schema.getType(entity.type))) throw new Error(`the entity ${entity.type} is no object type of the schema`);
  }
  const resolvers = getResolversFromSchema(schema) as GraphQLResolverMap<GraphQLContext>;
  for (const { type: name, ...entity } of entities) {
    // `__resolveReference` is the resolver map's entry for it (docs of @apollo/subgraph); the map's
    // type only knows field resolvers, whose parameters differ.
    const fields = resolvers[name] as Record<string, GraphQLFieldResolver<unknown, GraphQLContext>> | undefined;
    resolvers[name] = { ...fields, __resolveReference: entity.resolveReference as unknown as GraphQLFieldResolver<unknown, GraphQLContext> };
  }
  const built = buildSubgraphSchema([{ typeDefs: subgraphDocument(schema, entities), resolvers }]);
  const entityNames = entities.map((e) => e.type).sort();
  return mapSchema(built, {
    [MapperKind.OBJECT_FIELD]: (field, fieldName, typeName) => {
      if (typeName === built.getQueryType()?.name && fieldName === '_entities')
        return { ...field, resolve: checkingRepresentations(field.resolve!, entityNames) };
      const source = schema.getType(typeName);
      const extensions = isObjectType(source) ? source.getFields()[fieldName]?.extensions : undefined;
      return extensions && Object.keys(extensions).length ? { ...field, extensions: { ...extensions, ...field.extensions } } : field;
    },
  });
}

/**
 * @apollo/subgraph's `_entities` resolver, around which:
 *
 * - representations that do not name an entity (a router's mistake) are refused with
 *   BAD_USER_INPUT naming the first one, before the resolver, which would fail on them with an
 *   internal error (each entity checks its reference's key itself: an id, else BAD_USER_INPUT at
 *   that reference's path);
 * - the list is answered settled, a failed reference as its error: graphql-js and graphql-jit
 *   both answer an Error item as null with the error at the item's path, while graphql-jit
 *   (0.8.9) puts the null of a rejected promise item at the end of the list (`push(null)`)
 *   rather than at its index, which shifts the items after it (a router matches `_entities`
 *   answers to its references by position). Every reference is asked for before any is
 *   awaited: DataLoader still reads each type in one statement.
 */
function checkingRepresentations(
  resolve: GraphQLFieldResolver<unknown, GraphQLContext>,
  entityNames: readonly string[],
): GraphQLFieldResolver<unknown, GraphQLContext> {
  return (source, args: { representations?: unknown }, context, info) => {
    const representations = Array.isArray(args.representations) ? args.representations : [];
    const bad = representations.findIndex(
      (r) => typeof r !== 'object' || r === null || !entityNames.includes((r as { __typename?: unknown }).__typename as string),
    );
    if (bad !== -1) {
      throw AppError.invalid([{ field: `representations[${bad}].__typename`, message: `must name an entity: ${entityNames.join(', ')}` }]);
    }
    const items = resolve(source, args, context, info) as unknown[];
    return Promise.all(items.map((item) => Promise.resolve(item).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))))));
  };
}

/** The subgraph SDL as `_service { sdl }` answers it to a router. */
export async function serviceSdl(subgraph: GraphQLSchema): Promise<string> {
  const result = await execute({ schema: subgraph, document: parse('{ _service { sdl } }') });
  const sdl = (result.data as { _service?: { sdl?: unknown } } | null)?._service?.sdl;
  if (typeof sdl !== 'string') throw new Error(`the subgraph schema did not answer _service { sdl }: ${JSON.stringify(result.errors)}`);
  return sdl;
}
