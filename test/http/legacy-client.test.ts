import { randomBytes } from 'node:crypto';
import { startTestService, type Reply, type TestService } from '../support/service.js';

/**
 * Replays what the original service's Go client (gostartkit `auth`, `web.DoReq`) sends for every
 * operation of the seed, in its shell form: every call carries Authorization, Content-Type and
 * Accept; list calls send all four list parameters, mostly empty; PATCH sends Attrs naming every
 * writable field. Each answer is then decoded as Go's encoding/json would decode it into the type
 * the original handler returned: 200/201/202 bodies into that type, 204 as success; any other
 * status is the client's error. Every operation must succeed.
 */
let svc: TestService;
let token: string;

beforeAll(async () => {
  svc = await startTestService();
  token = svc.adminToken;
});
afterAll(async () => {
  await svc?.stop();
});

// --- Go's encoding/json, for the types the original client decodes into ---------------------------

type GoType = 'uint64' | 'int64' | 'int' | 'string' | '*time.Time' | { struct: Record<string, GoType> } | { slice: GoType };

/** Why Go would refuse to decode `value` into `type`, or null when it decodes. */
function goDecodeError(value: unknown, type: GoType, at = '$'): string | null {
  if (value === null) return null; // null leaves any Go value at its zero value
  if (typeof type === 'string') {
    switch (type) {
      case 'uint64':
        return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? null : `${at}: cannot unmarshal ${JSON.stringify(value)} into uint64`;
      case 'int64':
      case 'int':
        return typeof value === 'number' && Number.isInteger(value) ? null : `${at}: cannot unmarshal ${JSON.stringify(value)} into ${type}`;
      case 'string':
        return typeof value === 'string' ? null : `${at}: cannot unmarshal ${typeof value} into string`;
      case '*time.Time':
        // time.Time.UnmarshalJSON: an RFC 3339 string.
        return typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(value)
          ? null
          : `${at}: not an RFC 3339 time`;
    }
  }
  if ('slice' in type) {
    if (!Array.isArray(value)) return `${at}: cannot unmarshal ${typeof value} into a slice`;
    for (const [i, item] of value.entries()) {
      const error = goDecodeError(item, type.slice, `${at}[${i}]`);
      if (error) return error;
    }
    return null;
  }
  if (typeof value !== 'object' || Array.isArray(value)) return `${at}: cannot unmarshal ${Array.isArray(value) ? 'array' : typeof value} into a struct`;
  // Go matches keys to fields case-insensitively and ignores unknown keys.
  const fields = new Map(Object.entries(type.struct).map(([name, t]) => [name.toLowerCase(), t]));
  for (const [key, item] of Object.entries(value)) {
    const fieldType = fields.get(key.toLowerCase());
    if (!fieldType) continue;
    const error = goDecodeError(item, fieldType, `${at}.${key}`);
    if (error) return error;
  }
  return null;
}

const TIME = '*time.Time' as const;
const User: GoType = {
  struct: {
    id: 'uint64',
    ref: 'uint64',
    outKey: 'string',
    firstName: 'string',
    lastName: 'string',
    avatarUrl: 'string',
    photoUrl: 'string',
    password: 'string',
    rememberToken: 'string',
    status: 'int',
    createdAt: TIME,
    updatedAt: TIME,
  },
};
const Token: GoType = {
  struct: {
    id: 'uint64',
    userID: 'uint64',
    accessToken: 'string',
    refreshToken: 'string',
    scope: 'string',
    code: 'string',
    codeChallenge: 'string',
    tokenType: 'string',
    expireAt: TIME,
    client: 'string',
    version: 'string',
    createdAt: TIME,
    updatedAt: TIME,
  },
};
const Application: GoType = { struct: { id: 'uint64', name: 'string', right: 'int64', createdAt: TIME, updatedAt: TIME } };
const Role: GoType = { struct: { id: 'uint64', name: 'string', createdAt: TIME, updatedAt: TIME } };
const ApplicationUser: GoType = { struct: { userID: 'uint64', applicationID: 'uint64', right: 'int64', createdAt: TIME, updatedAt: TIME } };

