import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import WebSocket from 'ws';
import { createLogger } from '../../src/observability/log.js';
import { startService } from '../../src/server.js';
import { uniq } from '../support/names.js';
import { startTestService, type TestService } from '../support/service.js';
import { createUser } from '../support/users.js';
import {
  bearer,
  collect,
  newestEventId,
  runningSubscriptions,
  sseConnect,
  untilSubscriptions,
  wsConnect,
  wsUrl,
  type WsConnection,
} from '../support/subscriptions.js';
import { untilLogged, waitFor, within } from '../support/wait.js';

/**
 * Subscriptions (SPEC §10) over real sockets against the real app: graphql-ws over WebSocket and
 * graphql-sse over HTTP, events for REST and GraphQL writes, permissions, sockets that follow
 * their token, resume, and the limits. Runs on PostgreSQL and on the embedded database.
 *
 * No test waits for time to pass as a stand-in for the service getting somewhere: a subscription is
 * made with `after:` the newest event id (it replays whatever it would otherwise miss while it
 * starts), or the test waits for the service's gauge of running subscriptions or its log line of an
 * opened stream; "nothing else arrived" is a later write (a sentinel) whose event must come next;
 * "within a second" is measured in the service's own time (the write's audit event, the close's log
 * line), not around the test's requests; and every wait is bounded, failing with what it waited for.
 */

let svc: TestService;
const open: { client: { dispose(): unknown } }[] = [];

beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  for (const connection of open) await connection.client.dispose();
  await svc.stop();
});

function connect(params: Record<string, unknown> | null = bearer(svc.adminToken), headers: Record<string, string> = {}): WsConnection {
  const connection = wsConnect(svc.url, params, headers);
  open.push(connection);
  return connection;
}

const USER_EVENTS = 'subscription ($id: ID, $after: ID) { userEvents(id: $id, after: $after) { eventID action id at user { id firstName lastName } } }';

/** The audit events of a user, as the database holds them. */
const auditOf = (userID: number) =>
  svc.sql<{ id: string; action: string }>(`select a.id::text as id, a.action from audit_events a where a.resource = 'user' and a.record_id = ? order by a.id`, [
    userID,
  ]);

/** The id of the token row of an access token. */
const tokenIdOf = async (service: TestService, token: string) =>
  (await service.sql<{ id: string }>('select id::text from tokens where access_token_hmac = ?', [service.hmac(token)]))[0].id;

/** The database's clock, in milliseconds since the epoch. */
const databaseNow = async () => (await svc.sql<{ ms: number }>('select (extract(epoch from now()) * 1000)::float8 as ms'))[0].ms;

/**
 * How long after the newest change of token `tokenId` was made (its audit event's time, as the
 * database took it) the service logged the close of that token's socket: the event path alone,
 * not the test's own requests.
 */
async function closedAfterChange(lines: { logLines: readonly string[] }, tokenId: string): Promise<number> {
  const closed = await untilLogged(
    lines,
    `the close of token ${tokenId}'s socket`,
    (l) => l.msg === 'subscription connection closed' && String(l.tokenId) === tokenId,
  );
  const [change] = await svc.sql<{ ms: number }>(
    `select (extract(epoch from at) * 1000)::float8 as ms from audit_events where resource = 'token' and record_id = ? order by id desc limit 1`,
    [tokenId],
  );
  return Date.parse(closed.time) - change.ms;
}

/**
 * Waits until the service's event source has begun `count` reads of the audit log after this call.
 * The first began after every write committed before this call, so it saw them; the source reads
 * one at a time, so once the second has begun, the first has been handled (its events handed over,
 * or held behind a gap). Its statements are the service's own (svc.queries).
 */
async function sourceReads(count = 2): Promise<void> {
  const from = svc.queries.length;
  await waitFor(
    `${count} reads of the audit log by the event source`,
    () => svc.queries.slice(from).filter((q) => /as snapshot, e\.\*/.test(q)).length >= count,
  );
}

