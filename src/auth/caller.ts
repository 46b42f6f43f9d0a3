import { AppError } from '../errors.js';

/**
 * A permission a route, resolver or service function needs: a scope's read or write (`user:read`).
 * The scopes are the modules' (src/module/scopes.ts builds the vocabulary from them): a
 * permission outside it stops the start.
 */
export type Permission = `${string}:${'read' | 'write'}`;

/** Who is calling: the authenticated token, passed into every service call. */
export interface Caller {
  tokenId: number;
  userId: number;
  scopes: ReadonlySet<string>;
  /** The calling client: its X-Client header, else the product token of its User-Agent, else "". */
  client: string;
  /** The request's X-Request-Id, recorded with every audit event the call appends. */
  requestId?: string;
  /**
   * The database snapshot read with the token, in the request's first statement: the read cache
   * serves this request only answers made under the same one (src/read-cache/store.ts).
   */
  snapshot?: string;
  /**
   * The primary's WAL position (`X/Y`) read with the token when replicas serve reads: the request's
   * reads go to a replica only once it has replayed that far (src/db/replicas.ts).
   */
  readFloor?: string;
}

/** The identity of the service's own start-up and command-line tasks: every permission. */
export const SYSTEM_CALLER: Caller = { tokenId: 0, userId: 0, scopes: new Set(['*']), client: 'user-token-service' };

/** `*` grants everything; `user:*` every permission on users; else the exact permission. */
export function can(caller: Caller, permission: Permission): boolean {
  const { scopes } = caller;
  return scopes.has('*') || scopes.has(permission) || scopes.has(`${permission.split(':')[0]}:*`);
}

export function requirePermission(caller: Caller, permission: Permission): void {
  if (!can(caller, permission)) throw AppError.forbidden(permission);
}

export function parseScopes(scope: string): Set<string> {
  return new Set(scope.split(/\s+/).filter(Boolean));
}
