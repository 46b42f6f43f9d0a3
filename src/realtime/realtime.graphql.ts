import { Arg, Ctx, Field, FieldResolver, ID, ObjectType, registerEnumType, Resolver, Root, Subscription, type ClassType } from 'type-graphql';
import { SafeIntResolver } from 'graphql-scalars';
import { SYSTEM_CALLER } from '../auth/caller.js';
import { can, requirePermission, type Caller, type Permission } from '../auth/caller.js';
import { AUDIT_ACTIONS } from '../resource/audit.js';
import { AppError } from '../errors.js';
import { callerOf, type GraphQLContext } from '../graphql/context.js';
import { DateTime } from '../graphql/scalars.js';
import { namedTypes } from '../graphql/named.js';
import type { NamedService } from '../resource/named.js';
import type { TokenService } from '../tokens/token.service.js';
import type { UserService } from '../users/user.service.js';
import { parseId } from '../resource/input.js';
import { applications } from '../applications/application.resource.js';
import { roles } from '../roles/role.resource.js';
import { tokenTypes } from '../tokens/token.graphql.js';
import { userTypes } from '../users/user.graphql.js';
import { users } from '../users/user.resource.js';
import type { ChangeEvent } from './events.js';
import type { StreamFilter } from './hub.js';

/**
 * The subscriptions of docs/graphql.md#subscriptions, over type-graphql's `@Subscription` with a `subscribe` function
 * each: userEvents, tokenEvents, linkEvents, applicationEvents and roleEvents. Each checks the
 * caller's read scope first, then streams the events of the hub (src/realtime/hub.ts) that match
 * its arguments, resuming after `after` when given. An event's record (`user`, `token`, …) is read
 * as the matching query would read it now, with the subscriber's permission, once per event on
 * this instance however many subscribers receive it.
 */

/** The audit log's actions, as GraphQL names them. */
export enum ChangeAction {
  CREATE = 'create',
  UPDATE = 'update',
  PATCH = 'patch',
  STATUS = 'status',
  DELETE = 'delete',
  RESTORE = 'restore',
  APPLY = 'apply',
  REVOKE = 'revoke',
  LINK = 'link',
  UNLINK = 'unlink',
  RIGHT = 'right',
}
registerEnumType(ChangeAction, { name: 'ChangeAction', description: 'What a write did (the audit log’s action).' });
// Every audit action has its GraphQL name (a new action without one fails at start).
for (const action of AUDIT_ACTIONS) if (!Object.values(ChangeAction).includes(action as ChangeAction)) throw new Error(`ChangeAction lacks ${action}`);

/** The realtime part of a resolver's context. */
export interface RealtimeContext {
  /** Streams the events matching a filter (the connection's hub), closing the connection when too far behind. */
  stream(operation: string, filter: StreamFilter, after: number | null): Promise<AsyncIterableIterator<ChangeEvent>>;
}

const realtimeOf = (ctx: GraphQLContext): RealtimeContext => {
  const realtime = (ctx as GraphQLContext & { realtime?: RealtimeContext }).realtime;
  if (!realtime) throw AppError.badRequest('subscriptions run over WebSocket (graphql-transport-ws) or Server-Sent Events (Accept: text/event-stream)');
  return realtime;
};

/** `after` and the ids of arguments, parsed (400 naming the argument). */
const optionalId = (raw: unknown, field: string): number | null => (raw === undefined || raw === null ? null : parseId(raw, field));

/** An event's record, read once on this instance (its first subscriber reads it; the others wait for that read). */
const records = new WeakMap<ChangeEvent, Promise<unknown>>();
function recordOf<T>(event: ChangeEvent, read: () => Promise<T>): Promise<T> {
  let found = records.get(event) as Promise<T> | undefined;
  if (!found) records.set(event, (found = read()));
  return found;
}

/** The common fields of an event. */
const eventFields = (event: ChangeEvent) => ({ eventID: String(event.eventID), action: event.action as ChangeAction, at: event.at, event });

/** The events of these audit resources, of one record when `recordId` is given: in memory, and as the replay's SQL. */
function eventsOf(resources: readonly string[], recordId: number | null): StreamFilter {
  return {
    matches: (e) => resources.includes(e.resource) && (recordId === null || e.recordID === recordId),
    sql: {
      where: `a.resource in (${resources.map((r) => `'${r}'`).join(', ')})${recordId === null ? '' : ' and a.record_id = ?'}`,
      params: recordId === null ? [] : [recordId],
    },
  };
}

