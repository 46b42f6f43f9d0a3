import { Arg, Ctx, ID, Int, Mutation, type ClassType } from 'type-graphql';
import { requirePermission } from '../auth/caller.js';
import { callerOf, type GraphQLContext } from '../graphql/context.js';
import { method, params, recordResolver } from '../graphql/record-resolver.js';
import { recordTypes } from '../graphql/record-types.js';
import type { GraphQLApi } from '../module/module.js';
import { parseId, parseWrite } from '../resource/input.js';
import { USER_STATUS_BODY, users } from './user.resource.js';
import type { UserService } from './user.service.js';

/** `updateUserStatus(id, status)`: the status setter REST has at /user/{id}/status/. */
const statusMutation = (api: GraphQLApi<UserService>) => (resolver: ClassType) => {
  const d = method(resolver, 'updateStatus', async (id: string, status: number, ctx: GraphQLContext) => {
    const caller = callerOf(ctx);
    const service = api.service(ctx);
    requirePermission(caller, service.permissions.updateStatus);
    const userId = parseId(id);
    const values = parseWrite(USER_STATUS_BODY, { status }, 'create') as { status: number };
    return service.updateStatus(caller, ctx.sql, userId, values.status);
  });
  params(
    resolver,
    'updateStatus',
    Arg('id', () => ID),
    Arg('status', () => Int),
    Ctx(),
  );
  Mutation(() => userTypes().Type, { name: 'updateUserStatus' })(resolver.prototype, 'updateStatus', d);
};

let types: ReturnType<typeof recordTypes> | undefined;
/** Users' GraphQL types (built once: type-graphql's metadata is global). */
export const userTypes = () => (types ??= recordTypes(users, { cacheable: true }));

/** Users over GraphQL: the record operations, and the status setter. */
export const userResolver = (api: GraphQLApi<UserService>) =>
  recordResolver(users, api.service, userTypes(), {
    cacheable: true,
    mutations: ['create', 'update', 'patch', statusMutation(api), 'destroy', 'restore', 'apply'],
    descriptions: {
      update: 'Replaces every writable field; creates the user on an id reserved by applyUserID.',
      destroy:
        'Deletes the user with its tokens and links (an audit event each). FORBIDDEN, nothing deleted, when one of its tokens has a scope the caller could not have granted.',
      restore: 'Brings a deleted user back; its tokens and links stay deleted.',
    },
  });
