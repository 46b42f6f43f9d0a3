import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import WebSocket from 'ws';
import { createLogger } from '../../src/observability/log.js';
import { startService } from '../../src/server.js';
import { startTestService, type TestService } from '../support/service.js';
import { bearer, collect, sseConnect, wsConnect, wsUrl, type WsConnection } from '../support/subscriptions.js';

/**
 * Subscriptions (SPEC §10) over real sockets against the real app: graphql-ws over WebSocket and
 * graphql-sse over HTTP, events for REST and GraphQL writes, permissions, sockets that follow
 * their token, resume, and the limits. Runs on PostgreSQL and on the embedded database.
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/**
 * Lets the service's event source pass the writes made so far: on the embedded database it reads
 * the audit log every 250 ms, so a write just before a subscription may still be handed to it.
 */
const settled = () => sleep(400);

const USER_EVENTS = 'subscription ($id: ID, $after: ID) { userEvents(id: $id, after: $after) { eventID action id at user { id firstName lastName } } }';

async function createUser(firstName: string, lastName = 'Realtime'): Promise<number> {
  const created = await svc.request('POST', '/user/', { body: { firstName, lastName } });
  expect(created.status).toBe(201);
  return Number(created.body);
}

/** The audit events of a user, as the database holds them. */
const auditOf = (userID: number) =>
  svc.sql<{ id: string; action: string }>(`select a.id::text as id, a.action from audit_events a where a.resource = 'user' and a.record_id = ? order by a.id`, [
    userID,
  ]);

describe('graphql-ws', () => {
  it('streams committed changes of users from REST and GraphQL writes, in commit order, with the record as it is now', async () => {
    const ws = connect();
    await ws.opened;
    await settled();
    const sub = collect(ws.client, USER_EVENTS);
    await sleep(300); // the subscription is running
    const id = await createUser('Ada');
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
    await ws.opened;
    const id = await createUser('Grace');
    await settled();
    const sub = collect(ws.client, USER_EVENTS, { id: String(id) });
    await sleep(300);
    const refused = await svc.request('PATCH', `/user/${id}`, { body: { firstName: 42 } });
    expect(refused.status).toBe(400);
    const gone = await svc.request('PATCH', '/user/999999', { body: { firstName: 'Nobody' } });
    expect(gone.status).toBe(404);
    await svc.request('PATCH', `/user/${id}`, { body: { firstName: 'Grace B.' } });
    const [first] = await sub.atLeast(1);
    expect(first.data.userEvents).toMatchObject({ action: 'PATCH', user: { firstName: 'Grace B.' } });
    await sleep(300);
    expect(sub.results).toHaveLength(1);
    sub.stop();
  });

  it('refuses a connection without a valid token with 4401', async () => {
    for (const params of [null, bearer('not-a-token'), { Authorization: 'Basic abc' }]) {
      const ws = connect(params);
      await expect(ws.closed).resolves.toMatchObject({ code: 4401 });
    }
  });

  it('reads the token from authorization and headers.Authorization too', async () => {
    for (const params of [{ authorization: `Bearer ${svc.adminToken}` }, { headers: bearer(svc.adminToken) }]) {
      const ws = connect(params);
      await expect(ws.opened).resolves.toBeUndefined();
      ws.client.dispose();
    }
  });

  it('needs the read scope of what a subscription streams (FORBIDDEN)', async () => {
    const token = await svc.tokenWith('token:read');
    const ws = connect(bearer(token));
    await ws.opened;
    const sub = collect(ws.client, USER_EVENTS);
    await sub.ended;
    const errors = (sub.results[0]?.errors ?? sub.error) as { extensions: { code: string } }[];
    expect(errors[0].extensions.code).toBe('FORBIDDEN');
  });

  it('refuses queries and mutations: they go over HTTP', async () => {
    const ws = connect();
    await ws.opened;
    const sub = collect(ws.client, '{ viewer { id } }');
    await sub.ended;
    expect((sub.error as { extensions: { code: string } }[])[0].extensions.code).toBe('BAD_REQUEST');
  });

  it('refuses an Origin that is neither the service nor one of CORS_ORIGINS', async () => {
    const refused = await new Promise<number>((resolve) => {
      const socket = new WebSocket(wsUrl(svc.url), 'graphql-transport-ws', { headers: { Origin: 'https://elsewhere.example' } });
      socket.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      socket.on('open', () => resolve(101));
      socket.on('error', () => {});
    });
    expect(refused).toBe(403);
    const own = connect(bearer(svc.adminToken), { Origin: svc.url });
    await expect(own.opened).resolves.toBeUndefined();
  });
});

