import type { ClassType } from 'type-graphql';
import { relationEvents } from '../realtime/relation-events.js';
import { RELATIONS } from './link.resource.js';

/** `linkEvents(userID, after)` and LinkEvent: the changes of users' application and role links (src/realtime/relation-events.ts). */
export const linkEvents = (): ClassType[] => relationEvents({ type: 'LinkEvent', operation: 'linkEvents' }, RELATIONS);
