import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import WebSocket from 'ws';
import { addressKey } from '../../src/realtime/ws.js';
import { openRaw } from '../support/raw-http.js';
import { startTestService, type TestService } from '../support/service.js';
import { bearer, collect, sseConnect, wsConnect, wsUrl, type Closed, type WsConnection } from '../support/subscriptions.js';

/**
 * Who holds the places of SUBSCRIPTIONS_MAX (issue 34, point 5): only connections whose token was
 * accepted. Sockets that never send their connection_init hold one of the few waiting places
 * instead (SUBSCRIPTIONS_WAITING_PER_ADDRESS from one address, SUBSCRIPTIONS_WAITING in all; 1013
 * past them) until SUBSCRIPTIONS_INIT_TIMEOUT_MS; an SSE stream takes a place only once its request
 * is authenticated. Real sockets against the real service; clients of other addresses connect from
 * 127.0.0.2 and 127.0.0.3 (Linux routes all of 127.0.0.0/8 to the loopback).
 */

const started: TestService[] = [];
const closers: (() => unknown)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  for (const svc of started.splice(0)) await svc.stop();
});

async function service(env: Record<string, string>): Promise<TestService> {
  const svc = await startTestService(env);
  started.push(svc);
  return svc;
}

/** Waits for `promise`, or fails naming `what` after `ms`. */
function within<T>(promise: Promise<T>, what: string, ms = 10_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

interface RawSocket {
  socket: WebSocket;
  /** Resolves once the upgrade is done (the service has counted the socket then). */
  opened: Promise<void>;
  closed: Promise<Closed>;
}

/** A socket of the graphql-transport-ws protocol that never sends connection_init. */
function rawSocket(svc: TestService, localAddress = '127.0.0.1'): RawSocket {
  const socket = new WebSocket(wsUrl(svc.url), 'graphql-transport-ws', { localAddress });
  const closed = new Promise<Closed>((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: String(reason) })));
  const opened = new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  closers.push(() => socket.terminate());
  return { socket, opened, closed };
}

/**
 * Whether the service still holds a socket open: it answers a ping with a pong. A socket the
 * service closed has its close frame ahead of any pong, and the service sends no pong after it.
 */
async function held(raw: RawSocket): Promise<boolean> {
  await within(raw.opened, 'the upgrade');
  if (raw.socket.readyState !== WebSocket.OPEN) return false;
  const answered = new Promise<boolean>((resolve) => {
    raw.socket.once('pong', () => resolve(raw.socket.readyState === WebSocket.OPEN));
    raw.socket.once('close', () => resolve(false));
  });
  raw.socket.ping();
  return within(answered, 'a pong or a close');
}

/** A graphql-ws client with the admin token, from `localAddress`. */
function client(svc: TestService, localAddress = '127.0.0.1'): WsConnection {
  const connection = wsConnect(svc.url, bearer(svc.adminToken), {}, { localAddress });
  closers.push(() => connection.client.dispose());
  return connection;
}