describe('graphql-sse', () => {
  it('streams the same events over Server-Sent Events', async () => {
    const client = sseConnect(svc.url, svc.adminToken);
    await settled();
    const sub = collect(client, USER_EVENTS);
    await sleep(300);
    const id = await createUser('Edsger');
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
});

describe('sockets follow their token', () => {
  const closesWithin = async (ws: WsConnection, ms: number) => {
    const started = Date.now();
    const closed = await Promise.race([ws.closed, new Promise<null>((resolve) => setTimeout(() => resolve(null), ms + 2_000))]);
    return { closed, ms: Date.now() - started };
  };

  it('closes a revoked token’s connections with 4403 within a second', async () => {
    const token = await svc.tokenWith('user:read');
    const ws = connect(bearer(token));
    await ws.opened;
    const [row] = await svc.sql<{ id: string }>('select id::text from tokens where access_token_hmac = ?', [svc.hmac(token)]);
    const started = Date.now();
    expect((await svc.request('DELETE', `/token/${row.id}`)).status).toBe(200);
    const closed = await ws.closed;
    expect(closed.code).toBe(4403);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('closes a connection whose user is deleted, and one whose token expires', async () => {
    const token = await svc.tokenWith('user:read');
    const ws = connect(bearer(token));
    await ws.opened;
    const [row] = await svc.sql<{ user_id: string }>('select user_id::text from tokens where access_token_hmac = ?', [svc.hmac(token)]);
    expect((await svc.request('DELETE', `/user/${row.user_id}`)).status).toBe(200);
    expect((await ws.closed).code).toBe(4403);

    const soon = await svc.tokenWith('user:read', { expireAt: new Date(Date.now() + 1_500).toISOString() });
    const expiring = connect(bearer(soon));
    await expiring.opened;
    const { closed, ms } = await closesWithin(expiring, 1_500);
    expect(closed?.code).toBe(4403);
    expect(ms).toBeLessThan(2_500);
  });

  it('follows a token whose expiry is moved later while connected, and closes it once its scope changes', async () => {
    const soon = await svc.tokenWith('user:read', { expireAt: new Date(Date.now() + 1_500).toISOString() });
    const ws = connect(bearer(soon));
    await ws.opened;
    const [row] = await svc.sql<{ id: string }>('select id::text from tokens where access_token_hmac = ?', [svc.hmac(soon)]);
    const patched = await svc.request('PATCH', `/token/${row.id}`, { body: { expireAt: new Date(Date.now() + 3_600_000).toISOString() } });
    expect(patched.status).toBe(200);
    const closed = await Promise.race([ws.closed, sleep(2_500).then(() => null)]);
    expect(closed).toBeNull();
    // Any other change (here its scope) and the caller the socket was opened with is gone: 4403.
    const started = Date.now();
    expect((await svc.request('PATCH', `/token/${row.id}`, { body: { scope: 'role:read' } })).status).toBe(200);
    expect((await ws.closed).code).toBe(4403);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('ends an SSE stream with a FORBIDDEN error when its token is revoked', async () => {
    const token = await svc.tokenWith('user:read');
    const client = sseConnect(svc.url, token);
    const sub = collect(client, USER_EVENTS);
    await sleep(300);
    const [row] = await svc.sql<{ id: string }>('select id::text from tokens where access_token_hmac = ?', [svc.hmac(token)]);
    await svc.request('DELETE', `/token/${row.id}`);
    await sub.ended;
    expect(sub.results.at(-1).errors[0].extensions.code).toBe('FORBIDDEN');
    client.dispose();
  });
});

describe('operations', () => {
  it('tokenEvents: token:read sees every token; without it, a caller may follow its own user’s tokens only', async () => {
    const own = await svc.tokenWith('user:read');
    const [mine] = await svc.sql<{ user_id: string }>('select user_id::text from tokens where access_token_hmac = ?', [svc.hmac(own)]);
    await settled();
    const ws = connect(bearer(own));
    await ws.opened;
    const query = 'subscription ($userID: ID) { tokenEvents(userID: $userID) { eventID action id userID token { id } } }';
    const refused = collect(ws.client, query, {});
    await refused.ended;
    expect((refused.results[0]?.errors ?? refused.error)[0].extensions.code).toBe('FORBIDDEN');
    const sub = collect(ws.client, query, { userID: mine.user_id });
    await sleep(300);
    const created = await svc.request('POST', '/token/', { body: { userID: Number(mine.user_id), accessToken: `own-${Date.now()}`, scope: 'user:read' } });
    expect(created.status).toBe(201);
    await svc.tokenWith('user:read'); // another user's token: not streamed
    const [event] = await sub.atLeast(1);
    expect(event.data.tokenEvents).toMatchObject({ action: 'CREATE', id: String(created.body), userID: mine.user_id, token: null });
    expect(event.errors[0].extensions.code).toBe('FORBIDDEN'); // the token itself needs token:read
    await sleep(300);
    expect(sub.results).toHaveLength(1);
    sub.stop();
  });

  it('linkEvents: links made, rights changed and links removed', async () => {
    const ws = connect();
    await ws.opened;
    const id = await createUser('Barbara');
    const app = await svc.graphql('mutation { createApplication(input: { name: "realtime-app" }) { id } }');
    const applicationID = app.body.data.createApplication.id;
    const sub = collect(ws.client, 'subscription ($userID: ID) { linkEvents(userID: $userID) { eventID action userID applicationID roleID right } }', {
      userID: String(id),
    });
    await sleep(300);
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
    await ws.opened;
    const apps = collect(ws.client, 'subscription { applicationEvents { action application { name } } }');
    const roles = collect(ws.client, 'subscription { roleEvents { action } }');
    await roles.ended;
    expect((roles.results[0]?.errors ?? roles.error)[0].extensions.code).toBe('FORBIDDEN');
    await sleep(300);
    await svc.graphql('mutation { createApplication(input: { name: "watched-app" }) { id } }');
    const [event] = await apps.atLeast(1);
    expect(event.data.applicationEvents).toEqual({ action: 'CREATE', application: { name: 'watched-app' } });
    apps.stop();
  });

  it('resumes after an eventID: the later events from the audit log, then live ones, none missed or twice, with writes racing', async () => {
    const id = await createUser('Alan');
    for (let i = 0; i < 5; i++) await svc.request('PATCH', `/user/${id}`, { body: { lastName: `Before ${i}` } });
    const [first] = await auditOf(id);
    const ws = connect();
    await ws.opened;
    // Writes go on while the subscription replays and joins the live stream.
    const racing = (async () => {
      for (let i = 0; i < 15; i++) await svc.request('PATCH', `/user/${id}`, { body: { lastName: `During ${i}` } });
    })();
    const sub = collect(ws.client, USER_EVENTS, { id: String(id), after: first.id });
    await racing;
    const audit = await auditOf(id);
    const expected = audit.slice(1).map((e) => e.id);
    await sub.atLeast(expected.length);
    await sleep(300);
    expect(sub.results.map((r) => r.data.userEvents.eventID)).toEqual(expected);
    sub.stop();
  });

  it('refuses a resume of more than 1,000 events (BAD_USER_INPUT: read again)', async () => {
    const id = await createUser('Many');
    await svc.sql(`insert into audit_events (action, resource, record_id, changes) select 'patch', 'user', ?, '{}'::jsonb from generate_series(1, 1001)`, [id]);
    const ws = connect();
    await ws.opened;
    const sub = collect(ws.client, USER_EVENTS, { id: String(id), after: '0' });
    await sub.ended;
    const errors = sub.results[0]?.errors ?? sub.error;
    expect(errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'after' });
  });
});

describe('limits', () => {
  it('runs at most 100 subscriptions on a connection', async () => {
    const ws = connect();
    await ws.opened;
    const subs = Array.from({ length: 100 }, () => collect(ws.client, 'subscription { roleEvents { eventID } }'));
    await sleep(500);
    const extra = collect(ws.client, 'subscription { roleEvents { eventID } }');
    await extra.ended;
    expect((extra.error as { extensions: { code: string } }[])[0].extensions.code).toBe('TOO_MANY_REQUESTS');
    subs[0].stop();
    await sleep(200);
    const another = collect(ws.client, 'subscription { roleEvents { eventID } }');
    await sleep(300);
    expect(another.error).toBeUndefined();
    for (const sub of [...subs, another]) sub.stop();
  });

  it('applies the query limits of HTTP: depth, aliases, cost, syntax without echoing values', async () => {
    const ws = connect();
    await ws.opened;
    const deep = `subscription { userEvents { user { ${'tokens { items { user { '.repeat(4)} id ${'} } } '.repeat(4)} } } }`;
    const aliases = `subscription { userEvents { ${Array.from({ length: 120 }, (_, i) => `a${i}: eventID`).join(' ')} } }`;
    const costly = 'subscription { userEvents { user { tokens(size: 1000) { items { user { tokens(size: 1000) { items { id } } } } } } } }';
    for (const query of [deep, aliases, costly]) {
      const sub = collect(ws.client, query);
      await sub.ended;
      expect((sub.error as { extensions: { code: string } }[])[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    }
    const broken = collect(ws.client, 'subscription { userEvents(id: "secret-value" { id } }');
    await broken.ended;
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
    const id = await createUser('Cascade');
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
    const id = await createUser('Linked');
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
    await ws.opened;
    const sub = collect(ws.client, 'subscription { roleEvents { eventID } }');
    await sleep(300);
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
      await first.opened;
      const second = wsConnect(small.url, bearer(small.adminToken));
      expect((await second.closed).code).toBe(4429);
      const sse = await fetch(`${small.url}/graphql`, {
        method: 'POST',
        headers: { Accept: 'text/event-stream', 'Content-Type': 'application/json', ...bearer(small.adminToken) },
        body: JSON.stringify({ query: 'subscription { roleEvents { eventID } }' }),
      });
      expect(sse.status).toBe(429);
      expect(((await sse.json()) as { errors: { extensions: { code: string } }[] }).errors[0].extensions.code).toBe('TOO_MANY_REQUESTS');
      const sub = collect(first.client, 'subscription { roleEvents { eventID } }');
      await sleep(200);
      await small.running.stop();
      expect(await first.closed).toMatchObject({ code: 1001 });
      await sub.ended;
    } finally {
      await small.stop();
    }
  });

  it('ends an SSE stream with SHUTTING_DOWN when the service stops', async () => {
    const other = await startTestService();
    try {
      const client = sseConnect(other.url, other.adminToken);
      const sub = collect(client, 'subscription { roleEvents { eventID } }');
      await sleep(300);
      await other.running.stop();
      await sub.ended;
      expect(sub.results.at(-1).errors[0].extensions.code).toBe('SHUTTING_DOWN');
      client.dispose();
    } finally {
      await other.stop();
    }
  });
});

(process.env.DATABASE_URL ? describe : describe.skip)('two instances on one database', () => {
  it('an event and a revocation made through one reach the other’s sockets within a second', async () => {
    const second = await startService({ ...svc.config, bootstrapToken: undefined }, createLogger('silent'));
    try {
      const token = await svc.tokenWith('user:read role:read');
      const watching = wsConnect(second.url, bearer(token));
      open.push(watching);
      await watching.opened;
      const sub = collect(watching.client, 'subscription { roleEvents { action role { name } } }');
      await sleep(300);
      const started = Date.now();
      expect((await svc.request('POST', '/role/', { body: { name: 'crossing' } })).status).toBe(201);
      const [event] = await sub.atLeast(1, 1_000);
      expect(event.data.roleEvents).toEqual({ action: 'CREATE', role: { name: 'crossing' } });
      expect(Date.now() - started).toBeLessThan(1_000);
      const [row] = await svc.sql<{ id: string }>('select id::text from tokens where access_token_hmac = ?', [svc.hmac(token)]);
      const revoked = Date.now();
      expect((await svc.request('DELETE', `/token/${row.id}`)).status).toBe(200);
      expect((await watching.closed).code).toBe(4403);
      expect(Date.now() - revoked).toBeLessThan(1_000);
    } finally {
      await second.stop();
    }
  });
});

(process.env.DATABASE_URL ? describe : describe.skip)('commit order and the cursor', () => {
  it('holds an event behind a lower id still in flight, then sends both in id order; a rolled-back one holds nothing for long', async () => {
    const ws = connect();
    await ws.opened;
    const id = await createUser('Ordered');
    await settled();
    const sub = collect(ws.client, USER_EVENTS, { id: String(id) });
    await sleep(300);
    const slow = new pg.Client({ connectionString: svc.config.databaseUrl });
    await slow.connect();
    try {
      // A transaction takes the lower id and stays open; a REST write takes the next one and commits.
      await slow.query('begin');
      const [{ id: lower }] = (
        await slow.query(`insert into audit_events (action, resource, record_id, changes) values ('patch', 'user', $1, '{}') returning id::text`, [id])
      ).rows;
      expect((await svc.request('PATCH', `/user/${id}`, { body: { lastName: 'Higher' } })).status).toBe(200);
      await sleep(500);
      expect(sub.results).toHaveLength(0); // the higher event waits for the lower one
      await slow.query('commit');
      const [first, second] = await sub.atLeast(2, 2_000);
      expect(first.data.userEvents.eventID).toBe(lower);
      expect(Number(second.data.userEvents.eventID)).toBeGreaterThan(Number(lower));
      // A rolled-back transaction's id never comes: the next event is not held for it.
      await slow.query('begin');
      await slow.query(`insert into audit_events (action, resource, record_id, changes) values ('patch', 'user', $1, '{}')`, [id]);
      expect((await svc.request('PATCH', `/user/${id}`, { body: { lastName: 'After rollback' } })).status).toBe(200);
      await sleep(200);
      await slow.query('rollback');
      const started = Date.now();
      const [, , third] = await sub.atLeast(3, 2_000);
      expect(third.data.userEvents.user.lastName).toBe('After rollback');
      expect(Date.now() - started).toBeLessThan(1_000);
    } finally {
      await slow.end();
    }
    sub.stop();
  });
});
