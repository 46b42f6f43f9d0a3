import { recordRoutes } from '../http/record-routes.js';
import type { RouteSpec } from '../http/routes.js';
import type { NamedService } from '../resource/named.js';

export const applicationRoutes = (applications: NamedService, basePath: string): RouteSpec[] =>
  recordRoutes({
    path: '/application',
    basePath,
    service: applications,
    cacheable: true,
    tag: { name: 'applications', description: 'Applications a user can be linked to (each link carries a numeric `right`).' },
    notes: {
      write: '`name` must not be blank and must be unique among live applications (409).',
      destroy: 'It is unlinked from every user, and its name is free for a new application.',
      restore: 'Also 409 when a live application has taken its name meanwhile.',
    },
  });
