import type Router from '@koa/router';
import type { AppState } from '../http/context.js';
import { crudRoutes } from '../http/crud-routes.js';
import type { RoleService } from './role.service.js';

export const roleRoutes = (roles: RoleService, basePath: string): Router<AppState> =>
  crudRoutes({ path: '/role', basePath, service: roles });