describe('graphql-ws', () => {
  it('streams committed changes of users from REST and GraphQL writes, in commit order, with the record as it is now', async () => {
    const ws = connect();
    await within('the connection', ws.opened);
    const sub = collect(ws.client, USER_EVENTS, { after: await newestEventId(svc) });
    const id = await createUser(svc, { firstName: 'Ada', lastName: 'Realtime' });
    const patched = await svc.graphql('mutation ($id: ID!) { patchUser(id: $id, input: { lastName: "Lovelace" }) { id } }', { id: String(id) });
    expect(patched.body.errors).toBeUndefined();
    const [created, patch] = await sub.atLeast(2);
    const audit = await auditOf(id);
    expect(created.data.userEvents).toMatchObject({ eventID: audit[0].id, action: 'CREATE', id: String(id) });
    expect(patch.data.userEvents).toMatchObject({
      eventID: audit[1].id,
      action: 'PATCH',
      id: String(id),
      user: { id: String(id), firstName: 'Ada', lastName: 'Lovelace' },
    });
    expect(Number(patch.data.userEvents.eventID)).toBeGreaterThan(Number(created.data.userEvents.eventID));
    sub.stop();
  });

  it('sends nothing for a write that fails', async () => {
    const ws = connect();
    await within('the connection', ws.opened);
    const id = await createUser(svc, { firstName: 'Grace', lastName: 'Realtime' });
    const sub = collect(ws.client, USER_EVENTS, { id: String(id), after: await newestEventId(svc) });
    const refused = await svc.request('PATCH', `/user/${id}`, { body: { firstName: 42 } });
    expect(refused.status).toBe(400);
    const gone = await svc.request('PATCH', '/user/999999', { body: { firstName: 'Nobody' } });
    expect(gone.status).toBe(404);
    await svc.request('PATCH', `/user/${id}`, { body: { firstName: 'Grace B.' } });
    const [first] = await sub.atLeast(1);
    expect(first.data.userEvents).toMatchObject({ action: 'PATCH', user: { firstName: 'Grace B.' } });
    // Nothing came for the failed writes: a later write's event is the next one.
    await svc.request('PATCH', `/user/${id}`, { body: { lastName: 'Sentinel' } });
    const [, next] = await sub.atLeast(2);
    expect(next.data.userEvents).toMatchObject({ eventID: (await auditOf(id)).at(-1)!.id, action: 'PATCH', user: { lastName: 'Sentinel' } });
    expect(sub.results).toHaveLength(2);
    sub.stop();
  });

  it('refuses a connection without a valid token with 4401', async () => {
    for (const params of [null, bearer('not-a-token'), { Authorization: 'Basic abc' }]) {
      const ws = connect(params);
      await expect(within('the close', ws.closed)).resolves.toMatchObject({ code: 4401 });
    }
  });

  it('reads the token from authorization and headers.Authorization too', async () => {
    for (const params of [{ authorization: `Bearer ${svc.adminToken}` }, { headers: bearer(svc.adminToken) }]) {
      const ws = connect(params);
      await expect(within('the connection', ws.opened)).resolves.toBeUndefined();
      ws.client.dispose();
    }
  });

  it('needs the read scope of what a subscription streams (FORBIDDEN)', async () => {
    const token = await svc.tokenWith('token:read');
    const ws = connect(bearer(token));
    await within('the connection', ws.opened);
    const sub = collect(ws.client, USER_EVENTS);
    await within('the refusal', sub.ended);
    const errors = (sub.results[0]?.errors ?? sub.error) as { extensions: { code: string } }[];
    expect(errors[0].extensions.code).toBe('FORBIDDEN');
  });

  it('refuses queries and mutations: they go over HTTP', async () => {
    const ws = connect();
    await within('the connection', ws.opened);
    const sub = collect(ws.client, '{ viewer { id } }');
    await within('the refusal', sub.ended);
    expect((sub.error as { extensions: { code: string } }[])[0].extensions.code).toBe('BAD_REQUEST');
  });

  it('refuses an Origin that is neither the service nor one of CORS_ORIGINS', async () => {
    const refused = await within(
      'the answer to the upgrade',
      new Promise<number>((resolve) => {
        const socket = new WebSocket(wsUrl(svc.url), 'graphql-transport-ws', { headers: { Origin: 'https://elsewhere.example' } });
        socket.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        socket.on('open', () => resolve(101));
        socket.on('error', () => {});
      }),
    );
    expect(refused).toBe(403);
    const own = connect(bearer(svc.adminToken), { Origin: svc.url });
    await expect(within('the connection', own.opened)).resolves.toBeUndefined();
  });
});

