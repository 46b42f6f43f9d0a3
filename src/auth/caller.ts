import { AppError } from '../errors.js';

export type Resource = 'user' | 'token' | 'application' | 'role' | 'webhook';
export type Permission = `${Resource}:${'read' | 'write'}` | 'audit:read';

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

/** `*` grants everything; `user:*` every permission on users; else the exact permission. */
export function can(caller: Caller, permission: Permission): boolean {
  const { scopes } = caller;
  return scopes.has('*') || scopes.has(permission) || scopes.has(`${permission.split(':')[0]}:*`);
}

export function requirePermission(caller: Caller, permission: Permission): void {
  if (!can(caller, permission)) throw AppError.forbidden(permission);
}

/** Every permission the service checks. */
export const PERMISSIONS: readonly Permission[] = [
  ...(['user', 'token', 'application', 'role', 'webhook'] as const).flatMap((resource) => [`${resource}:read`, `${resource}:write`] as const),
  'audit:read',
];

/** Whether a scope word grants anything in this service (as `can` reads it): `*`, a permission, or `<resource>:*`. */
export function grantsSomething(word: string): boolean {
  return word === '*' || PERMISSIONS.some((permission) => permission === word || `${permission.split(':')[0]}:*` === word);
}

export function parseScopes(scope: string): Set<string> {
  return new Set(scope.split(/\s+/).filter(Boolean));
}
