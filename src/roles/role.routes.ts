import { recordRoutes } from '../http/record-routes.js';
import type { RouteSpec } from '../http/routes.js';
import type { NamedService } from '../resource/named.js';

export const roleRoutes = (roles: NamedService, basePath: string): RouteSpec[] =>
  recordRoutes({
    path: '/role',
    basePath,
    service: roles,
    cacheable: true,
    tag: { name: 'roles', description: 'Roles a user can be linked to.' },
    notes: {
      write: '`name` must not be blank and must be unique among live roles (409).',
      destroy: 'It is unlinked from every user, and its name is free for a new role.',
      restore: 'Also 409 when a live role has taken its name meanwhile.',
    },
  });