describe('graphql-sse', () => {
  it('streams the same events over Server-Sent Events', async () => {
    const client = sseConnect(svc.url, svc.adminToken);
    const sub = collect(client, USER_EVENTS, { after: await newestEventId(svc) });
    const id = await createUser(svc, { firstName: 'Edsger', lastName: 'Realtime' });
    const [event] = await sub.atLeast(1);
    expect(event.data.userEvents).toMatchObject({ action: 'CREATE', id: String(id), user: { firstName: 'Edsger' } });
    sub.stop();
    client.dispose();
  });

  it('answers 401 without a token, before anything else', async () => {
    const response = await fetch(`${svc.url}/graphql`, {
      method: 'POST',
      headers: { Accept: 'text/event-stream', 'Content-Type': 'application/json' },
      body: JSON.stringify({ query: USER_EVENTS }),
    });
    expect(response.status).toBe(401);
  });

  it('streams whenever the Accept header prefers an event stream, by a wildcard too', async () => {
    // */* with the JSON types given a lower quality: the event stream is the client's preference.
    for (const accept of ['application/*;q=0, */*', 'application/json;q=0.1, application/graphql-response+json;q=0.1, */*;q=0.5', 'TEXT/*']) {
      const aborted = new AbortController();
      const response = await fetch(`${svc.url}/graphql`, {
        method: 'POST',
        headers: { Accept: accept, 'Content-Type': 'application/json', ...bearer(svc.adminToken) },
        body: JSON.stringify({ query: USER_EVENTS }),
        signal: aborted.signal,
      });
      expect([accept, response.status, response.headers.get('content-type')]).toEqual([accept, 200, expect.stringMatching(/^text\/event-stream/)]);
      aborted.abort();
    }
    // A bare */* is answered in JSON: a subscription there is a 400 naming the transports.
    const plain = await svc.graphql(USER_EVENTS, undefined, { headers: { Accept: '*/*' } });
    expect(plain.status).toBe(400);
  });
});

describe('sockets follow their token', () => {
  it('closes a revoked token’s connections with 4403 within a second', async () => {
    const token = await svc.tokenWith('user:read');
    const ws = connect(bearer(token));
    await within('the connection', ws.opened);
    const tokenId = await tokenIdOf(svc, token);
    expect((await svc.request('DELETE', `/token/${tokenId}`)).status).toBe(200);
    const closed = await within('the close after the revocation', ws.closed);
    expect(closed.code).toBe(4403);
    expect(await closedAfterChange(svc, tokenId)).toBeLessThan(1_000);
  });

  it('closes a connection whose user is deleted, and one whose token expires', async () => {
    const token = await svc.tokenWith('user:read');
    const ws = connect(bearer(token));
    await within('the connection', ws.opened);
    const [row] = await svc.sql<{ user_id: string }>('select user_id::text from tokens where access_token_hmac = ?', [svc.hmac(token)]);
    expect((await svc.request('DELETE', `/user/${row.user_id}`)).status).toBe(200);
    expect((await within('the close after the user’s deletion', ws.closed)).code).toBe(4403);

    // A token that expires 3 s after it is made, by the database's clock: room for the socket to
    // open first however busy the machine is; it then closes at the expiry, within a second of it
    // (the service's log line of the close).
    const expireAt = (await databaseNow()) + 3_000;
    const soon = await svc.tokenWith('user:read', { expireAt: new Date(expireAt).toISOString() });
    const expiring = connect(bearer(soon));
    await within('the connection (it opens before its token expires)', expiring.opened);
    expect((await within('the close at the token’s expiry', expiring.closed)).code).toBe(4403);
    const tokenId = await tokenIdOf(svc, soon);
    const closed = await untilLogged(svc, 'the close', (l) => l.msg === 'subscription connection closed' && String(l.tokenId) === tokenId);
    expect(Date.parse(closed.time) - expireAt).toBeLessThan(1_000);
  });

  it('follows a token whose expiry is moved later while connected, and closes it once its scope changes', async () => {
    // Expiring 4 s after it is made (the database's clock): room to connect and move the expiry first.
    const expireAt = (await databaseNow()) + 4_000;
    const soon = await svc.tokenWith('user:read', { expireAt: new Date(expireAt).toISOString() });
    const ws = connect(bearer(soon));
    await within('the connection (it opens before its token expires)', ws.opened);
    const sub = collect(ws.client, USER_EVENTS, { after: await newestEventId(svc) });
    const tokenId = await tokenIdOf(svc, soon);
    const patched = await svc.request('PATCH', `/token/${tokenId}`, { body: { expireAt: new Date(expireAt + 3_600_000).toISOString() } });
    expect(patched.status).toBe(200);
    // The first expiry passes (by the database's clock, which the service's timers share) and the
    // socket still serves: a write made after it reaches the subscription on it.
    await waitFor('the token’s first expiry to pass', async () => (await databaseNow()) > expireAt + 100, 20_000);
    const id = await createUser(svc, { firstName: 'Still', lastName: 'Realtime' });
    const [event] = await sub.atLeast(1);
    expect(event.data.userEvents).toMatchObject({ action: 'CREATE', id: String(id) });
    expect(sub.results).toHaveLength(1);
    // Any other change (here its scope) and the caller the socket was opened with is gone: 4403,
    // within a second of the change.
    expect((await svc.request('PATCH', `/token/${tokenId}`, { body: { scope: 'role:read' } })).status).toBe(200);
    expect((await within('the close after the scope changed', ws.closed)).code).toBe(4403);
    expect(await closedAfterChange(svc, tokenId)).toBeLessThan(1_000);
  });

  it('ends an SSE stream with a FORBIDDEN error when its token is revoked', async () => {
    const token = await svc.tokenWith('user:read');
    const tokenId = await tokenIdOf(svc, token);
    const client = sseConnect(svc.url, token);
    const sub = collect(client, USER_EVENTS);
    await untilLogged(svc, 'the stream opened', (l) => l.msg === 'subscription stream opened' && String(l.tokenId) === tokenId);
    await svc.request('DELETE', `/token/${tokenId}`);
    await within('the end of the stream', sub.ended);
    expect(sub.results.at(-1).errors[0].extensions.code).toBe('FORBIDDEN');
    client.dispose();
  });
});

