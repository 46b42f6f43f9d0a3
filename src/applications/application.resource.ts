import { namedResource } from '../resource/named.js';

/** An application a user is linked to, with a numeric `right` (on the wire: `{id, name, createdAt, updatedAt}`). */
export const applications = namedResource({
  name: 'application',
  table: 'applications',
  type: 'Application',
});