/** A resource whose records have events of their own: its definition's name and GraphQL type, and how to read one. */
interface EventfulResource {
  /** Its definition (`users`, …): the audit log's resource name, the GraphQL type's name. */
  definition: { name: string; type: string };
  recordType: () => ClassType;
  find(ctx: GraphQLContext, id: number): Promise<unknown>;
}

/**
 * UserEvent, ApplicationEvent, RoleEvent (`{ eventID action id at <record> }`) and their
 * subscriptions (`userEvents`, …), derived from the resource: the names, the read permission,
 * the audit log's resource.
 */
function recordEvents(resource: EventfulResource): ClassType[] {
  const { name, type } = resource.definition;
  const spec = { type: `${type}Event`, field: name, operation: `${name}Events`, permission: `${name}:read` as Permission };
  @ObjectType(spec.type, { description: `A committed change of ${/^[aeiou]/.test(spec.field) ? 'an' : 'a'} ${spec.field} (its audit event).` })
  class RecordEvent {
    @Field(() => ID, { description: 'The audit event’s id: pass it as `after` to resume after it.' }) eventID!: string;
    @Field(() => ChangeAction) action!: ChangeAction;
    @Field(() => ID) id!: number;
    @Field(() => DateTime) at!: string;
    event!: ChangeEvent;
  }
  Object.defineProperty(RecordEvent, 'name', { value: spec.type });

  @Resolver(() => RecordEvent)
  class RecordEventResolver {
    @Subscription(() => RecordEvent, {
      name: spec.operation,
      description: `Every committed change of ${spec.field}s (of one, with id), in commit order; with after, the later ones first. Needs ${spec.permission}.`,
      subscribe: async ({ args, context }) => {
        const caller = callerOf(context as GraphQLContext);
        requirePermission(caller, spec.permission);
        const filter = eventsOf([name], optionalId(args.id, 'id'));
        return realtimeOf(context as GraphQLContext).stream(spec.operation, filter, optionalId(args.after, 'after'));
      },
    })
    events(@Root() event: ChangeEvent, @Arg('after', () => ID, { nullable: true }) _after?: string, @Arg('id', () => ID, { nullable: true }) _id?: string) {
      return { ...eventFields(event), id: event.recordID };
    }

    @FieldResolver(resource.recordType, { nullable: true, name: spec.field, description: `As ${spec.field}(id) would answer it now: null once deleted.` })
    record(@Root() event: RecordEvent, @Ctx() ctx: GraphQLContext) {
      requirePermission(callerOf(ctx), spec.permission);
      return recordOf(event.event, () => resource.find(ctx, event.id));
    }
  }
  Object.defineProperty(RecordEventResolver, 'name', { value: `${spec.type}Resolver` });
  return [RecordEventResolver];
}

@ObjectType('TokenEvent', { description: 'A committed change of a token (its audit event).' })
class TokenEvent {
  @Field(() => ID, { description: 'The audit event’s id: pass it as `after` to resume after it.' }) eventID!: string;
  @Field(() => ChangeAction) action!: ChangeAction;
  @Field(() => ID) id!: number;
  @Field(() => ID) userID!: number;
  @Field(() => DateTime) at!: string;
  event!: ChangeEvent;
}

@ObjectType('LinkEvent', { description: 'A committed change of a user’s application or role link (its audit event).' })
class LinkEvent {
  @Field(() => ID, { description: 'The audit event’s id: pass it as `after` to resume after it.' }) eventID!: string;
  @Field(() => ChangeAction) action!: ChangeAction;
  @Field(() => ID) userID!: number;
  @Field(() => ID, { nullable: true, description: 'For an application link.' }) applicationID!: number | null;
  @Field(() => ID, { nullable: true, description: 'For a role link.' }) roleID!: number | null;
  @Field(() => SafeIntResolver, { nullable: true, description: 'An application link’s right after the change (null for a role link or an unlink).' }) right!:
    number | null;
  @Field(() => DateTime) at!: string;
}

/** The value a link event's change names (`applicationID`: the one linked, unlinked or changed). */
const changed = (event: ChangeEvent, field: string): number | null => {
  const change = event.changes?.[field];
  const value = change?.after ?? change?.before;
  return typeof value === 'number' ? value : null;
};