describe('operations', () => {
  it('tokenEvents: token:read sees every token; without it, a caller may follow its own user’s tokens only', async () => {
    const own = await svc.tokenWith('user:read');
    const [mine] = await svc.sql<{ user_id: string }>('select user_id::text from tokens where access_token_hmac = ?', [svc.hmac(own)]);
    const ws = connect(bearer(own));
    await within('the connection', ws.opened);
    const query = 'subscription ($userID: ID, $after: ID) { tokenEvents(userID: $userID, after: $after) { eventID action id userID token { id } } }';
    const refused = collect(ws.client, query, {});
    await within('the refusal', refused.ended);
    expect((refused.results[0]?.errors ?? refused.error)[0].extensions.code).toBe('FORBIDDEN');
    const sub = collect(ws.client, query, { userID: mine.user_id, after: await newestEventId(svc) });
    const createOwn = () => svc.request('POST', '/token/', { body: { userID: Number(mine.user_id), accessToken: uniq('own'), scope: 'user:read' } });
    const created = await createOwn();
    expect(created.status).toBe(201);
    await svc.tokenWith('user:read'); // another user's token: not streamed
    const sentinel = await createOwn(); // its event comes next: the other user's came not between
    expect(sentinel.status).toBe(201);
    const [event, next] = await sub.atLeast(2);
    expect(event.data.tokenEvents).toMatchObject({ action: 'CREATE', id: String(created.body), userID: mine.user_id, token: null });
    expect(event.errors[0].extensions.code).toBe('FORBIDDEN'); // the token itself needs token:read
    expect(next.data.tokenEvents).toMatchObject({ action: 'CREATE', id: String(sentinel.body), userID: mine.user_id });
    expect(sub.results).toHaveLength(2);
    sub.stop();
  });

  it('linkEvents: links made, rights changed and links removed', async () => {
    const ws = connect();
    await within('the connection', ws.opened);
    const id = await createUser(svc, { firstName: 'Barbara', lastName: 'Realtime' });
    const app = await svc.graphql('mutation { createApplication(input: { name: "realtime-app" }) { id } }');
    const applicationID = app.body.data.createApplication.id;
    const sub = collect(
      ws.client,
      'subscription ($userID: ID, $after: ID) { linkEvents(userID: $userID, after: $after) { eventID action userID applicationID roleID right } }',
      { userID: String(id), after: await newestEventId(svc) },
    );
    expect((await svc.request('POST', `/user/${id}/application`, { body: [Number(applicationID)] })).status).toBe(201);
    await svc.graphql('mutation ($id: ID!, $app: ID!) { updateUserApplication(id: $id, applicationID: $app, right: 7) { right } }', {
      id: String(id),
      app: applicationID,
    });
    expect((await svc.request('DELETE', `/user/${id}/application`, { body: [Number(applicationID)] })).status).toBe(200);
    const events = (await sub.atLeast(3)).map((r) => r.data.linkEvents);
    expect(events).toEqual([
      expect.objectContaining({ action: 'LINK', userID: String(id), applicationID, roleID: null, right: 0 }),
      expect.objectContaining({ action: 'RIGHT', applicationID, right: 7 }),
      expect.objectContaining({ action: 'UNLINK', applicationID, right: null }),
    ]);
    sub.stop();
  });

  it('applicationEvents and roleEvents need their read scopes', async () => {
    const token = await svc.tokenWith('application:read');
    const ws = connect(bearer(token));
    await within('the connection', ws.opened);
    const apps = collect(ws.client, 'subscription ($after: ID) { applicationEvents(after: $after) { action application { name } } }', {
      after: await newestEventId(svc),
    });
    const roles = collect(ws.client, 'subscription { roleEvents { action } }');
    await within('the refusal', roles.ended);
    expect((roles.results[0]?.errors ?? roles.error)[0].extensions.code).toBe('FORBIDDEN');
    await svc.graphql('mutation { createApplication(input: { name: "watched-app" }) { id } }');
    const [event] = await apps.atLeast(1);
    expect(event.data.applicationEvents).toEqual({ action: 'CREATE', application: { name: 'watched-app' } });
    apps.stop();
  });

  it('resumes after an eventID: the later events from the audit log, then live ones, none missed or twice, with writes racing', async () => {
    const id = await createUser(svc, { firstName: 'Alan', lastName: 'Realtime' });
    for (let i = 0; i < 5; i++) await svc.request('PATCH', `/user/${id}`, { body: { lastName: `Before ${i}` } });
    const [first] = await auditOf(id);
    const ws = connect();
    await within('the connection', ws.opened);
    // Writes go on while the subscription replays and joins the live stream.
    const racing = (async () => {
      for (let i = 0; i < 15; i++) await svc.request('PATCH', `/user/${id}`, { body: { lastName: `During ${i}` } });
    })();
    const sub = collect(ws.client, USER_EVENTS, { id: String(id), after: first.id });
    await racing;
    const audit = await auditOf(id);
    const expected = audit.slice(1).map((e) => e.id);
    await sub.atLeast(expected.length);
    // None twice: a later write's event comes right after them.
    await svc.request('PATCH', `/user/${id}`, { body: { lastName: 'Sentinel' } });
    const sentinel = (await auditOf(id)).at(-1)!.id;
    await sub.atLeast(expected.length + 1);
    expect(sub.results.map((r) => r.data.userEvents.eventID)).toEqual([...expected, sentinel]);
    sub.stop();
  });

  it('refuses a resume of more than 1,000 events (BAD_USER_INPUT: read again)', async () => {
    const id = await createUser(svc, { firstName: 'Many', lastName: 'Realtime' });
    await svc.sql(`insert into audit_events (action, resource, record_id, changes) select 'patch', 'user', ?, '{}'::jsonb from generate_series(1, 1001)`, [id]);
    const ws = connect();
    await within('the connection', ws.opened);
    const sub = collect(ws.client, USER_EVENTS, { id: String(id), after: '0' });
    await within('the refusal', sub.ended);
    const errors = sub.results[0]?.errors ?? sub.error;
    expect(errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'after' });
  });
});

