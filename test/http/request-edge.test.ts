import { rawExchange } from '../support/raw-http.js';
import { startTestService, type TestService } from '../support/service.js';
import { untilLogged } from '../support/wait.js';

/**
 * The edge of every request (src/http/middleware.ts, requestEdge): CORS around the checks, a
 * preflight answered before them and logged like any request, and an empty JSON body refused the
 * same way however it is framed.
 */
const ORIGIN = 'https://app.example';
let svc: TestService;
let userId: number;

beforeAll(async () => {
  svc = await startTestService({ CORS_ORIGINS: ORIGIN });
  userId = (await svc.request('POST', '/user/', { body: { firstName: 'Edge', lastName: 'Case' } })).body;
});
afterAll(() => svc?.stop());

/** Sends raw bytes on a new connection, half-closes it, and returns everything the service wrote until it closed. */
const exchange = (raw: string) => rawExchange(svc.url, (connection) => connection.end(raw));

test('a preflight is answered 204 with the CORS headers before any check, and logged', async () => {
  const res = await svc.request('OPTIONS', `/user/${userId}`, {
    token: null,
    headers: { Origin: ORIGIN, 'Access-Control-Request-Method': 'PATCH', 'X-Request-Id': 'preflight-1' },
  });
  expect(res.status).toBe(204);
  expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
  expect(res.headers.get('access-control-allow-methods')).toContain('PATCH');
  const line = await untilLogged(svc, 'the preflight', (l) => l.msg === 'request' && l.requestId === 'preflight-1');
  expect(line).toMatchObject({ method: 'OPTIONS', status: 204 });
});

test('an answer refused at the edge (no Host) still carries the CORS headers of an allowed origin', async () => {
  const answer = await exchange(`GET /user/${userId} HTTP/1.1\r\nOrigin: ${ORIGIN}\r\nAuthorization: Bearer ${svc.adminToken}\r\nConnection: close\r\n\r\n`);
  expect(answer).toMatch(/^HTTP\/1\.1 400 /);
  expect(answer).toMatch(/\r\naccess-control-allow-origin: https:\/\/app\.example\r\n/i);
  expect(answer).toContain('Host header');
});

test.each([
  ['Content-Length: 0', 'Content-Length: 0\r\n\r\n'],
  ['chunked', 'Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
])('an empty JSON body (%s) is no JSON object: 400, nothing changed', async (_framing, tail) => {
  const before = await svc.snapshot();
  const answer = await exchange(
    `PATCH /user/${userId} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.adminToken}\r\nContent-Type: application/json\r\nAttrs: firstName\r\nConnection: close\r\n${tail}`,
  );
  expect(answer).toMatch(/^HTTP\/1\.1 400 /);
  expect(answer).toContain('must be a JSON object');
  expect(await svc.snapshot()).toEqual(before);
});

test('a request with no body at all (no length, no chunks) reads as an empty object where a body is optional', async () => {
  // POST /user/{id}/restore takes no body: without one it runs (409: the user is live).
  const answer = await exchange(`POST /user/${userId}/restore HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.adminToken}\r\nConnection: close\r\n\r\n`);
  expect(answer).toMatch(/^HTTP\/1\.1 409 /);
});
