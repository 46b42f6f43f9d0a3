import { startTestService, type TestService } from '../support/service.js';

/** SPEC §8 CORS: the allow-list, headers on every answer (errors and 401s too), token-free preflights. */
let svc: TestService;
let open: TestService;
const APP = 'http://127.0.0.1:5173';

beforeAll(async () => {
  svc = await startTestService({ CORS_ORIGINS: `https://app.example.com, ${APP}` });
  open = await startTestService({ CORS_ORIGINS: '*' });
});
afterAll(async () => {
  await svc?.stop();
  await open?.stop();
});

const exposed = 'Location,Link,X-Total-Count,X-Request-Id,Preference-Applied,WWW-Authenticate';

test('an allowed origin gets Access-Control-Allow-Origin, Vary: Origin and the exposed headers on a list', async () => {
  const res = await svc.request('GET', '/user/', { headers: { Origin: APP } });
  expect(res.status).toBe(200);
  expect(res.headers.get('access-control-allow-origin')).toBe(APP);
  expect(res.headers.get('vary')).toMatch(/Origin/);
  expect(res.headers.get('access-control-expose-headers')).toBe(exposed);
  expect(res.headers.get('access-control-allow-credentials')).toBeNull();
});

test('errors and 401s carry the CORS headers too, so a browser app can read them', async () => {
  const unauthorized = await svc.request('GET', '/user/', { token: null, headers: { Origin: APP } });
  expect(unauthorized.status).toBe(401);
  expect(unauthorized.headers.get('access-control-allow-origin')).toBe(APP);
  expect(unauthorized.headers.get('access-control-expose-headers')).toContain('WWW-Authenticate');
  const notFound = await svc.request('GET', '/user/999999', { headers: { Origin: APP } });
  expect(notFound.status).toBe(404);
  expect(notFound.headers.get('access-control-allow-origin')).toBe(APP);
  const gql = await svc.request('POST', '/graphql', { token: null, body: { query: '{ viewer { id } }' }, headers: { Origin: APP } });
  expect(gql.status).toBe(401);
  expect(gql.headers.get('access-control-allow-origin')).toBe(APP);
});

test('a preflight needs no token: 204 with the path methods, the allowed headers and a max age', async () => {
  const res = await svc.request('OPTIONS', '/user/', {
    token: null,
    headers: { Origin: APP, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization, content-type, prefer' },
  });
  expect(res.status).toBe(204);
  expect(res.headers.get('access-control-allow-origin')).toBe(APP);
  expect(res.headers.get('access-control-allow-methods')?.split(', ').sort()).toEqual(['GET', 'HEAD', 'OPTIONS', 'POST']);
  expect(res.headers.get('access-control-allow-headers')).toBe('Authorization,Content-Type,Accept,Attrs,Prefer,X-Client,X-Request-Id,apollo-require-preflight');
  expect(res.headers.get('access-control-max-age')).toBe('86400');
  const item = await svc.request('OPTIONS', '/user/7', { token: null, headers: { Origin: APP, 'Access-Control-Request-Method': 'PATCH' } });
  expect(item.headers.get('access-control-allow-methods')?.split(', ').sort()).toEqual(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'PUT']);
  const graphql = await svc.request('OPTIONS', '/graphql', { token: null, headers: { Origin: APP, 'Access-Control-Request-Method': 'POST' } });
  expect(graphql.status).toBe(204);
  expect(graphql.headers.get('access-control-allow-methods')?.split(', ').sort()).toEqual(['GET', 'HEAD', 'OPTIONS', 'POST']);
  // Paths match in any letter case: /GRAPHQL is the same endpoint, with the same methods.
  const upper = await svc.request('OPTIONS', '/GRAPHQL', { token: null, headers: { Origin: APP, 'Access-Control-Request-Method': 'POST' } });
  expect(upper.headers.get('access-control-allow-methods')?.split(', ').sort()).toEqual(['GET', 'HEAD', 'OPTIONS', 'POST']);
});

test('a preflight to an unknown path allows no method', async () => {
  const res = await svc.request('OPTIONS', '/no/such/path', { token: null, headers: { Origin: APP, 'Access-Control-Request-Method': 'GET' } });
  expect(res.headers.get('access-control-allow-methods')).toBeNull();
});

test('an origin not on the list gets no CORS headers (the browser blocks it); a plain OPTIONS is answered as before', async () => {
  const res = await svc.request('GET', '/user/', { headers: { Origin: 'https://evil.example' } });
  expect(res.status).toBe(200);
  expect(res.headers.get('access-control-allow-origin')).toBeNull();
  const preflight = await svc.request('OPTIONS', '/user/', {
    token: null,
    headers: { Origin: 'https://evil.example', 'Access-Control-Request-Method': 'POST' },
  });
  expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
  expect(preflight.headers.get('access-control-allow-methods')).toBeNull();
  const plain = await svc.request('OPTIONS', '/user/', { token: null });
  expect(plain.status).toBe(204);
  expect(plain.headers.get('allow')).toBe('HEAD, GET, POST, OPTIONS');
});

test('CORS_ORIGINS=* allows any origin, echoed; without CORS_ORIGINS there are no CORS headers', async () => {
  const res = await open.request('GET', '/healthz', { token: null, headers: { Origin: 'https://anything.example:8443' } });
  expect(res.headers.get('access-control-allow-origin')).toBe('https://anything.example:8443');
  const none = await startTestService();
  try {
    const plain = await none.request('GET', '/user/', { headers: { Origin: APP } });
    expect(plain.headers.get('access-control-allow-origin')).toBeNull();
    expect(plain.headers.get('vary')).toBeNull();
  } finally {
    await none.stop();
  }
});

test('a malformed CORS_ORIGINS stops the start with a clear message', async () => {
  await expect(startTestService({ CORS_ORIGINS: 'app.example.com' })).rejects.toThrow(/CORS_ORIGINS must list origins/);
});

test('the local explorer (/graphiql) and its files: a preflight from an allowed origin is answered, a plain OPTIONS too (204 with Allow)', async () => {
  for (const path of ['/graphiql', '/graphiql/graphiql.js']) {
    const preflight = await svc.request('OPTIONS', path, { token: null, headers: { Origin: APP, 'Access-Control-Request-Method': 'GET' } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(APP);
    expect(preflight.headers.get('access-control-allow-methods')?.split(', ').sort()).toEqual(['GET', 'HEAD', 'OPTIONS']);
    const plain = await svc.request('OPTIONS', path, { token: null, headers: { Origin: APP } });
    expect(plain.status).toBe(204);
    expect(plain.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
  }
});
