import { Arg, ID, ObjectType, Resolver, Root, Subscription, type ClassType } from 'type-graphql';
import { requirePermission } from '../auth/caller.js';
import { define, named, scalarOf } from '../graphql/record-types.js';
import { DateTime } from '../graphql/scalars.js';
import { defaultOf } from '../resource/input.js';
import type { Relation } from '../resource/relation.js';
import type { ChangeEvent } from './events.js';
import { ChangeAction, eventsOf, optionalId, realtimeOf, subscriberOf } from './realtime.graphql.js';

/**
 * The events of a module's relations, all of one parent (src/resource/relation.ts): one type
 * (`LinkEvent`: the parent's id, each relation's child id, each link field after the change) and
 * one subscription (`linkEvents(after, userID)`), over the audit events the link operations write
 * (a link's audit record is its parent).
 */
const a = (label: string) => (/^[aeio]/.test(label) ? `an ${label}` : `a ${label}`);
const capital = (text: string) => text[0].toUpperCase() + text.slice(1);

/** The value a link event's change names (`applicationID`: the one linked, unlinked or changed). */
const changed = (event: ChangeEvent, field: string): unknown => {
  const change = event.changes?.[field];
  return change?.after ?? change?.before ?? null;
};

/** The fields of the event type, in order: each relation's child id, then each relation's link fields. */
function eventType(type: string, relations: readonly Relation[]): ClassType {
  const parent = relations[0].parent;
  const labels = relations.map((r) => r.child.label);
  const Event = named(type);
  define(Event, 'eventID', () => ID, { description: 'The audit event’s id: pass it as `after` to resume after it.' });
  define(Event, 'action', () => ChangeAction);
  define(Event, relations[0].parentIdField, () => ID);
  for (const relation of relations) define(Event, relation.childIdField, () => ID, { nullable: true, description: `For ${a(relation.child.label)} link.` });
  for (const relation of relations) {
    const others = labels.filter((label) => label !== relation.child.label).map((label) => `${a(label)} link`);
    for (const [name, field] of relation.linkEntries) {
      const description = `${capital(a(relation.child.label))} link’s ${name} after the change (null for ${[...others, 'an unlink'].join(' or ')}).`;
      define(Event, name, () => scalarOf(field), { nullable: true, description });
    }
  }
  define(Event, 'at', () => DateTime);
  ObjectType(type, { description: `A committed change of ${a(parent.label)}’s ${labels.join(' or ')} link (its audit event).` })(Event);
  return Event;
}

/** An audit event as the event type shows it: the parent, the child of its relation, the link fields after a link or a change. */
function eventOf(relations: readonly Relation[], event: ChangeEvent): Record<string, unknown> {
  const shown: Record<string, unknown> = { eventID: String(event.eventID), action: event.action, [relations[0].parentIdField]: event.recordID };
  for (const relation of relations) shown[relation.childIdField] = event.resource === relation.auditResource ? changed(event, relation.childIdField) : null;
  for (const relation of relations) {
    const own = event.resource === relation.auditResource && event.action !== 'unlink';
    for (const [name, field] of relation.linkEntries) shown[name] = own ? (changed(event, name) ?? (event.action === 'link' ? defaultOf(field) : null)) : null;
  }
  shown.at = event.at;
  return shown;
}

/** The event type and the subscription of a module's relations (their parent's read permission). */
export function relationEvents(names: { type: string; operation: string }, relations: readonly Relation[]): ClassType[] {
  const parent = relations[0].parent;
  const parentIdField = relations[0].parentIdField;
  const Event = eventType(names.type, relations);
  const resources = relations.map((r) => r.auditResource);
  const children = relations.map((r) => r.child.label).join(' and ');
  const Events = named(`${names.type}Resolver`);
  const description =
    `Every committed change of ${parent.label}s’ ${children} links (of one ${parent.label}’s, with ${parentIdField}), in commit order; with after, ` +
    `the later ones first. Needs ${parent.permissions.read}.`;
  Object.defineProperty(Events.prototype, names.operation, {
    value: (event: ChangeEvent) => eventOf(relations, event),
    writable: true,
    configurable: true,
  });
  // As TypeScript applies a method's parameter decorators, the last first: the schema lists (userID, after).
  Arg(parentIdField, () => ID, { nullable: true })(Events.prototype, names.operation, 2);
  Arg('after', () => ID, { nullable: true })(Events.prototype, names.operation, 1);
  Root()(Events.prototype, names.operation, 0);
  Subscription(() => Event, {
    description,
    subscribe: async ({ args, context }) => {
      requirePermission(subscriberOf(context), parent.permissions.read);
      // A link's audit record is its parent.
      const filter = eventsOf(resources, optionalId(args[parentIdField], parentIdField));
      return realtimeOf(context).stream(names.operation, filter, optionalId(args.after, 'after'));
    },
  })(Events.prototype, names.operation, Object.getOwnPropertyDescriptor(Events.prototype, names.operation)!);
  Resolver(() => Event)(Events);
  return [Events];
}