/** Connects a graphql-ws client until it is acknowledged (a place given back is seen by the service a moment after the client sees its socket close). */
async function eventuallyIn(svc: TestService, localAddress = '127.0.0.1', ms = 10_000): Promise<WsConnection> {
  const deadline = Date.now() + ms;
  for (;;) {
    const connection = client(svc, localAddress);
    const outcome = await within(Promise.race([connection.opened.then(() => null), connection.closed]), 'an acknowledgement or a close');
    if (outcome === null) return connection;
    if (outcome.code !== 1013 || Date.now() > deadline) throw new Error(`not let in: ${outcome.code} ${outcome.reason}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const WAITING_FROM_ADDRESS = { code: 1013, reason: 'Try again later: too many connections from this address wait for connection_init' };
const WAITING = { code: 1013, reason: 'Try again later: too many connections wait for connection_init' };

/** The value of a series in /metrics. */
async function metric(svc: TestService, series: string): Promise<number> {
  const text = (await svc.request('GET', '/metrics', { token: null })).text as string;
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return Number(line?.split(' ')[1]);
}

/** Resolves once a roleEvents subscription runs (its stream listens for events), as /metrics counts them. */
async function roleEventsRunning(svc: TestService, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while ((await metric(svc, 'realtime_subscriptions{operation="roleEvents"}')) < 1) {
    if (Date.now() > deadline) throw new Error(`no roleEvents subscription ran within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('graphql-ws', () => {
  it('sockets that never send connection_init hold no place of SUBSCRIPTIONS_MAX: authenticated clients get in, up to it', async () => {
    // The init timeout far beyond the test: the silent sockets stay open throughout.
    const svc = await service({
      SUBSCRIPTIONS_MAX: '2',
      SUBSCRIPTIONS_WAITING_PER_ADDRESS: '5',
      SUBSCRIPTIONS_WAITING: '6',
      SUBSCRIPTIONS_INIT_TIMEOUT_MS: '600000',
    });
    const silent = [rawSocket(svc), rawSocket(svc), rawSocket(svc)];
    for (const raw of silent) expect(await held(raw)).toBe(true);

    const first = client(svc);
    const second = client(svc);
    await within(first.opened, 'the first client acknowledged');
    await within(second.opened, 'the second client acknowledged');
    for (const raw of silent) expect(await held(raw)).toBe(true);
    expect(await metric(svc, 'realtime_connections{transport="ws"}')).toBe(2);

    // SUBSCRIPTIONS_MAX still bounds the authenticated ones.
    const third = client(svc);
    expect(await within(third.closed, 'the third client closed')).toEqual({ code: 4429, reason: 'Too many connections' });
    // And a subscription runs on an admitted connection.
    const sub = collect(first.client, 'subscription { roleEvents { eventID action } }');
    await roleEventsRunning(svc);
    expect((await svc.request('POST', '/role/', { body: { name: 'admitted' } })).status).toBe(201);
    const [event] = await sub.atLeast(1);
    expect(event.data.roleEvents.action).toBe('CREATE');
    sub.stop();
  });

  it('bounds the sockets waiting for connection_init per address and in all, with 1013 naming which; an authenticated one waits no more', async () => {
    const svc = await service({
      SUBSCRIPTIONS_MAX: '10',
      SUBSCRIPTIONS_WAITING_PER_ADDRESS: '3',
      SUBSCRIPTIONS_WAITING: '4',
      SUBSCRIPTIONS_INIT_TIMEOUT_MS: '600000',
    });
    const mine = [rawSocket(svc), rawSocket(svc), rawSocket(svc)];
    for (const raw of mine) expect(await held(raw)).toBe(true);

    // The 4th waiting socket from one address, silent or not, is closed at once.
    const fourth = rawSocket(svc);
    expect(await within(fourth.closed, 'the 4th socket closed')).toEqual(WAITING_FROM_ADDRESS);
    expect(await within(client(svc).closed, 'a client of the same address closed')).toEqual(WAITING_FROM_ADDRESS);

    // Another address still may, up to the bound in all.
    const other = rawSocket(svc, '127.0.0.2');
    expect(await held(other)).toBe(true);
    expect(await within(client(svc, '127.0.0.3').closed, 'a client of a third address closed')).toEqual(WAITING);
    for (const raw of [...mine, other]) expect(await held(raw)).toBe(true);

    // A place given back (a silent socket closed by its client) lets a client in; once
    // acknowledged, it no longer counts as waiting: its address may have 3 waiting again.
    mine[0].socket.close();
    await within(mine[0].closed, 'the client’s close');
    await eventuallyIn(svc);
    const again = rawSocket(svc);
    expect(await held(again)).toBe(true);
    expect(await within(rawSocket(svc).closed, 'one more socket closed')).toEqual(WAITING_FROM_ADDRESS);
    const refusals = (svc.logLines.join('\n').match(/"reason":"waiting(_from_address)?"/g) ?? []).length;
    expect(refusals).toBeGreaterThanOrEqual(4);
  });

  it('closes a socket whose connection_init does not come within SUBSCRIPTIONS_INIT_TIMEOUT_MS (4408) and gives its place back', async () => {
    const svc = await service({ SUBSCRIPTIONS_WAITING_PER_ADDRESS: '1', SUBSCRIPTIONS_INIT_TIMEOUT_MS: '100' });
    const silent = rawSocket(svc);
    expect(await within(silent.closed, 'the silent socket closed')).toEqual({ code: 4408, reason: 'Connection initialisation timeout' });
    const connection = await eventuallyIn(svc);
    await connection.opened;
  });

  it('cuts off a refused socket whose peer never answers the close frame (it is counted nowhere)', async () => {
    const svc = await service({ SUBSCRIPTIONS_WAITING_PER_ADDRESS: '1', SUBSCRIPTIONS_INIT_TIMEOUT_MS: '600000' });
    expect(await held(rawSocket(svc))).toBe(true);
    // A peer that upgrades, then reads and sends nothing more: it never answers a close frame.
    const peer = await openRaw(svc.url);
    closers.push(() => peer.close());
    await peer.write(
      `GET /graphql HTTP/1.1\r\nHost: ${new URL(svc.url).host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n`,
    );
    // ws would wait 30 s for the answer; the service cuts the peer off well before this wait ends.
    const bytes = await peer.untilClosed('the service cutting the silent peer off', 15_000);
    expect(bytes.toString('latin1')).toMatch(/^HTTP\/1\.1 101 /);
    const frame = bytes.subarray(bytes.indexOf('\r\n\r\n') + 4);
    expect(frame[0]).toBe(0x88); // a close frame
    expect(frame.readUInt16BE(2)).toBe(1013);
    expect(frame.subarray(4).toString()).toBe(WAITING_FROM_ADDRESS.reason);
  });

  it('addressKey: an IPv4 address itself, an IPv6 one by its /64', () => {
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8:1:2:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressKey('2001:0db8:0000:0002::1')).toBe('2001:db8:0:2::/64');
    expect(addressKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(addressKey('64:ff9b::203.0.113.7')).toBe('64:ff9b:0:0::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
  });
});

describe('graphql-sse', () => {
  it('a stream takes a place only once its request is authenticated; no reservation mode; silent sockets hold none', async () => {
    const svc = await service({ SUBSCRIPTIONS_MAX: '1', SUBSCRIPTIONS_INIT_TIMEOUT_MS: '600000' });
    const subscription = JSON.stringify({ query: 'subscription { roleEvents { eventID action } }' });
    const post = (headers: Record<string, string>) =>
      fetch(`${svc.url}/graphql`, {
        method: 'POST',
        headers: { Accept: 'text/event-stream', 'Content-Type': 'application/json', ...headers },
        body: subscription,
      });
    const silent = rawSocket(svc);
    expect(await held(silent)).toBe(true);

    for (const headers of [{}, bearer('not-a-token')]) {
      const refused = await post(headers);
      expect(refused.status).toBe(401);
      expect(((await refused.json()) as { errors: { extensions: { code: string } }[] }).errors[0].extensions.code).toBe('UNAUTHENTICATED');
    }
    // graphql-sse's single connection mode (a reservation by PUT, then a stream by its token) is not served.
    const reservation = await fetch(`${svc.url}/graphql`, { method: 'PUT', headers: { Accept: 'text/plain', ...bearer(svc.adminToken) } });
    expect(reservation.status).toBe(405);
    const byToken = await fetch(`${svc.url}/graphql?token=reserved`, { headers: { Accept: 'text/event-stream', 'X-GraphQL-Event-Stream-Token': 'reserved' } });
    expect(byToken.status).not.toBe(200);
    expect(byToken.headers.get('content-type')).not.toMatch(/event-stream/);
    await byToken.body?.cancel();

    // The one place is free for an authenticated stream, in spite of the silent socket.
    const sse = sseConnect(svc.url, svc.adminToken);
    closers.push(() => sse.dispose());
    const sub = collect(sse, 'subscription { roleEvents { eventID action } }');
    await roleEventsRunning(svc);
    expect((await svc.request('POST', '/role/', { body: { name: 'over-sse' } })).status).toBe(201);
    const [event] = await sub.atLeast(1);
    expect(event.data.roleEvents.action).toBe('CREATE');
    expect(await metric(svc, 'realtime_connections{transport="sse"}')).toBe(1);
    // It took the place: another authenticated stream is refused.
    const second = await post(bearer(svc.adminToken));
    expect(second.status).toBe(429);
    await second.body?.cancel();
    expect(await held(silent)).toBe(true);
    sub.stop();
  });
});