// --- the client ---------------------------------------------------------------------------------

interface Outcome {
  operation: string;
  status: number;
  error: string | null;
  value: unknown;
}
const outcomes: Outcome[] = [];

/** web.DoReq: sends the call, then decodes a 200/201/202 body into `type`; 204 is success. */
async function doReq(
  operation: string,
  method: string,
  path: string,
  type: GoType,
  options: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<any> {
  const res: Reply = await svc.request(method, path, {
    token,
    ...(options.body === undefined ? {} : { body: options.body }),
    headers: { 'Content-Type': 'application/json', Accept: 'application/json', ...options.headers },
  });
  let error: string | null;
  if (res.status === 204) error = null;
  else if ([200, 201, 202].includes(res.status)) {
    error = goDecodeError(res.body, type);
    // Go would take null for a slice or a struct (a zero value), but then the client has nothing.
    if (!error && res.body === null) error = 'a null answer';
  } else error = `HTTP ${res.status}: ${res.text.slice(0, 200)}`;
  outcomes.push({ operation, status: res.status, error, value: res.body });
  return res.body;
}

const list = (path: string, filter = '') => `${path}?filter=${encodeURIComponent(filter)}&orderBy=&page=&pageSize=`;
const USER_ATTRS = 'ref, outKey, firstName, lastName, avatarUrl, photoUrl, status';
const TOKEN_ATTRS = 'userID, accessToken, refreshToken, scope, code, codeChallenge, tokenType, expireAt';

test('the original client gets a usable answer from every operation of the seed', async () => {
  const name = randomBytes(4).toString('hex');
  const applications: number[] = [];
  for (const n of [1, 2]) applications.push((await svc.request('POST', '/application/', { body: { name: `${name}-app-${n}` } })).body);
  const roles: number[] = [];
  for (const n of [1, 2]) roles.push((await svc.request('POST', '/role/', { body: { name: `${name}-role-${n}` } })).body);

  // Users: apply an id, create the record with it (a Go struct's zero values included).
  const userID = await doReq('Apply User.ID', 'POST', '/apply/user/id/', 'uint64');
  const user = { id: userID, ref: 0, outKey: '', firstName: 'Legacy', lastName: name, avatarUrl: '', photoUrl: '', status: 1 };
  expect(await doReq('Create User', 'POST', '/user/', 'uint64', { body: user })).toBe(userID);
  await doReq('Get Users', 'GET', list('/user/'), { slice: User });
  await doReq('Get Users (filtered)', 'GET', list('/user/', `lastName eq '${name}' and status ge 1`), { slice: User });
  expect(await doReq('Get User', 'GET', `/user/${userID}`, User)).toMatchObject({ id: userID, lastName: name });
  expect(await doReq('Update User', 'PUT', `/user/${userID}`, 'int64', { body: { ...user, firstName: 'Updated' } })).toBe(1);
  expect(
    await doReq('Patch User', 'PATCH', `/user/${userID}`, 'int64', { body: { ...user, lastName: `${name}-patched` }, headers: { Attrs: USER_ATTRS } }),
  ).toBe(1);
  expect(await doReq('Update User Status (PATCH)', 'PATCH', `/user/${userID}/status/`, 'int64', { body: { status: 2 } })).toBe(1);
  expect(await doReq('Update User Status (PUT)', 'PUT', `/user/${userID}/status/`, 'int64', { body: { status: 3 } })).toBe(1);

  // Tokens.
  const tokenID = await doReq('Apply Token.ID', 'POST', '/apply/token/id/', 'uint64');
  const record = {
    id: tokenID,
    userID,
    accessToken: `legacy-${name}`,
    refreshToken: '',
    scope: 'user:read',
    code: '',
    codeChallenge: '',
    tokenType: 'bearer',
    expireAt: null,
  };
  expect(await doReq('Create Token', 'POST', '/token/', 'uint64', { body: record })).toBe(tokenID);
  await doReq('Get Tokens', 'GET', list('/token/', `userID eq ${userID}`), { slice: Token });
  expect(await doReq('Get Token', 'GET', `/token/${tokenID}`, Token)).toMatchObject({ id: tokenID, userID });
  expect(await doReq('Update Token', 'PUT', `/token/${tokenID}`, 'int64', { body: { ...record, scope: 'user:read token:read' } })).toBe(1);
  expect(await doReq('Patch Token', 'PATCH', `/token/${tokenID}`, 'int64', { body: { ...record, tokenType: 'mac' }, headers: { Attrs: TOKEN_ATTRS } })).toBe(1);

  // Links.
  expect(await doReq('Link Applications', 'POST', `/user/${userID}/application/`, 'int64', { body: applications })).toBe(2);
  await doReq('Get Applications', 'GET', list(`/user/${userID}/application/`), { slice: Application });
  await doReq('Get ApplicationUser', 'GET', `/user/${userID}/application/${applications[0]}`, ApplicationUser);
  expect(await doReq('Update ApplicationUser', 'PUT', `/user/${userID}/application/${applications[0]}`, 'int64', { body: { right: 2 ** 40 + 5 } })).toBe(1);
  expect(await doReq('UnLink Applications', 'DELETE', `/user/${userID}/application/`, 'int64', { body: [applications[1]] })).toBe(1);
  expect(await doReq('Link Roles', 'POST', `/user/${userID}/role/`, 'int64', { body: roles })).toBe(2);
  await doReq('Get Roles', 'GET', list(`/user/${userID}/role/`), { slice: Role });
  expect(await doReq('UnLink Roles', 'DELETE', `/user/${userID}/role/`, 'int64', { body: roles })).toBe(2);

  // Deletion last.
  expect(await doReq('Destroy Token', 'DELETE', `/token/${tokenID}`, 'int64')).toBe(1);
  expect(await doReq('Destroy User', 'DELETE', `/user/${userID}`, 'int64')).toBe(1);

  const failed = outcomes.filter((o) => o.error !== null).map((o) => `${o.operation}: ${o.error}`);
  expect(failed).toEqual([]);
  expect(outcomes).toHaveLength(25);

  // What the calls did, read back from the database.
  const [u] = await svc.sql<Record<string, unknown>>('select first_name, last_name, status, deleted_at from users where id = ?', [userID]);
  // The PATCH named every field and sent the whole struct: firstName went back to "Legacy".
  expect(u).toMatchObject({ first_name: 'Legacy', last_name: `${name}-patched`, status: 3, deleted_at: expect.anything() });
  const [t] = await svc.sql<Record<string, unknown>>('select scope, token_type, deleted_at from tokens where id = ?', [tokenID]);
  expect(t).toMatchObject({ scope: 'user:read', token_type: 'mac', deleted_at: expect.anything() });
  const [link] = await svc.sql<{ right: string }>('select "right"::text as right from user_applications where user_id = ? and application_id = ?', [
    userID,
    applications[0],
  ]);
  expect(link.right).toBe(String(2 ** 40 + 5));
});

test('the decoder refuses what the original client refused: the envelope, {"id"} and {"affected"} answers', () => {
  expect(goDecodeError({ total: 1, page: 1, pageSize: 20, data: [] }, { slice: User })).toMatch(/into a slice/);
  expect(goDecodeError({ id: 7 }, 'uint64')).toMatch(/into uint64/);
  expect(goDecodeError({ affected: 1 }, 'int64')).toMatch(/into int64/);
  expect(goDecodeError({ id: 7, firstName: 'A', status: 1.5 }, User)).toMatch(/status/);
  expect(goDecodeError({ createdAt: '2026-11-21 09:30:00' }, User)).toMatch(/RFC 3339/);
  expect(goDecodeError([{ id: 1, name: 'x', right: 3 }], { slice: Application })).toBeNull();
});
