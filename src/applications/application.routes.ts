import type Router from '@koa/router';
import type { AppState } from '../http/context.js';
import { crudRoutes } from '../http/crud-routes.js';
import type { ApplicationService } from './application.service.js';

export const applicationRoutes = (applications: ApplicationService, basePath: string): Router<AppState> =>
  crudRoutes({ path: '/application', basePath, service: applications });
