import type { ParameterizedContext } from 'koa';
import type { RouterContext } from '@koa/router';
import type { Caller } from '../auth/caller.js';

export interface AppState {
  requestId: string;
  /** Set by the authenticate middleware on every API route. */
  caller: Caller;
}

export type AppContext = ParameterizedContext<AppState>;
export type RouteContext = RouterContext<AppState>;
