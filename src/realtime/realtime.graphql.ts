import { Arg, Ctx, Field, FieldResolver, ID, ObjectType, registerEnumType, Resolver, Root, Subscription, type ClassType } from 'type-graphql';
import { requirePermission, type Caller } from '../auth/caller.js';
import { AppError } from '../errors.js';
import { callerOf, type GraphQLContext } from '../graphql/context.js';
import { DateTime } from '../graphql/scalars.js';
import { AUDIT_ACTIONS } from '../resource/audit.js';
import { parseId } from '../resource/input.js';
import type { Resource } from '../resource/resource.js';
import type { ChangeEvent } from './events.js';
import type { StreamFilter } from './hub.js';

/**
 * The subscriptions of docs/graphql.md#subscriptions are each module's (src/module/module.ts:
 * `subscriptions`): `recordEvents` below makes a resource's (userEvents, applicationEvents,
 * roleEvents); tokens and links write theirs with the pieces here. Each is type-graphql's
 * `@Subscription` with a `subscribe` function: it checks the caller's read scope first, then
 * streams the events of the hub (src/realtime/hub.ts) that match its arguments, resuming after
 * `after` when given. An event's record (`user`, `token`, …) is read as the matching query would
 * read it now, as the subscriber (whose permission its field checks first), once per event on this
 * instance however many subscribers receive it.
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

/** Where a subscription's `subscribe` streams from (a 400 over plain HTTP: subscriptions need WebSocket or SSE). */
export function realtimeOf(context: unknown): RealtimeContext {
  const realtime = (context as GraphQLContext & { realtime?: RealtimeContext }).realtime;
  if (!realtime) throw AppError.badRequest('subscriptions run over WebSocket (graphql-transport-ws) or Server-Sent Events (Accept: text/event-stream)');
  return realtime;
}

/** The subscriber of a subscription's `subscribe`. */
export const subscriberOf = (context: unknown): Caller => callerOf(context as GraphQLContext);

/** `after` and the ids of arguments, parsed (400 naming the argument). */
export const optionalId = (raw: unknown, field: string): number | null => (raw === undefined || raw === null ? null : parseId(raw, field));

/** An event's record, read once on this instance (its first subscriber reads it; the others wait for that read). */
const records = new WeakMap<ChangeEvent, Promise<unknown>>();
export function recordOf<T>(event: ChangeEvent, read: () => Promise<T>): Promise<T> {
  let found = records.get(event) as Promise<T> | undefined;
  if (!found) records.set(event, (found = read()));
  return found;
}

/** The common fields of an event. */
export const eventFields = (event: ChangeEvent) => ({ eventID: String(event.eventID), action: event.action as ChangeAction, at: event.at, event });

/** The events of these audit resources, of one record when `recordId` is given: in memory, and as the replay's SQL. */
export function eventsOf(resources: readonly string[], recordId: number | null): StreamFilter {
  return {
    matches: (e) => resources.includes(e.resource) && (recordId === null || e.recordID === recordId),
    sql: {
      where: `a.resource in (${resources.map((r) => `'${r}'`).join(', ')})${recordId === null ? '' : ' and a.record_id = ?'}`,
      params: recordId === null ? [] : [recordId],
    },
  };
}

/** A resource whose records have events of their own: its definition, its GraphQL type, and how to read one. */
export interface EventfulResource {
  /** Its definition (`users`, …): the audit log's resource name, the GraphQL type's name, the read permission. */
  definition: Pick<Resource, 'name' | 'type' | 'permissions'>;
  recordType: () => ClassType;
  /** The live record, as its query reads it, by the subscriber. */
  find(ctx: GraphQLContext, caller: Caller, id: number): Promise<unknown>;
}

/**
 * UserEvent, ApplicationEvent, RoleEvent (`{ eventID action id at <record> }`) and their
 * subscriptions (`userEvents`, …), derived from the resource: the names, the read permission,
 * the audit log's resource.
 */
export function recordEvents(resource: EventfulResource): ClassType[] {
  const { name, type, permissions } = resource.definition;
  const spec = { type: `${type}Event`, field: name, operation: `${name}Events`, permission: permissions.read };
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
        requirePermission(subscriberOf(context), spec.permission);
        const filter = eventsOf([name], optionalId(args.id, 'id'));
        return realtimeOf(context).stream(spec.operation, filter, optionalId(args.after, 'after'));
      },
    })
    events(@Root() event: ChangeEvent, @Arg('after', () => ID, { nullable: true }) _after?: string, @Arg('id', () => ID, { nullable: true }) _id?: string) {
      return { ...eventFields(event), id: event.recordID };
    }

    @FieldResolver(resource.recordType, { nullable: true, name: spec.field, description: `As ${spec.field}(id) would answer it now: null once deleted.` })
    record(@Root() event: RecordEvent, @Ctx() ctx: GraphQLContext) {
      const caller = callerOf(ctx);
      requirePermission(caller, spec.permission);
      return recordOf(event.event, () => resource.find(ctx, caller, event.id));
    }
  }
  Object.defineProperty(RecordEventResolver, 'name', { value: `${spec.type}Resolver` });
  return [RecordEventResolver];
}
