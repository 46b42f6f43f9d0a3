/**
 * The helpers of the tests of the GraphQL endpoint as a platform (test/graphql/authentication,
 * permissions, dataloader, limits and explorer): tokens of given scopes, REST set-up as the admin,
 * and a fixture of one record of each kind (and deleted ones, for the restore mutations).
 */
import type { Permission } from '../../src/auth/caller.js';
import { svc, useService, type Reply } from './service.js';

export { svc, useService };
import { uniq } from './names.js';
import { tokenFor as tokenForService } from './users.js';
export { uniq };

export const PERMISSIONS: Permission[] = [
  'user:read',
  'user:write',
  'token:read',
  'token:write',
  'application:read',
  'application:write',
  'role:read',
  'role:write',
  'webhook:read',
  'webhook:write',
];
export const RESOURCES = ['user', 'token', 'application', 'role', 'webhook'] as const;

/** A GraphQL call that must succeed (no errors), as the admin. */
export async function gql(query: string, variables?: Record<string, unknown>): Promise<any> {
  const res = await svc.graphql(query, variables);
  if (res.status !== 200 || res.body?.errors) throw new Error(`${query} → ${res.status}: ${res.text}`);
  return res.body.data;
}

export async function admin(method: string, path: string, body?: unknown): Promise<any> {
  const res = await svc.request(method, path, body === undefined ? {} : { body });
  if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status}: ${res.text}`);
  return res.body;
}

/** A live token of this file's service with exactly this scope string (one per distinct scope). */
export const tokenFor = (scope: string): Promise<string> => tokenForService(svc, scope);

export const snapshot = () => svc.snapshot();

export async function get(path: string, headers: Record<string, string> = {}, base = svc): Promise<Reply> {
  const response = await fetch(`${base.url}${path}`, { headers });
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  return { status: response.status, headers: response.headers, body, text };
}

// ---------------------------------------------------------------------------------------------
// 1. Authentication
// ---------------------------------------------------------------------------------------------
export interface Fixture {
  user: number;
  /** A user with no links, for link mutations that must create something. */
  bareUser: number;
  token: number;
  application: number;
  role: number;
  /** Inactive (nothing is delivered), at a name that never resolves. */
  webhook: number;
  /** Soft-deleted records, for the restore mutations. */
  deleted: { user: number; token: number; application: number; role: number; webhook: number };
}

/** A webhook's body for fixtures: inactive, at a name that never resolves (RFC 2606's .invalid), so nothing is ever sent. */
export const quietWebhook = (name: string) => ({ url: `https://${name}.example.invalid/hook`, events: ['*'], active: false });

/** Creates over REST as the admin; REST answers the new id as a bare number. */
export async function adminCreate(path: string, body: unknown): Promise<number> {
  const id = await admin('POST', path, body);
  expect(id).toEqual(expect.any(Number));
  return id as number;
}

export async function makeFixture(): Promise<Fixture> {
  const user = await adminCreate('/user/', { firstName: 'Target', lastName: uniq('user') });
  const bareUser = await adminCreate('/user/', { firstName: 'Bare', lastName: uniq('user') });
  const owner = await adminCreate('/user/', { firstName: 'Owner', lastName: uniq('user') });
  const application = await adminCreate('/application/', { name: uniq('fixture-app') });
  const role = await adminCreate('/role/', { name: uniq('fixture-role') });
  const token = await adminCreate('/token/', { userID: owner, accessToken: uniq('fixture-token'), scope: 'openid profile' });
  const webhook = await adminCreate('/webhook/', quietWebhook(uniq('fixture')));
  // Links answer how many were created.
  expect(await admin('POST', `/user/${user}/application/`, [application])).toBe(1);
  expect(await admin('POST', `/user/${user}/role/`, [role])).toBe(1);
  const deleted = {
    user: await adminCreate('/user/', { firstName: 'Deleted', lastName: uniq('user') }),
    token: await adminCreate('/token/', { userID: owner, accessToken: uniq('deleted-token'), scope: 'openid' }),
    application: await adminCreate('/application/', { name: uniq('deleted-app') }),
    role: await adminCreate('/role/', { name: uniq('deleted-role') }),
    webhook: await adminCreate('/webhook/', quietWebhook(uniq('deleted'))),
  };
  for (const [resource, id] of Object.entries(deleted)) expect(await admin('DELETE', `/${resource}/${id}`)).toBe(1);
  return { user, bareUser, token, application, role, webhook, deleted };
}