describe('limits', () => {
  it('runs at most 100 subscriptions on a connection', async () => {
    const ws = connect();
    await within('the connection', ws.opened);
    const before = await runningSubscriptions(svc, 'roleEvents');
    const subs = Array.from({ length: 100 }, () => collect(ws.client, 'subscription { roleEvents { eventID } }'));
    await untilSubscriptions(svc, 'roleEvents', before + 100);
    const extra = collect(ws.client, 'subscription { roleEvents { eventID } }');
    await within('the refusal', extra.ended);
    expect((extra.error as { extensions: { code: string } }[])[0].extensions.code).toBe('TOO_MANY_REQUESTS');
    subs[0].stop();
    await untilSubscriptions(svc, 'roleEvents', before + 99);
    const another = collect(ws.client, 'subscription ($after: ID) { roleEvents(after: $after) { eventID } }', { after: await newestEventId(svc) });
    // It runs: a role made now reaches it.
    await svc.graphql('mutation { createRole(input: { name: "limits-role" }) { id } }');
    await another.atLeast(1);
    expect(another.error).toBeUndefined();
    for (const sub of [...subs, another]) sub.stop();
  });

  it('applies the query limits of HTTP: depth, aliases, cost, syntax without echoing values', async () => {
    const ws = connect();
    await within('the connection', ws.opened);
    const deep = `subscription { userEvents { user { ${'tokens { items { user { '.repeat(4)} id ${'} } } '.repeat(4)} } } }`;
    const aliases = `subscription { userEvents { ${Array.from({ length: 120 }, (_, i) => `a${i}: eventID`).join(' ')} } }`;
    const costly = 'subscription { userEvents { user { tokens(size: 1000) { items { user { tokens(size: 1000) { items { id } } } } } } } }';
    for (const query of [deep, aliases, costly]) {
      const sub = collect(ws.client, query);
      await within('the refusal', sub.ended);
      expect((sub.error as { extensions: { code: string } }[])[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    }
    const broken = collect(ws.client, 'subscription { userEvents(id: "secret-value" { id } }');
    await within('the refusal', broken.ended);
    const [error] = broken.error as { message: string; extensions: { code: string } }[];
    expect(error.extensions.code).toBe('GRAPHQL_PARSE_FAILED');
    expect(JSON.stringify(error)).not.toContain('secret-value');
  });

  it('answers a subscription sent as a plain HTTP request with a 400 naming the transports', async () => {
    const reply = await svc.graphql(USER_EVENTS);
    expect(reply.status).toBe(400);
    expect(reply.body.errors[0].message).toMatch(/WebSocket.*text\/event-stream/);
  });
});

describe('a delete’s cascade', () => {
  const TOKEN_EVENTS = 'subscription ($userID: ID, $after: ID) { tokenEvents(userID: $userID, after: $after) { eventID action id userID token { id } } }';
  const LINK_EVENTS = 'subscription ($userID: ID, $after: ID) { linkEvents(userID: $userID, after: $after) { eventID action userID applicationID roleID } }';
  /** The newest event id: a subscription with `after` it sees every later event, replayed or live, without waiting for the stream to start. */
  const newestEventId = async () => (await svc.sql<{ id: string }>('select coalesce(max(id), 0)::text as id from audit_events'))[0].id;
  const named = async (path: string, name: string) => {
    const created = await svc.request('POST', path, { body: { name: `${name}-${Date.now()}-${Math.random()}` } });
    expect(created.status).toBe(201);
    return Number(created.body);
  };

  it('a user delete streams a token DELETE per token and a link UNLINK per link it takes, with the audit log’s event ids', async () => {
    const id = await createUser(svc, { firstName: 'Cascade', lastName: 'Realtime' });
    const tokens: number[] = [];
    for (const scope of ['*', 'user:read']) {
      const created = await svc.request('POST', '/token/', { body: { userID: id, accessToken: `cascade-${Date.now()}-${Math.random()}`, scope } });
      tokens.push(Number(created.body));
    }
    const app = await named('/application/', 'cascade-app');
    const role = await named('/role/', 'cascade-role');
    expect((await svc.request('POST', `/user/${id}/application`, { body: [app] })).status).toBe(201);
    expect((await svc.request('POST', `/user/${id}/role`, { body: [role] })).status).toBe(201);
    const after = await newestEventId();
    const ws = connect();
    await ws.opened;
    const tokenSub = collect(ws.client, TOKEN_EVENTS, { userID: String(id), after });
    const linkSub = collect(ws.client, LINK_EVENTS, { userID: String(id), after });

    expect((await svc.request('DELETE', `/user/${id}`)).status).toBe(200);
    const tokenEvents = (await tokenSub.atLeast(2)).map((r) => r.data.tokenEvents);
    const linkEvents = (await linkSub.atLeast(2)).map((r) => r.data.linkEvents);
    const audit = await svc.sql<{ id: string; resource: string }>(
      `select id::text, resource from audit_events where id > ? and resource <> 'user' order by id`,
      [after],
    );
    expect(tokenEvents).toEqual(tokens.map((token, i) => ({ eventID: audit[i].id, action: 'DELETE', id: String(token), userID: String(id), token: null })));
    expect(linkEvents).toEqual([
      { eventID: audit[2].id, action: 'UNLINK', userID: String(id), applicationID: String(app), roleID: null },
      { eventID: audit[3].id, action: 'UNLINK', userID: String(id), applicationID: null, roleID: String(role) },
    ]);
    expect(audit).toHaveLength(4);
    tokenSub.stop();
    linkSub.stop();
  });

  it('an application or role delete streams an UNLINK to each linked user’s linkEvents', async () => {
    const id = await createUser(svc, { firstName: 'Linked', lastName: 'Realtime' });
    const app = await named('/application/', 'doomed-app');
    const role = await named('/role/', 'doomed-role');
    expect((await svc.request('POST', `/user/${id}/application`, { body: [app] })).status).toBe(201);
    expect((await svc.request('POST', `/user/${id}/role`, { body: [role] })).status).toBe(201);
    const after = await newestEventId();
    const client = sseConnect(svc.url, svc.adminToken);
    const sub = collect(client, LINK_EVENTS, { userID: String(id), after });

    expect((await svc.request('DELETE', `/application/${app}`)).status).toBe(200);
    expect((await svc.graphql('mutation ($id: ID!) { destroyRole(id: $id) }', { id: String(role) })).body).toEqual({ data: { destroyRole: true } });
    const events = (await sub.atLeast(2)).map((r) => r.data.linkEvents);
    expect(events).toEqual([
      expect.objectContaining({ action: 'UNLINK', userID: String(id), applicationID: String(app), roleID: null }),
      expect.objectContaining({ action: 'UNLINK', userID: String(id), applicationID: null, roleID: String(role) }),
    ]);
    sub.stop();
    client.dispose();
  });
});

describe('observability', () => {
  it('counts connections, subscriptions, events and closes in /metrics, and logs connects and closes without tokens', async () => {
    const ws = connect();
    await within('the connection', ws.opened);
    const sub = collect(ws.client, 'subscription ($after: ID) { roleEvents(after: $after) { eventID } }', { after: await newestEventId(svc) });
    await svc.graphql('mutation { createRole(input: { name: "metrics-role" }) { id } }');
    await sub.atLeast(1);
    const metrics = (await svc.request('GET', '/metrics', { token: null })).text;
    expect(metrics).toMatch(/realtime_connections\{transport="ws"\} [1-9]/);
    expect(metrics).toMatch(/realtime_subscriptions\{operation="roleEvents"\} [1-9]/);
    expect(metrics).toMatch(/realtime_events_sent_total [1-9]/);
    expect(metrics).toMatch(/realtime_connections_closed_total\{transport="ws",reason="unauthorized"\} [1-9]/);
    sub.stop();
    const lines = svc.logLines.join('\n');
    expect(lines).toContain('subscription connection opened');
    expect(lines).toContain('subscription connection closed');
    expect(lines).not.toContain(svc.adminToken);
  });
});

describe('an instance’s limits and stop', () => {
  it('closes connections past SUBSCRIPTIONS_MAX with 4429 (SSE: 429), and ends them with 1001 when the service stops', async () => {
    const small = await startTestService({ SUBSCRIPTIONS_MAX: '1' });
    try {
      const first = wsConnect(small.url, bearer(small.adminToken));
      await within('the connection', first.opened);
      const second = wsConnect(small.url, bearer(small.adminToken));
      expect((await within('the refusal', second.closed)).code).toBe(4429);
      const sse = await fetch(`${small.url}/graphql`, {
        method: 'POST',
        headers: { Accept: 'text/event-stream', 'Content-Type': 'application/json', ...bearer(small.adminToken) },
        body: JSON.stringify({ query: 'subscription { roleEvents { eventID } }' }),
      });
      expect(sse.status).toBe(429);
      expect(((await sse.json()) as { errors: { extensions: { code: string } }[] }).errors[0].extensions.code).toBe('TOO_MANY_REQUESTS');
      const sub = collect(first.client, 'subscription { roleEvents { eventID } }');
      await untilSubscriptions(small, 'roleEvents');
      await small.running.stop();
      expect(await within('the close at the stop', first.closed)).toMatchObject({ code: 1001 });
      await within('the end of the subscription', sub.ended);
    } finally {
      await small.stop();
    }
  });

  it('ends an SSE stream with SHUTTING_DOWN when the service stops', async () => {
    const other = await startTestService();
    try {
      const client = sseConnect(other.url, other.adminToken);
      const sub = collect(client, 'subscription { roleEvents { eventID } }');
      await untilLogged(other, 'the stream opened', (l) => l.msg === 'subscription stream opened');
      await other.running.stop();
      await within('the end of the stream', sub.ended);
      expect(sub.results.at(-1).errors[0].extensions.code).toBe('SHUTTING_DOWN');
      client.dispose();
    } finally {
      await other.stop();
    }
  });
});

(process.env.DATABASE_URL ? describe : describe.skip)('two instances on one database', () => {
  it('an event and a revocation made through one reach the other’s sockets within a second', async () => {
    const secondLines: string[] = [];
    const second = await startService(
      { ...svc.config, bootstrapToken: undefined },
      createLogger('info', (line) => secondLines.push(line)),
    );
    try {
      const token = await svc.tokenWith('user:read role:read');
      const watching = wsConnect(second.url, bearer(token));
      open.push(watching);
      await within('the connection', watching.opened);
      const sub = collect(watching.client, 'subscription { roleEvents { action at role { name } } }');
      await untilSubscriptions(second, 'roleEvents');
      expect((await svc.request('POST', '/role/', { body: { name: 'crossing' } })).status).toBe(201);
      const [event] = await sub.atLeast(1);
      const { at, ...rest } = event.data.roleEvents;
      expect(rest).toEqual({ action: 'CREATE', role: { name: 'crossing' } });
      // Within a second of the write's transaction (its event's time, taken by the database).
      expect(sub.receivedAt[0] - Date.parse(at)).toBeLessThan(1_000);
      const tokenId = await tokenIdOf(svc, token);
      expect((await svc.request('DELETE', `/token/${tokenId}`)).status).toBe(200);
      expect((await within('the close after the revocation', watching.closed)).code).toBe(4403);
      expect(await closedAfterChange({ logLines: secondLines }, tokenId)).toBeLessThan(1_000);
    } finally {
      await second.stop();
    }
  });
});

(process.env.DATABASE_URL ? describe : describe.skip)('commit order and the cursor', () => {
  it('holds an event behind a lower id still in flight, then sends both in id order; a rolled-back one holds nothing for long', async () => {
    const ws = connect();
    await within('the connection', ws.opened);
    const id = await createUser(svc, { firstName: 'Ordered', lastName: 'Realtime' });
    const sub = collect(ws.client, USER_EVENTS, { id: String(id), after: await newestEventId(svc) });
    const slow = new pg.Client({ connectionString: svc.config.databaseUrl });
    await slow.connect();
    try {
      // A transaction takes the lower id and stays open; a REST write takes the next one and commits.
      await slow.query('begin');
      const [{ id: lower }] = (
        await slow.query(`insert into audit_events (action, resource, record_id, changes) values ('patch', 'user', $1, '{}') returning id::text`, [id])
      ).rows;
      expect((await svc.request('PATCH', `/user/${id}`, { body: { lastName: 'Higher' } })).status).toBe(200);
      // The event source has read the higher event and handled it: held, not sent.
      await sourceReads();
      expect(sub.results).toHaveLength(0); // the higher event waits for the lower one
      await slow.query('commit');
      const [first, second] = await sub.atLeast(2);
      expect(first.data.userEvents.eventID).toBe(lower);
      expect(Number(second.data.userEvents.eventID)).toBeGreaterThan(Number(lower));
      // A rolled-back transaction's id never comes: the next event is not held for it.
      await slow.query('begin');
      await slow.query(`insert into audit_events (action, resource, record_id, changes) values ('patch', 'user', $1, '{}')`, [id]);
      expect((await svc.request('PATCH', `/user/${id}`, { body: { lastName: 'After rollback' } })).status).toBe(200);
      // The source has seen the gap and the transactions in flight when it did, and holds the event.
      await sourceReads(3);
      expect(sub.results).toHaveLength(2);
      // It cannot tell which of them took the id: the event waits until all have ended. On a
      // server shared with other databases (the test files beside this one) that may take longer
      // than the rollback: the bound is counted from whichever comes last. (Those in flight now
      // include every one the source noted that has not ended yet.)
      const [{ snapshot }] = await svc.sql<{ snapshot: string }>('select pg_current_snapshot()::text as snapshot');
      const [{ own }] = (await slow.query('select pg_current_xact_id()::text as own')).rows;
      const others = (snapshot.split(':')[2] ?? '').split(',').filter((xid) => xid && xid !== own);
      await slow.query('rollback');
      await waitFor(
        'the transactions in flight when the gap was seen to end',
        async () =>
          (
            await svc.sql<{ n: number }>(`select count(*)::int as n from unnest(?::xid8[]) x where pg_xact_status(x) = 'in progress'`, [
              `{${others.join(',')}}`,
            ])
          )[0].n === 0,
        45_000,
      );
      const released = Date.now();
      const [, , third] = await sub.atLeast(3);
      expect(third.data.userEvents.user.lastName).toBe('After rollback');
      expect(sub.receivedAt[2] - released).toBeLessThan(1_000);
    } finally {
      await slow.end();
    }
    sub.stop();
  });
});
