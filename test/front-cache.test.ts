import { createServer, type RequestListener, type Server } from 'node:http';
import { connect } from 'node:net';
import Koa from 'koa';
import { authenticate } from '../src/auth/authenticate.js';
import { ReadCache } from '../src/db/read-cache.js';
import { answerCachedReadsFirst } from '../src/http/front-cache.js';
import type { AppState } from '../src/http/context.js';
import { errorHandler } from '../src/http/errors.js';
import { requestId, requireCaller } from '../src/http/middleware.js';
import { restReadKey, type CachedRead } from '../src/http/rest-cache.js';
import { DatabaseOutage } from '../src/observability/outage.js';
import { createLogger } from '../src/shared/log.js';
import { startTestService, type TestService } from './support/service.js';

/**
 * src/http/front-cache.ts on its own, in front of a stand-in app made of the real request-id and
 * authentication middleware, on the service's database: which requests it answers itself (the
 * app never sees them), and that every other one reaches the app with its request id and its
 * bearer lookup, sent once. test/read-cache.test.ts checks its answers against the real app's.
 */

let svc: TestService;
const answers = new ReadCache(1024 * 1024);
const lines: string[] = [];
/** The requests the stand-in app got: their path, request id, and the caller it authenticated. */
const seen: { url: string; requestId: string; userId?: number }[] = [];
const servers: Server[] = [];

function standInApp(): RequestListener {
  const app = new Koa<AppState>();
  app.use(async (ctx, next) => {
    const entry: (typeof seen)[number] = { url: ctx.originalUrl, requestId: '' };
    seen.push(entry);
    try {
      await next();
    } finally {
      entry.requestId = ctx.state.requestId;
      entry.userId = ctx.state.caller?.userId;
    }
  });
  app.use(requestId);
  app.use(errorHandler(createLogger('silent')));
  app.use(requireCaller(svc.running.db));
  app.use((ctx) => {
    ctx.status = 203;
    ctx.body = { from: 'app' };
  });
  return app.callback() as RequestListener;
}

async function frontOn(options: { cors?: boolean; basePath?: string } = {}): Promise<string> {
  const log = createLogger('info', (line) => lines.push(line));
  const front = answerCachedReadsFirst(
    { db: svc.running.db, answers, basePath: options.basePath ?? '', cors: options.cors ?? false, log, outage: new DatabaseOutage(log), metrics: null },
    standInApp(),
  );
  const server = createServer(front);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

/** Puts an answer for `url` in the cache, for the admin token's scopes and the current directory version. */
async function cache(url: string): Promise<void> {
  const caller = await authenticate(svc.running.db, `Bearer ${svc.adminToken}`, '', 'setup');
  const body = Buffer.from(JSON.stringify({ cached: url }));
  answers.set(caller, restReadKey(url), { body, headers: [['content-type', 'application/json; charset=utf-8'], ['x-total-count', '7']], route: '/role' } satisfies CachedRead, body.length);
}

/** A request written as given on a new connection; the raw answer. */
async function raw(base: string, request: string): Promise<string> {
  const socket = connect(Number(new URL(base).port), '127.0.0.1');
  await new Promise((r) => socket.once('connect', r));
  let answer = '';
  socket.on('data', (chunk) => (answer += chunk));
  const ended = new Promise((r) => socket.once('end', r));
  socket.write(request);
  await ended;
  return answer;
}

let base: string;
beforeAll(async () => {
  svc = await startTestService();
  base = await frontOn();
});
afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
  await svc?.stop();
});

const get = (url: string, headers: Record<string, string> = {}, root = base) =>
  fetch(root + url, { headers: { Authorization: `Bearer ${svc.adminToken}`, ...headers } });

