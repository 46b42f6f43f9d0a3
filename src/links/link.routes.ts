import { relationRoutes } from '../http/relation-routes.js';
import type { ApiTag, RouteSpec } from '../http/routes.js';
import { userApplications, userRoles } from './link.resource.js';
import type { LinkService } from './link.service.js';

const TAG: ApiTag = {
  name: 'links',
  description: 'A user’s links to applications (each with a numeric `right`) and to roles: list, link, unlink, and an application link’s `right`.',
};

/** /user/{id}/application/… and /user/{id}/role/: the routes of the two relations. */
export const linkRoutes = (links: LinkService): RouteSpec[] => [
  ...relationRoutes(userApplications, links.applications, { tag: TAG, linkFieldsNote: '(any safe integer: the original service’s RBAC bit mask)' }),
  ...relationRoutes(userRoles, links.roles, { tag: TAG }),
];
