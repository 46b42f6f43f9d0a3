/**
 * Users and tokens a test needs as its starting point, made over REST as any client makes them
 * (POST /user/, POST /token/) and checked on the way: one helper for every file, whatever service
 * it started (a TestService, or a file's own request function that checks or records every reply).
 */
import { uniq } from './names.js';
import type { Reply, RequestOptions, TestService } from './service.js';

/** What sends a request: a TestService, or `{ request: call }` with a file's own `call`. */
export interface Requester {
  request(method: string, path: string, options?: RequestOptions): Promise<Reply>;
}

/**
 * POST /user/ with `fields` (by default a first name and a last name no other test uses), as the
 * admin unless `options.token` says otherwise: the default answer (201, the new id as a bare
 * number, Location /user/{id}) is checked; the id.
 */
export async function createUser(
  client: Requester,
  fields: Record<string, unknown> = { firstName: 'Test', lastName: uniq('user') },
  options: RequestOptions = {},
): Promise<number> {
  const res = await client.request('POST', '/user/', { ...options, body: fields });
  expect({ status: res.status, body: res.body, location: res.headers.get('location') }).toEqual({
    status: 201,
    body: expect.any(Number),
    location: `/user/${res.body}`,
  });
  return res.body as number;
}

/**
 * POST /token/ for `userID` with `fields` (an access token no other test uses unless they give
 * one), as the admin unless `options.token` says otherwise: the default answer (201, the new id,
 * Location /token/{id}) is checked; its id and access token.
 */
export async function createToken(
  client: Requester,
  userID: number,
  fields: Record<string, unknown> = {},
  options: RequestOptions = {},
): Promise<{ id: number; accessToken: string }> {
  const body = { userID, accessToken: uniq('token'), ...fields };
  const res = await client.request('POST', '/token/', { ...options, body });
  expect({ status: res.status, body: res.body, location: res.headers.get('location') }).toEqual({
    status: 201,
    body: expect.any(Number),
    location: `/token/${res.body}`,
  });
  return { id: res.body as number, accessToken: body.accessToken as string };
}

/** A new user and a token of it with `scope` (and the other `fields`): the token's id, access token and owner. */
export async function userWithToken(
  client: Requester,
  scope: string,
  fields: Record<string, unknown> = {},
): Promise<{ id: number; accessToken: string; userID: number }> {
  const userID = await createUser(client);
  return { ...(await createToken(client, userID, { scope, ...fields })), userID };
}

const tokensByScope = new WeakMap<TestService, Map<string, Promise<string>>>();
/** A live token of the service with exactly this scope string, made once per service and scope (svc.tokenWith) and shared by the tests that ask again. */
export function tokenFor(service: TestService, scope: string): Promise<string> {
  let tokens = tokensByScope.get(service);
  if (!tokens) tokensByScope.set(service, (tokens = new Map()));
  let token = tokens.get(scope);
  if (!token) tokens.set(scope, (token = service.tokenWith(scope)));
  return token;
}
