import { recordRoutes } from '../http/record-routes.js';
import type { RouteSpec } from '../http/routes.js';
import type { NamedService } from '../resource/named.js';

export const roleRoutes = (roles: NamedService, basePath: string): RouteSpec[] => recordRoutes({ path: '/role', basePath, service: roles, cacheable: true });
