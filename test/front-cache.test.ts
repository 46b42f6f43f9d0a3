import { createServer, type RequestListener, type Server } from 'node:http';
import { connect } from 'node:net';
import Koa from 'koa';
import { authenticate } from '../src/auth/authenticate.js';
import { ReadCache } from '../src/db/read-cache.js';
import { answerCachedReadsFirst } from '../src/http/front-cache.js';
import type { AppState } from '../src/http/context.js';
import { errorHandler } from '../src/http/errors.js';
import { jsonBody, requestId, requireCaller } from '../src/http/middleware.js';
import { graphqlAnswerKey, type CachedAnswer } from '../src/graphql/response-cache.js';
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
/** The GraphQL query texts the stand-in endpoint would keep answers of (knownCacheable). */
const cacheable = new Set<string>();

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
  app.use(jsonBody);
  app.use((ctx) => {
    ctx.status = 203;
    ctx.body = { from: 'app', body: ctx.request.body };
  });
  return app.callback() as RequestListener;
}

async function frontOn(options: { cors?: boolean; basePath?: string } = {}): Promise<string> {
  const log = createLogger('info', (line) => lines.push(line));
  const front = answerCachedReadsFirst(
    { db: svc.running.db, answers, graphqlCacheable: (query) => cacheable.has(query), basePath: options.basePath ?? '', cors: options.cors ?? false, log, outage: new DatabaseOutage(log), metrics: null },
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

describe('GraphQL POSTs', () => {
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json' };
  const post = (params: unknown, extra: Record<string, string> = {}) =>
    fetch(`${base}/graphql`, { method: 'POST', headers: { Authorization: `Bearer ${svc.adminToken}`, ...headers, ...extra }, body: JSON.stringify(params) });

  /** Keeps an answer for these parameters, for the admin token's scopes and the current directory version. */
  async function keep(params: Record<string, unknown>): Promise<string> {
    const caller = await authenticate(svc.running.db, `Bearer ${svc.adminToken}`, '', 'setup');
    const body = Buffer.from(JSON.stringify({ data: { kept: params.variables ?? null } }));
    const answer: CachedAnswer = { body, type: 'application/json; charset=utf-8', operation: { name: 'Kept', type: 'query' } };
    answers.set(caller, graphqlAnswerKey('POST', headers['Content-Type'], headers.Accept, params), answer, body.length);
    cacheable.add(params.query as string);
    return body.toString();
  }

  test('a kept answer is written without the app, with its type, the operation in the log line, one statement', async () => {
    const params = { query: 'query Kept($id: ID!) { user(id: $id) { id } }', variables: { id: '1' } };
    const kept = await keep(params);
    seen.length = 0;
    svc.queries.length = 0;
    const reply = await post(params, { 'X-Request-Id': 'gql-front' });
    expect({ status: reply.status, app: seen.length, statements: svc.queries.length }).toEqual({ status: 200, app: 0, statements: 1 });
    expect(await reply.text()).toBe(kept);
    expect(reply.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(reply.headers.get('x-request-id')).toBe('gql-front');
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ requestId: 'gql-front', method: 'POST', route: '/graphql', status: 200, operationName: 'Kept', operationType: 'query', readCache: 'hit' });
    // Other variables, another Accept: not kept, the app answers.
    expect((await post({ ...params, variables: { id: '2' } })).status).toBe(203);
    expect((await post(params, { Accept: 'application/graphql-response+json' })).status).toBe(203);
  });

  test('every other POST reaches the app with its body as sent, and one bearer lookup', async () => {
    const params = { query: '{ kept }', variables: { pad: 'x' } };
    await keep(params);
    const big = { query: '{ big }', variables: { pad: 'y'.repeat(20 * 1024) } }; // read ahead, over the stream's 16 KiB buffer
    const huge = { query: '{ huge }', variables: { pad: 'z'.repeat(40 * 1024) } }; // over 32 KiB: not read ahead
    const auth = `Authorization: Bearer ${svc.adminToken}\r\n`;
    const text = JSON.stringify(params);
    const request = (body: string, more = '') =>
      `POST /graphql HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nAccept: application/json\r\n${more}Content-Length: ${Buffer.byteLength(body)}\r\n`;
    const echoed = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4).replace(/^[0-9a-f]+\r\n|\r\n0\r\n\r\n$/g, '')).body;
    const cases: [string, () => Promise<unknown>, unknown][] = [
      ['not kept', async () => (await (await post({ ...params, variables: { pad: 'other' } })).json() as { body: unknown }).body, { ...params, variables: { pad: 'other' } }],
      ['20 KiB', async () => (await (await post(big)).json() as { body: unknown }).body, big],
      ['40 KiB', async () => (await (await post(huge)).json() as { body: unknown }).body, huge],
      ['in slow parts', async () => {
        const socket = connect(Number(new URL(base).port), '127.0.0.1');
        await new Promise((r) => socket.once('connect', r));
        let answer = '';
        socket.on('data', (chunk) => (answer += chunk));
        const ended = new Promise((r) => socket.once('end', r));
        const body = JSON.stringify({ ...params, variables: { pad: 'slow' } });
        socket.write(`${request(body, 'Connection: close\r\n')}\r\n${body.slice(0, 10)}`);
        await new Promise((r) => setTimeout(r, 100));
        socket.write(body.slice(10));
        await ended;
        return echoed(answer);
      }, { ...params, variables: { pad: 'slow' } }],
      ['Content-Encoding: identity', async () => echoed(await raw(base, `${request(text, 'Content-Encoding: identity\r\nConnection: close\r\n')}\r\n${text}`)), params],
      ['text/plain', async () => (await post(params, { 'Content-Type': 'text/plain' })).status, 415],
      ['a query whose answers are not kept (a mutation, say)', async () => (await (await post({ query: 'mutation { x }' })).json() as { body: unknown }).body, { query: 'mutation { x }' }],
      ['not JSON', async () => (await raw(base, `${request('{"query":', 'Connection: close\r\n')}\r\n{"query":`)).split('\r\n')[0], 'HTTP/1.1 400 Bad Request'],
    ];
    for (const [name, send, expected] of cases) {
      seen.length = 0;
      svc.queries.length = 0;
      const got = await send();
      const lookups = svc.queries.filter((q) => /from tokens t join users u/.test(q)).length;
      expect({ name, got, app: seen.length, lookups }).toEqual({ name, got: expected, app: 1, lookups: 1 });
    }
  });

  test('two POSTs in one write on a kept-alive connection: each answered, the second after the first', async () => {
    const kept = await keep({ query: '{ first }' });
    const second = JSON.stringify({ query: '{ second }' });
    const first = JSON.stringify({ query: '{ first }' });
    const auth = `Authorization: Bearer ${svc.adminToken}\r\n`;
    const head = (body: string, more = '') => `POST /graphql HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nAccept: application/json\r\n${more}Content-Length: ${body.length}\r\n\r\n${body}`;
    const answer = await raw(base, head(first) + head(second, 'Connection: close\r\n'));
    const parts = answer.split(/(?=HTTP\/1\.1 )/);
    expect(parts.map((part) => part.split('\r\n')[0])).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 203 Non-Authoritative Information']);
    expect(parts[0].endsWith(kept)).toBe(true);
    expect(parts[1]).toContain('"query":"{ second }"');
  });
});
