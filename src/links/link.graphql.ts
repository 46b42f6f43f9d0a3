import type { ClassType } from 'type-graphql';
import { namedTypes } from '../graphql/named.js';
import { relationResolvers } from '../graphql/relation.js';
import type { GraphQLApi } from '../module/module.js';
import { userTypes } from '../users/user.graphql.js';
import { userApplications, userRoles } from './link.resource.js';
import type { LinkService } from './link.service.js';

/**
 * Links over GraphQL: `userApplication`, the link mutations, and the nested `User.applications(…)`
 * and `User.roles(…)` (one statement for a whole page of users), derived from the two relations
 * (src/graphql/relation.ts), over the same services as /user/{id}/application/ and /role/.
 */
export const linkResolvers = (api: GraphQLApi<LinkService>): ClassType[] =>
  relationResolvers(
    () => userTypes().Type,
    [
      { relation: userApplications, service: (ctx) => api.service(ctx).applications, child: namedTypes(userApplications.child) },
      { relation: userRoles, service: (ctx) => api.service(ctx).roles, child: namedTypes(userRoles.child) },
    ],
    { cacheable: true },
  );
