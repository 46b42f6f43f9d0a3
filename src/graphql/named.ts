import type { NamedResource, NamedService } from '../resource/named.js';
import type { GraphQLContext } from './context.js';
import { recordResolver } from './record-resolver.js';
import { recordTypes, type RecordTypes } from './record-types.js';

const built = new Map<NamedResource, RecordTypes>();
/** An application's or a role's GraphQL types (built once: type-graphql's metadata is global). */
export function namedTypes(resource: NamedResource): RecordTypes {
  let types = built.get(resource);
  if (!types) built.set(resource, (types = recordTypes(resource, { cacheable: true })));
  return types;
}

/** Applications or roles over GraphQL: the record operations (no apply id: the seed has none for them). */
export const namedResolver = (resource: NamedResource, serviceOf: (ctx: GraphQLContext) => NamedService) =>
  recordResolver(resource, serviceOf, namedTypes(resource), {
    cacheable: true,
    mutations: ['create', 'update', 'patch', 'destroy', 'restore'],
    descriptions: { restore: `Brings a deleted ${resource.label} back (its name must not be taken by a live one); its links stay deleted.` },
  });