test('a cached read is answered without the app: the cached headers and body, its request id, one statement', async () => {
  for (const url of ['/role', '/role/', '/role/?pageSize=1', '/user/12', '/user/12/application/3']) {
    await cache(url);
    seen.length = 0;
    svc.queries.length = 0;
    const reply = await get(url, { 'X-Request-Id': 'front-1' });
    expect({ url, status: reply.status, app: seen.length, statements: svc.queries.length }).toEqual({ url, status: 200, app: 0, statements: 1 });
    expect(await reply.json()).toEqual({ cached: url });
    expect(reply.headers.get('x-request-id')).toBe('front-1');
    expect(reply.headers.get('x-total-count')).toBe('7');
    expect(reply.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(reply.headers.get('vary')).toBeNull();
    const line = JSON.parse(lines.at(-1)!);
    expect(line).toMatchObject({ msg: 'request', requestId: 'front-1', method: 'GET', route: '/role', status: 200, readCache: 'hit' });
    expect(typeof line.ms).toBe('number');
  }
});

test('everything else reaches the app with the request id and the one bearer lookup', async () => {
  // Cached under a directory version that a write has moved since.
  await cache('/role/?before=write');
  await svc.request('POST', '/role/', { body: { name: `front-${Date.now()}` } });
  await cache('/role/');
  const auth = `Authorization: Bearer ${svc.adminToken}\r\n`;
  const cases: [string, () => Promise<unknown>][] = [
    ['not cached', () => get('/role/?page=9')],
    ['after a write (another directory version)', () => get('/role/?before=write')],
    ['Content-Length: 0', () => raw(base, `GET /role/ HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: 0\r\nConnection: close\r\n\r\n`)],
    ['Transfer-Encoding', () => raw(base, `GET /role/ HTTP/1.1\r\nHost: x\r\n${auth}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n`)],
    ['two Host headers', () => raw(base, `GET /role/ HTTP/1.1\r\nHost: x\r\nHost: y\r\n${auth}Connection: close\r\n\r\n`)],
    ['no Host header', () => raw(base, `GET /role/ HTTP/1.0\r\n${auth}\r\n`)],
    ['two Authorization headers', () => raw(base, `GET /role/ HTTP/1.1\r\nHost: x\r\n${auth}${auth}Connection: close\r\n\r\n`)],
    ['HEAD', () => fetch(`${base}/role/`, { method: 'HEAD', headers: { Authorization: `Bearer ${svc.adminToken}` } })],
    ['not a directory path', () => get('/token/')],
    ['an unknown token', () => get('/role/', { Authorization: 'Bearer no-such-token' })],
  ];
  for (const [name, send] of cases) {
    seen.length = 0;
    svc.queries.length = 0;
    await send();
    const lookups = svc.queries.filter((q) => /from tokens t join users u/.test(q)).length;
    expect({ name, app: seen.length, lookups: name === 'two Authorization headers' ? 'refused by the app' : lookups }).toEqual({
      name,
      app: 1,
      lookups: name === 'two Authorization headers' ? 'refused by the app' : 1,
    });
    expect({ name, requestId: seen[0].requestId }).toEqual({ name, requestId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
  }
  // The app's caller is the one the front looked up, and its request id the one the answer carries.
  seen.length = 0;
  const reply = await get('/role/?page=10', { 'X-Request-Id': 'handed-over' });
  expect(reply.status).toBe(203);
  expect(reply.headers.get('x-request-id')).toBe('handed-over');
  expect(seen[0]).toMatchObject({ requestId: 'handed-over', userId: expect.any(Number) });
});

test('with CORS on, a request with an Origin goes to the app; the others get Vary: Origin', async () => {
  const withCors = await frontOn({ cors: true });
  await cache('/role/?cors');
  seen.length = 0;
  const hit = await get('/role/?cors', {}, withCors);
  expect(hit.status).toBe(200);
  expect(hit.headers.get('vary')).toBe('Origin');
  expect(seen).toHaveLength(0);
  const fromApp = await get('/role/?cors', { Origin: 'https://app.example' }, withCors);
  expect(fromApp.status).toBe(203);
  expect(seen).toHaveLength(1);
});

test('under a base path, only paths below it are answered', async () => {
  const below = await frontOn({ basePath: '/api' });
  await cache('/api/role/');
  await cache('/role/');
  seen.length = 0;
  expect((await get('/api/role/', {}, below)).status).toBe(200);
  expect(seen).toHaveLength(0);
  expect((await get('/role/', {}, below)).status).toBe(203);
  expect((await get('/apirole/', {}, below)).status).toBe(203);
  expect(seen).toHaveLength(2);
});
