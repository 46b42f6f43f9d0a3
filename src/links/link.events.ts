import { SafeIntResolver } from 'graphql-scalars';
import { Arg, Field, ID, ObjectType, Resolver, Root, Subscription, type ClassType } from 'type-graphql';
import { requirePermission } from '../auth/caller.js';
import { DateTime } from '../graphql/scalars.js';
import type { ChangeEvent } from '../realtime/events.js';
import { ChangeAction, eventsOf, optionalId, realtimeOf, subscriberOf } from '../realtime/realtime.graphql.js';

/** The value a link event's change names (`applicationID`: the one linked, unlinked or changed). */
const changed = (event: ChangeEvent, field: string): number | null => {
  const change = event.changes?.[field];
  const value = change?.after ?? change?.before;
  return typeof value === 'number' ? value : null;
};

/** `linkEvents(after, userID)` and LinkEvent: the changes of users' application and role links (a link's audit record is its user). */
export function linkEvents(): ClassType[] {
  @ObjectType('LinkEvent', { description: 'A committed change of a user’s application or role link (its audit event).' })
  class LinkEvent {
    @Field(() => ID, { description: 'The audit event’s id: pass it as `after` to resume after it.' }) eventID!: string;
    @Field(() => ChangeAction) action!: ChangeAction;
    @Field(() => ID) userID!: number;
    @Field(() => ID, { nullable: true, description: 'For an application link.' }) applicationID!: number | null;
    @Field(() => ID, { nullable: true, description: 'For a role link.' }) roleID!: number | null;
    @Field(() => SafeIntResolver, { nullable: true, description: 'An application link’s right after the change (null for a role link or an unlink).' })
    right!: number | null;
    @Field(() => DateTime) at!: string;
  }

  @Resolver(() => LinkEvent)
  class LinkEventResolver {
    @Subscription(() => LinkEvent, {
      description:
        'Every committed change of users’ application and role links (of one user’s, with userID), in commit order; with after, the later ones first. Needs user:read.',
      subscribe: async ({ args, context }) => {
        requirePermission(subscriberOf(context), 'user:read');
        // A link's audit record is its user.
        const filter = eventsOf(['application_link', 'role_link'], optionalId(args.userID, 'userID'));
        return realtimeOf(context).stream('linkEvents', filter, optionalId(args.after, 'after'));
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
  return [LinkEventResolver];
}
