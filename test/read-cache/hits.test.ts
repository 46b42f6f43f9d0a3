import pg from 'pg';
import { openRaw, rawExchange } from '../support/raw-http.js';
import { startTestService, type TestService } from '../support/service.js';
import { svc, uniq, counted, cached, useService, HIT_ATTEMPTS, retryPause } from '../support/read-cache.js';
import { sleep, waitFor } from '../support/wait.js';

/**
 * REST hits are answered ahead of the Koa app (src/http/front-cache.ts): the same answer, and the
 * same refusals, as the app gives; a request it does not answer reaches the app with its bearer
 * lookup done, so nothing is sent twice.
 */
useService();

describe('cache hits and the answers they stand for', () => {
  const headersOf = (reply: { headers: Headers }) => Object.fromEntries([...reply.headers].filter(([name]) => name !== 'date' && name !== 'x-request-id'));

  test('a hit has the headers and body the app answered, its own request id, or the one given', async () => {
    const list = `/user/?pageSize=1&filter=${encodeURIComponent(JSON.stringify({ lastName: { eq: uniq('ahead') } }))}`;
    const id = (await svc.request('POST', '/user/', { body: { firstName: 'Ahead', lastName: uniq('ahead') } })).body;
    for (const path of [list, '/role/?pageSize=1', `/user/${id}`]) {
      const first = await svc.request('GET', path);
      expect({ path, status: first.status }).toEqual({ path, status: 200 });
      const again = await cached(() => svc.request('GET', path, { headers: { 'X-Request-Id': 'given-id-1' } }));
      expect({ path, statements: again.statements.length }).toEqual({ path, statements: 1 });
      expect(again.reply.status).toBe(200);
      expect(headersOf(again.reply)).toEqual(headersOf(first));
      expect(again.reply.text).toBe(first.text);
      expect(again.reply.headers.get('x-request-id')).toBe('given-id-1');
      const third = await svc.request('GET', path, { headers: { 'X-Request-Id': 'not a sane id' } });
      expect(third.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  test('a miss and a refusal send the bearer lookup once', async () => {
    const id = (await svc.request('POST', '/user/', { body: { firstName: 'Once', lastName: uniq('once') } })).body;
    const miss = await counted(() => svc.request('GET', `/user/${id}`));
    expect(miss.reply.status).toBe(200);
    expect(miss.statements).toHaveLength(2);
    expect(miss.statements[0]).toMatch(/from tokens t join users u/);
    const refused = await cached(() => svc.request('GET', `/user/${id}`, { token: 'no-such-token' }));
    expect(refused.reply.status).toBe(401);
    expect(refused.reply.body).toMatchObject({ code: 401, message: 'the access token is unknown, expired or revoked' });
    expect(refused.reply.body.requestId).toBe(refused.reply.headers.get('x-request-id'));
    expect(refused.statements).toHaveLength(1);
    const line = svc.logLines
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === 'request')
      .at(-1);
    expect(line).toMatchObject({ requestId: refused.reply.headers.get('x-request-id'), route: '/user/:id', status: 401 });
  });

  test('what the app refuses before its cache is refused for a cached path too', async () => {
    const path = '/role/?pageSize=1';
    const token = await svc.tokenWith('*');
    expect((await svc.request('GET', path, { token })).status).toBe(200);
    expect((await svc.request('GET', path, { token })).status).toBe(200);
    const missing = await svc.request('GET', path, { token: null });
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer');
    expect((await svc.request('POST', '/oauth/revoke', { body: { token } })).status).toBe(200);
    expect((await svc.request('GET', path, { token })).status).toBe(401);
    const auth = `Authorization: Bearer ${svc.adminToken}\r\n`;
    const exchange = (lines: string, body = '') => rawExchange(svc.url, `GET ${path} HTTP/1.1\r\n${lines}Connection: close\r\n\r\n${body}`);
    expect(await exchange(`Host: localhost\r\n${auth}`)).toMatch(/^HTTP\/1\.1 200/);
    expect(await exchange(`Host: localhost\r\n${auth}${auth}`)).toMatch(/^HTTP\/1\.1 400[^]*send one Authorization header, not 2/);
    expect(await exchange(`Host: localhost\r\nHost: other\r\n${auth}`)).toMatch(/^HTTP\/1\.1 400[^]*send one Host header/);
    expect(await exchange(auth)).toMatch(/^HTTP\/1\.1 400[^]*no Host header/);
    const chunked = `Host: localhost\r\n${auth}Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n`;
    expect(await exchange(chunked, '5\r\nhello\r\n0\r\n\r\n')).toMatch(/^HTTP\/1\.1 415/);
  });

  test("the early answer and the app's answer to a cached read are the same bytes and log lines", async () => {
    const id = (await svc.request('POST', '/user/', { body: { firstName: 'Same', lastName: uniq('same') } })).body;
    // Content-Length: 0 sends a request to the app (its body reader looks at it), with the same answer.
    const exchange = (path: string, extra: string) =>
      rawExchange(svc.url, `GET ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${svc.adminToken}\r\n${extra}Connection: close\r\n\r\n`);
    const strip = (answer: string) => answer.replace(/^(date|x-request-id): .*\r\n/gim, '');
    const lastLine = () => {
      const { requestId: _id, ms: _ms, time: _time, ...line } = JSON.parse(svc.logLines.filter((l) => l.includes('"msg":"request"')).at(-1)!);
      return line;
    };
    for (const path of ['/role/?pageSize=1', '/user/', `/user/${id}`, `/user/${id}/role`]) {
      let early = '';
      let earlyLine: Record<string, unknown> = {};
      let app = '';
      let appLine: Record<string, unknown> = {};
      // Both are hits unless a write elsewhere on the server moved the snapshot in between (see HIT_ATTEMPTS).
      for (let attempt = 1; attempt === 1 || (attempt <= HIT_ATTEMPTS && (earlyLine.readCache !== 'hit' || appLine.readCache !== 'hit')); attempt++) {
        if (attempt > 1) await retryPause(attempt);
        expect((await svc.request('GET', path)).status).toBe(200); // now cached
        early = await exchange(path, '');
        earlyLine = lastLine();
        app = await exchange(path, 'Content-Length: 0\r\n');
        appLine = lastLine();
      }
      expect({ path, answer: strip(early) }).toEqual({ path, answer: strip(app) });
      expect(early).toMatch(/^HTTP\/1\.1 200/);
      expect(appLine).toEqual(earlyLine);
      expect(earlyLine).toMatchObject({ status: 200, readCache: 'hit' });
    }
  });

  test("the same for a GraphQL POST: the early answer and the app's are the same bytes and log lines", async () => {
    const id = (await svc.request('POST', '/user/', { body: { firstName: 'Gq', lastName: uniq('gq') } })).body;
    const body = JSON.stringify({ query: 'query One($id: ID!) { user(id: $id) { id firstName roles { total } } }', variables: { id: String(id) } });
    // Content-Encoding: identity sends a request to the app (only the app's body reader decodes), with the same answer.
    const exchange = (extra: string) =>
      rawExchange(
        svc.url,
        `POST /graphql HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${svc.adminToken}\r\nContent-Type: application/json\r\nAccept: application/json\r\n` +
          `${extra}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    const strip = (answer: string) => answer.replace(/^(date|x-request-id): .*\r\n/gim, '');
    const lastLine = () => {
      const { requestId: _id, ms: _ms, time: _time, ...line } = JSON.parse(svc.logLines.filter((l) => l.includes('"msg":"request"')).at(-1)!);
      return line;
    };
    const first = await exchange('');
    expect(first).toMatch(/^HTTP\/1\.1 200/);
    expect(lastLine()).toMatchObject({ readCache: 'miss', operationName: 'One' });
    let early = '';
    let earlyLine: Record<string, unknown> = {};
    let app = '';
    let appLine: Record<string, unknown> = {};
    // Both are hits unless a write elsewhere on the server moved the snapshot in between (see HIT_ATTEMPTS).
    for (let attempt = 1; attempt === 1 || (attempt <= HIT_ATTEMPTS && (earlyLine.readCache !== 'hit' || appLine.readCache !== 'hit')); attempt++) {
      if (attempt > 1) await retryPause(attempt);
      if (attempt > 1) await exchange(''); // kept again under the snapshot of now
      early = await exchange('');
      earlyLine = lastLine();
      app = await exchange('Content-Encoding: identity\r\n');
      appLine = lastLine();
    }
    expect(strip(early)).toBe(strip(app));
    // Apollo's own answer spells the header content-type, Koa's (the app's cache) Content-Type.
    expect(strip(early).toLowerCase()).toBe(strip(first).toLowerCase());
    expect(appLine).toEqual(earlyLine);
    expect(earlyLine).toMatchObject({ route: '/graphql', status: 200, readCache: 'hit', operationName: 'One', operationType: 'query' });
  });

  test('a kept query with variables nested too deep for a key is refused by the app (400), not left unanswered', async () => {
    const query = 'query Deep($v: [String!]) { roles(pageSize: 1, filter: { name: { in: $v } }) { total } }';
    expect((await svc.graphql(query, { v: ['a'] })).status).toBe(200); // the text is now known to be kept
    // 10,000 levels: JSON.parse reads them, JSON.stringify (the cache key) runs out of stack.
    const deep = `${'['.repeat(10_000)}"x"${']'.repeat(10_000)}`;
    const reply = await svc.graphql(query, {}, { rawBody: `{"query":${JSON.stringify(query)},"variables":{"v":${deep}}}` });
    expect(reply.status).toBe(400);
    expect(reply.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
  });

  /** Whether a session waits for a lock on the tokens table of the service's database (asked on `client`, a session of it). */
  const lookupWaits = async (client: pg.Client) =>
    (
      await client.query<{ n: number }>(
        `select count(*)::int as n from pg_locks l join pg_class c on c.oid = l.relation
          where not l.granted and c.relname = 'tokens' and l.database = (select oid from pg_database where datname = current_database())`,
      )
    ).rows[0].n > 0;

  // Another session holds the tokens table: the bearer lookup waits.
  (process.env.DATABASE_URL ? test : test.skip)('a mutation whose client leaves while its token is looked up still runs, as before', async () => {
    const name = uniq('left');
    const body = JSON.stringify({ query: `mutation { createRole(input: { name: "${name}" }) { id } }` });
    const blocker = new pg.Client({ connectionString: svc.config.databaseUrl });
    await blocker.connect();
    try {
      await blocker.query('begin');
      await blocker.query('lock table tokens in access exclusive mode');
      const client = await openRaw(svc.url);
      await client.write(
        `POST /graphql HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${svc.adminToken}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      await waitFor('the bearer lookup to wait for the lock', () => lookupWaits(blocker));
      client.close();
      await client.untilClosed('the client to leave'); // the client has left, the lookup still waits
      await blocker.query('commit');
    } finally {
      await blocker.end();
    }
    await waitFor('the mutation to run', async () => (await svc.sql('select 1 from roles where name = ?', [name])).length > 0);
    expect(await svc.sql('select name from roles where name = ?', [name])).toEqual([{ name }]);
  });

  // Another session holds the tokens table: the bearer lookup waits.
  (process.env.DATABASE_URL ? test : test.skip)('a request is logged with the time since it arrived, its bearer lookup included', async () => {
    const blocker = new pg.Client({ connectionString: svc.config.databaseUrl });
    await blocker.connect();
    try {
      await blocker.query('begin');
      await blocker.query('lock table tokens in access exclusive mode');
      const reply = svc.request('GET', `/role/?page=${Date.now()}`); // not cached yet
      // From when its lookup is seen waiting (it has arrived) to when the lock is let go (it cannot
      // have been answered before): a span its logged time must cover.
      await waitFor('the bearer lookup to wait for the lock', () => lookupWaits(blocker));
      const waiting = performance.now();
      await sleep(300); // the lock is held this long more
      const letGo = performance.now();
      await blocker.query('commit');
      const { status, headers } = await reply;
      expect(status).toBe(200);
      const line = svc.logLines.map((l) => JSON.parse(l)).find((l) => l.msg === 'request' && l.requestId === headers.get('x-request-id'));
      expect(line.readCache).toBe('miss');
      expect(line.ms).toBeGreaterThanOrEqual(Math.floor(letGo - waiting));
    } finally {
      await blocker.end();
    }
  });

  test('under a base path and with CORS on: the same answers, Vary: Origin on each, the headers of an Origin from the app', async () => {
    const other = await startTestService({ BASE_PATH: '/api', CORS_ORIGINS: 'https://app.example' });
    try {
      const path = '/role/?pageSize=1'; // request() puts the base path in front
      const first = await other.request('GET', path);
      expect(first.status).toBe(200);
      expect(first.headers.get('vary')).toBe('Origin');
      // A hit is the bearer lookup alone; a snapshot moved by another transaction on the server
      // (autovacuum on a new database, the test files beside this one) is a miss: tried again (HIT_ATTEMPTS).
      const hit = async (send: () => ReturnType<TestService['request']>) => {
        for (let attempt = 1; ; attempt++) {
          other.queries.length = 0;
          const reply = await send();
          if (other.queries.length === 1 || attempt === HIT_ATTEMPTS) return reply;
          await retryPause(attempt);
        }
      };
      const again = await hit(() => other.request('GET', path));
      expect(other.queries).toHaveLength(1);
      expect(headersOf(again)).toEqual(headersOf(first));
      expect(again.text).toBe(first.text);
      const fromApp = await hit(() => other.request('GET', path, { headers: { Origin: 'https://app.example' } }));
      expect(other.queries).toHaveLength(1);
      expect(fromApp.headers.get('access-control-allow-origin')).toBe('https://app.example');
      expect(fromApp.text).toBe(first.text);
      const outside = await fetch(`${other.url}/role/?pageSize=1`, { headers: { Authorization: `Bearer ${other.adminToken}` } });
      expect(outside.status).toBe(404);
    } finally {
      await other.stop();
    }
  });
});
