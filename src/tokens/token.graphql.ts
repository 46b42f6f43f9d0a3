import { Arg, Ctx, Field, FieldResolver, Int, Mutation, ObjectType, Query, Resolver, Root, type ClassType } from 'type-graphql';
import { requirePermission } from '../auth/caller.js';
import { callerOf, type GraphQLContext } from '../graphql/context.js';
import { listInput } from '../graphql/filters.js';
import { nestedListField, type NestedLists } from '../graphql/nested-list.js';
import { method, params, recordResolver } from '../graphql/record-resolver.js';
import { named, recordTypes } from '../graphql/record-types.js';
import { compileQuery } from '../list/list.js';
import type { GraphQLApi } from '../module/module.js';
import { users } from '../users/user.resource.js';
import { userTypes } from '../users/user.graphql.js';
import { tokens, type TokenRecord } from './token.resource.js';
import type { TokenService } from './token.service.js';

@ObjectType('TokenRevocation', { description: 'What a bulk revoke did.', simpleResolvers: true })
class TokenRevocationType {
  @Field(() => Int, { description: 'Tokens revoked (soft-deleted).' }) revoked!: number;
  @Field(() => Int, { description: 'Matching tokens left alone: their scope is one this token could not have granted.' }) skipped!: number;
}

let types: ReturnType<typeof recordTypes> | undefined;
/** Tokens' GraphQL types (built once: type-graphql's metadata is global). Never cacheable: tokens expire by the clock. */
export const tokenTypes = () => (types ??= recordTypes(tokens, { cacheable: false }));

/** `viewer`: the token the request was made with. */
const viewerQuery = (api: GraphQLApi<TokenService>) => (resolver: ClassType) => {
  const d = method(resolver, 'viewer', async (ctx: GraphQLContext) => api.service(ctx).viewer(callerOf(ctx), ctx.sql));
  params(resolver, 'viewer', Ctx());
  Query(() => tokenTypes().Type, { description: 'The token this request was made with.' })(resolver.prototype, 'viewer', d);
};

/** `destroyTokens(filter)`: the bulk revoke of DELETE /token/?filter=…. */
const bulkRevoke = (api: GraphQLApi<TokenService>) => (resolver: ClassType) => {
  const d = method(resolver, 'destroyTokens', async (filter: object, ctx: GraphQLContext) => {
    const caller = callerOf(ctx);
    const service = api.service(ctx);
    requirePermission(caller, service.permissions.destroyMatching);
    const { where } = compileQuery({ filter: listInput({ filter }).filter ?? {} }, service.listFields);
    return service.destroyMatching(caller, ctx.sql, where);
  });
  params(
    resolver,
    'destroyTokens',
    Arg('filter', () => tokenTypes().Filter),
    Ctx(),
  );
  Mutation(() => TokenRevocationType, {
    description: 'Revokes every live token matching the filter (an empty filter is refused), except those this token could not have granted.',
  })(resolver.prototype, 'destroyTokens', d);
};

/** Tokens over GraphQL: the record operations, `viewer`, the bulk revoke, and `Token.user`. */
export function tokenResolvers(api: GraphQLApi<TokenService>): ClassType[] {
  const TokenResolver = recordResolver(tokens, api.service, tokenTypes(), {
    cacheable: false,
    queries: [viewerQuery(api)],
    mutations: ['create', 'update', 'patch', 'destroy', bulkRevoke(api), 'restore', 'apply'],
    descriptions: {
      update: 'Replaces every writable field; creates the token on an id reserved by applyTokenID.',
      restore: 'Brings a deleted token back (its user must be live, its accessToken not taken).',
    },
  });

  @Resolver(() => tokenTypes().Type)
  class TokenUserResolver {
    @FieldResolver(() => userTypes().Type, { nullable: true, description: 'The owning user (batched).' })
    async user(@Root() token: TokenRecord, @Ctx() ctx: GraphQLContext) {
      return ctx.loaders.byId(users).load(token.userID);
    }
  }

  // User.tokens(…) and User.tokensConnection(…): one statement for a whole list of users.
  const tokensOfUsers: NestedLists = {
    name: 'tokens',
    types: tokenTypes,
    parent: users.label,
    items: `${tokens.label}s`,
    permission: tokens.permissions.read,
    open(ctx) {
      const service = api.service(ctx);
      requirePermission(callerOf(ctx), service.permissions.listForUsers);
      return {
        listFields: service.listFields,
        pages: (list, count) => (caller, sql, ids) => service.listForUsers(caller, sql, ids, list, count),
        connections: (keyset, count) => (caller, sql, ids) => service.connectionsForUsers(caller, sql, ids, keyset, count),
      };
    },
  };
  const UserTokensResolver = named('UserTokensResolver');
  for (const kind of ['page', 'connection'] as const) nestedListField(UserTokensResolver, tokensOfUsers, kind);
  Resolver(() => userTypes().Type)(UserTokensResolver);
  return [TokenResolver, TokenUserResolver, UserTokensResolver];
}
