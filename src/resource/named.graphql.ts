import type { GraphQLContext } from '../graphql/context.js';
import { recordResolver } from '../graphql/record-resolver.js';
import { recordTypes, type RecordTypes } from '../graphql/record-types.js';
import type { NamedResource } from './named.js';

const built = new Map<NamedResource, RecordTypes>();
/** An application's or a role's GraphQL types (built once: type-graphql's metadata is global). */
export function namedTypes(resource: NamedResource): RecordTypes {
  let types = built.get(resource);
  if (!types) built.set(resource, (types = recordTypes(resource, { cacheable: true })));
  return types;
}

/** Applications or roles over GraphQL: the record operations (no apply id: the seed has none for them). */
export const namedResolver = (resource: NamedResource, key: 'applications' | 'roles') =>
  recordResolver(resource, (ctx: GraphQLContext) => ctx.services[key], namedTypes(resource), {
    cacheable: true,
    entity: true,
    mutations: ['create', 'update', 'patch', 'destroy', 'restore'],
    descriptions: { restore: `Brings a deleted ${resource.label} back (its name must not be taken by a live one); its links stay deleted.` },
  });
