import { rawRequest } from '../support/raw-http.js';
import { startTestService, type TestService } from '../support/service.js';
import { bearer, collect, untilSubscriptions, wsConnect } from '../support/subscriptions.js';
import { waitFor } from '../support/wait.js';

/** SPEC §8 "HTTP edges": what Node would answer itself still gets §6's JSON body and an X-Request-Id. */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

/** The answer to raw request bytes (each request here makes the server close the connection after it). */
const raw = (text: string) => rawRequest(svc.url, text);

test('no Host header: 400 with the JSON body and an X-Request-Id', async () => {
  const res = await raw(`GET /user/ HTTP/1.1\r\nAuthorization: Bearer ${svc.adminToken}\r\nConnection: close\r\n\r\n`);
  expect(res.status).toBe(400);
  expect(res.head).toMatch(/\r\nX-Request-Id: /i);
  expect(res.body).toMatchObject({ code: 400, error: 'BAD_REQUEST', message: expect.stringMatching(/Host/) });
});

test('two Host headers: 400 (RFC 9112 §3.2)', async () => {
  const res = await raw(`GET /healthz HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\nConnection: close\r\n\r\n`);
  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({ error: 'BAD_REQUEST', message: 'send one Host header, not 2' });
});

test('HTTP/1.0 without Host is fine (Host is an HTTP/1.1 requirement)', async () => {
  const res = await raw(`GET /healthz HTTP/1.0\r\n\r\n`);
  expect(res.status).toBe(200);
});

test('CONNECT gets a 405 with the JSON body, never a silent close', async () => {
  const res = await raw(`CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nX-Request-Id: edge-1\r\n\r\n`);
  expect(res.status).toBe(405);
  expect(res.head).toMatch(/\r\nX-Request-Id: edge-1\r\n/);
  expect(res.head).toMatch(/\r\nAllow: /);
  expect(res.body).toMatchObject({ code: 405, error: 'METHOD_NOT_ALLOWED', requestId: 'edge-1' });
});

/** Needs a PostgreSQL server to take the database away from the service (not the embedded one). */
const onPostgres = process.env.DATABASE_URL ? test : test.skip;

/**
 * Makes the test service's database refuse connections and cuts those it holds (an admin connection
 * to another database does it: a database cannot shut itself off); returns how to bring it back.
 */
async function takeDatabaseAway(service: TestService): Promise<() => Promise<void>> {
  const dbName = (await service.sql<{ db: string }>('select current_database() as db'))[0].db;
  const pg = (await import('pg')).default;
  const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await admin.connect();
  await admin.query(`alter database "${dbName}" allow_connections false`);
  await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1', [dbName]);
  return async () => {
    await admin.query(`alter database "${dbName}" allow_connections true`);
    await admin.end();
  };
}

/** The `warn` lines the service logged, parsed. */
const warnLines = (service: TestService) =>
  service.logLines.map((l) => JSON.parse(l)).filter((l) => l.level === 'warn') as { msg: string; poll?: string; requestId?: string }[];

/** Requests the user until one is answered 200 (at most 20): the database is back. */
async function untilAnswered(service: TestService, user: number): Promise<number> {
  let status = 0;
  for (let i = 0; i < 20 && status !== 200; i++) status = (await service.request('GET', `/user/${user}`)).status;
  return status;
}

onPostgres('a database outage: 503 with Retry-After, one warn line when it starts and one when it ends', async () => {
  const outage = await startTestService();
  try {
    const user = (await outage.request('POST', '/user/', { body: { firstName: 'A', lastName: 'B' } })).body;
    outage.logLines.length = 0;
    // Every connection the service holds is cut, and new ones are refused while the database is "down".
    const bringBack = await takeDatabaseAway(outage);
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await outage.request('GET', `/user/${user}`));
    expect(answers.map((a) => a.status)).toEqual([503, 503, 503, 503, 503]);
    expect(answers[0].headers.get('retry-after')).toBe('5');
    expect(answers[0].body).toMatchObject({ code: 503, error: 'UNAVAILABLE' });
    const warnings = () => warnLines(outage).map((l) => l.msg);
    expect(warnings()).toEqual(['database unavailable: answering 503 until it is back']);
    // Back: allowed again, and the next successful request says so.
    await bringBack();
    expect(await untilAnswered(outage, user)).toBe(200);
    expect(warnings()).toEqual(['database unavailable: answering 503 until it is back', 'database available again']);
  } finally {
    await outage.stop();
  }
});

/**
 * An outage that a background poll meets before any request: the webhook deliveries' poll (every
 * 10 ms here), or the event source's (every 100 ms while a subscription listens). Still one pair of
 * lines for the instance, the start's naming the poll, and no line of the poll's own.
 */
describe.each([
  ['the webhook poller', 'webhooks', { WEBHOOK_POLL_MS: '10' }],
  ['the event source (a subscription listens)', 'events', { WEBHOOK_DELIVERY: 'false' }],
])('a database outage noticed first by %s', (_, poll, env) => {
  onPostgres('one warn line when it starts and one when it ends', async () => {
    const outage = await startTestService(env);
    // A WebSocket connection starts the event source: only where it should notice first.
    const ws = poll === 'events' ? wsConnect(outage.url, bearer(outage.adminToken)) : null;
    try {
      const user = (await outage.request('POST', '/user/', { body: { firstName: 'A', lastName: 'B' } })).body;
      if (ws) {
        await ws.opened;
        collect(ws.client, 'subscription { userEvents { action } }');
        await untilSubscriptions(outage, 'userEvents');
      }
      const warnings = () => warnLines(outage).map(({ msg, poll, requestId }) => ({ msg, poll, requestId }));
      outage.logLines.length = 0;
      const bringBack = await takeDatabaseAway(outage);
      await waitFor('the outage told', () => warnings().length > 0);
      expect(warnings()).toEqual([{ msg: 'database unavailable: answering 503 until it is back', poll, requestId: undefined }]);
      // Requests meet the same outage: 503, and no second line.
      for (let i = 0; i < 3; i++) expect((await outage.request('GET', `/user/${user}`)).status).toBe(503);
      expect(warnings()).toHaveLength(1);
      await bringBack();
      expect(await untilAnswered(outage, user)).toBe(200);
      expect(warnings().map((w) => w.msg)).toEqual(['database unavailable: answering 503 until it is back', 'database available again']);
      expect(outage.logLines.some((l) => /could not be (polled|read)/.test(l))).toBe(false);
    } finally {
      await ws?.client.dispose();
      await outage.stop();
    }
  });
});