/** Whether a caller may stream a user's tokens: token:read, or the user is its own. */
const mayReadTokensOf = (caller: Caller, userId: number | null) => can(caller, 'token:read') || (userId !== null && userId === caller.userId);

@Resolver(() => TokenEvent)
class TokenEventResolver {
  @Subscription(() => TokenEvent, {
    description:
      'Every committed change of tokens (of one user’s, with userID), in commit order; with after, the later ones first. Needs token:read, or userID of the caller’s own user.',
    subscribe: async ({ args, context }) => {
      const caller = callerOf(context as GraphQLContext);
      const userId = optionalId(args.userID, 'userID');
      if (!mayReadTokensOf(caller, userId)) requirePermission(caller, 'token:read');
      const filter: StreamFilter = {
        matches: (e) => e.resource === 'token' && (userId === null || e.userID === userId),
        sql: {
          where: `a.resource = 'token'${userId === null ? '' : ' and exists (select 1 from tokens t where t.id = a.record_id and t.user_id = ?)'}`,
          params: userId === null ? [] : [userId],
        },
      };
      return realtimeOf(context as GraphQLContext).stream('tokenEvents', filter, optionalId(args.after, 'after'));
    },
  })
  tokenEvents(
    @Root() event: ChangeEvent,
    @Arg('after', () => ID, { nullable: true }) _after?: string,
    @Arg('userID', () => ID, { nullable: true }) _userID?: string,
  ) {
    return { ...eventFields(event), id: event.recordID, userID: event.userID };
  }

  @FieldResolver(() => tokenTypes().Type, { nullable: true, description: 'As token(id) would answer it now: null once revoked or deleted. Needs token:read.' })
  token(@Root() event: TokenEvent, @Ctx() ctx: GraphQLContext) {
    requirePermission(callerOf(ctx), 'token:read');
    return recordOf(event.event, () => (ctx.services.tokens as TokenService).find(SYSTEM_CALLER, ctx.sql, event.id));
  }
}

@Resolver(() => LinkEvent)
class LinkEventResolver {
  @Subscription(() => LinkEvent, {
    description:
      'Every committed change of users’ application and role links (of one user’s, with userID), in commit order; with after, the later ones first. Needs user:read.',
    subscribe: async ({ args, context }) => {
      const caller = callerOf(context as GraphQLContext);
      requirePermission(caller, 'user:read');
      // A link's audit record is its user.
      const filter = eventsOf(['application_link', 'role_link'], optionalId(args.userID, 'userID'));
      return realtimeOf(context as GraphQLContext).stream('linkEvents', filter, optionalId(args.after, 'after'));
    },
  })
  linkEvents(
    @Root() event: ChangeEvent,
    @Arg('after', () => ID, { nullable: true }) _after?: string,
    @Arg('userID', () => ID, { nullable: true }) _userID?: string,
  ): LinkEvent {
    const application = event.resource === 'application_link';
    const right = application && event.action !== 'unlink' ? (changed(event, 'right') ?? (event.action === 'link' ? 0 : null)) : null;
    return {
      eventID: String(event.eventID),
      action: event.action as ChangeAction,
      userID: event.recordID,
      applicationID: application ? changed(event, 'applicationID') : null,
      roleID: application ? null : changed(event, 'roleID'),
      right,
      at: event.at,
    };
  }
}

/** The realtime resolvers, for the schema. */
export function realtimeResolvers(): ClassType[] {
  // Each event's record is read once on this instance, whoever subscribes (each subscriber's
  // permission is checked before): so as the service itself.
  return [
    ...recordEvents({
      definition: users,
      recordType: () => userTypes().Type,
      find: (ctx, id) => (ctx.services.users as UserService).find(SYSTEM_CALLER, ctx.sql, id),
    }),
    ...recordEvents({
      definition: applications,
      recordType: () => namedTypes(applications).Type,
      find: (ctx, id) => (ctx.services.applications as NamedService).find(SYSTEM_CALLER, ctx.sql, id),
    }),
    ...recordEvents({
      definition: roles,
      recordType: () => namedTypes(roles).Type,
      find: (ctx, id) => (ctx.services.roles as NamedService).find(SYSTEM_CALLER, ctx.sql, id),
    }),
    TokenEventResolver,
    LinkEventResolver,
  ];
}
