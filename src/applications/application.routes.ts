import { recordRoutes } from '../http/record-routes.js';
import type { RouteSpec } from '../http/routes.js';
import type { NamedService } from '../resource/named.js';

export const applicationRoutes = (applications: NamedService, basePath: string): RouteSpec[] =>
  recordRoutes({ path: '/application', basePath, service: applications, cacheable: true });
