import type Router from '@koa/router';
import type { AppState } from '../http/context.js';
import { crudRoutes } from '../http/crud-routes.js';
import type { TokenService } from './token.service.js';

/** /token/… and /apply/token/id/. */
export const tokenRoutes = (tokens: TokenService, basePath: string): Router<AppState> =>
  crudRoutes({ path: '/token', basePath, service: tokens, applyPath: '/apply/token/id' });
