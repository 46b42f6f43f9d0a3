import { Arg, Ctx, Field, FieldResolver, ID, ObjectType, Resolver, Root, Subscription, type ClassType } from 'type-graphql';
import { can, requirePermission, type Caller } from '../auth/caller.js';
import { callerOf, type GraphQLContext } from '../graphql/context.js';
import { DateTime } from '../graphql/scalars.js';
import type { GraphQLApi } from '../module/module.js';
import type { ChangeEvent } from '../realtime/events.js';
import type { StreamFilter } from '../realtime/hub.js';
import { ChangeAction, eventFields, optionalId, realtimeOf, recordOf, subscriberOf } from '../realtime/realtime.graphql.js';
import { tokenTypes } from './token.graphql.js';
import { tokens } from './token.resource.js';
import type { TokenService } from './token.service.js';

const { read } = tokens.permissions;

/** Whether a caller may stream a user's tokens: token:read, or the user is its own. */
const mayReadTokensOf = (caller: Caller, userId: number | null) => can(caller, read) || (userId !== null && userId === caller.userId);

/** `tokenEvents(after, userID)` and TokenEvent: the changes of tokens, of one user's with userID (which may be the caller's own without token:read). */
export function tokenEvents(api: GraphQLApi<TokenService>): ClassType[] {
  @ObjectType('TokenEvent', { description: 'A committed change of a token (its audit event).' })
  class TokenEvent {
    @Field(() => ID, { description: 'The audit event’s id: pass it as `after` to resume after it.' }) eventID!: string;
    @Field(() => ChangeAction) action!: ChangeAction;
    @Field(() => ID) id!: number;
    @Field(() => ID) userID!: number;
    @Field(() => DateTime) at!: string;
    event!: ChangeEvent;
  }

  @Resolver(() => TokenEvent)
  class TokenEventResolver {
    @Subscription(() => TokenEvent, {
      description:
        'Every committed change of tokens (of one user’s, with userID), in commit order; with after, the later ones first. Needs token:read, or userID of the caller’s own user.',
      subscribe: async ({ args, context }) => {
        const caller = subscriberOf(context);
        const userId = optionalId(args.userID, 'userID');
        if (!mayReadTokensOf(caller, userId)) requirePermission(caller, read);
        const filter: StreamFilter = {
          matches: (e) => e.resource === 'token' && (userId === null || e.userID === userId),
          sql: {
            where: `a.resource = 'token'${userId === null ? '' : ' and exists (select 1 from tokens t where t.id = a.record_id and t.user_id = ?)'}`,
            params: userId === null ? [] : [userId],
          },
        };
        return realtimeOf(context).stream('tokenEvents', filter, optionalId(args.after, 'after'));
      },
    })
    tokenEvents(
      @Root() event: ChangeEvent,
      @Arg('after', () => ID, { nullable: true }) _after?: string,
      @Arg('userID', () => ID, { nullable: true }) _userID?: string,
    ) {
      return { ...eventFields(event), id: event.recordID, userID: event.userID };
    }

    @FieldResolver(() => tokenTypes().Type, {
      nullable: true,
      description: 'As token(id) would answer it now: null once revoked or deleted. Needs token:read.',
    })
    token(@Root() event: TokenEvent, @Ctx() ctx: GraphQLContext) {
      const caller = callerOf(ctx);
      requirePermission(caller, read);
      return recordOf(event.event, () => api.service(ctx).find(caller, ctx.sql, event.id));
    }
  }
  return [TokenEventResolver];
}
