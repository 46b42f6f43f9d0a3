import { namedResource } from '../resource/named.js';

/** A role a user is linked to. */
export const roles = namedResource({ name: 'role', table: 'roles', type: 'Role' });
