import { Webhook } from 'standardwebhooks';
import { waitFor } from '../support/processes.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startTestService, type TestService } from '../support/service.js';
import { createUser } from '../support/users.js';

/**
 * Deliveries to a real receiver (SPEC §13, A delivery and Guarantees): every delivery verified with
 * `standardwebhooks`' `Webhook.verify`, the body the audit event as GET /audit/ answers it, in
 * order, retried on failure with the schedule injected (milliseconds, not minutes), 410 and giving
 * up disabling the webhook, re-enabling resuming where it stopped.
 */
let svc: TestService;
let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
  svc = await startTestService({
    WEBHOOK_ALLOW_PRIVATE: 'true',
    WEBHOOK_RETRY_SCHEDULE: '50ms,100ms,200ms',
    WEBHOOK_TIMEOUT_MS: '1000',
    WEBHOOK_POLL_MS: '100',
  });
});
afterAll(async () => {
  await svc?.stop();
  await receiver?.close();
});

let names = 0;
/** A webhook of its own on the receiver (its secret registered there); returns its id, name and secret. */
async function hook(events: string[] = ['*'], extra: Record<string, unknown> = {}) {
  const name = `h${++names}`;
  const res = await svc.request('POST', '/webhook/', { body: { url: receiver.url(name), events, ...extra }, headers: { Prefer: 'return=representation' } });
  expect(res.status).toBe(201);
  receiver.secrets.set(name, [res.body.secret]);
  return { id: res.body.id as number, name, secret: res.body.secret as string };
}

const auditOf = async (id: number) => (await svc.request('GET', `/audit/?filter=${encodeURIComponent(`id eq ${id}`)}`)).body[0];

describe('a delivery', () => {
  test('is a signed POST of {type, timestamp, data}: the audit event as GET /audit/ answers it, verified by Webhook.verify', async () => {
    const { name, secret } = await hook(['user.create']);
    const user = await createUser(svc, { firstName: 'Hook', lastName: 'Signed' });
    const [delivery] = await receiver.waitFor(name, 1);
    expect(delivery.verifiedBy).toEqual([0]);
    const event = await auditOf(Number(delivery.id));
    expect(event).toMatchObject({ action: 'create', resource: 'user', recordID: user });
    expect(delivery.json).toEqual({ type: 'user.create', timestamp: event.at, data: event });
    expect(delivery.headers['content-type']).toBe('application/json');
    expect(delivery.headers['webhook-id']).toBe(String(event.id));
    expect(Number(delivery.headers['webhook-timestamp'])).toBeGreaterThan(Date.parse(event.at) / 1000 - 5);
    expect(delivery.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    // What a receiver's code does, by the library: the payload back when the signature holds.
    expect(new Webhook(secret).verify(delivery.body, delivery.headers)).toEqual(delivery.json);
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(delivery.body, delivery.headers)).toThrow();
  });

  test('in event order, only the events its patterns match', async () => {
    const { name } = await hook(['user.patch', 'role.*']);
    const user = await createUser(svc, { firstName: 'Hook', lastName: 'Ordered' });
    for (let i = 0; i < 5; i++) expect((await svc.request('PATCH', `/user/${user}`, { body: { status: i + 1 } })).status).toBe(200);
    const role = await svc.request('POST', '/role/', { body: { name: `r-${Date.now()}` } });
    expect(role.status).toBe(201);
    const got = await receiver.waitFor(name, 6);
    await waitFor(
      'nothing more',
      async () => (await svc.request('GET', `/audit/?filter=${encodeURIComponent(`resource eq role and recordID eq ${role.body}`)}`)).body.length === 1,
    );
    const ids = got.map((d) => Number(d.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(got.map((d) => d.json.type)).toEqual(['user.patch', 'user.patch', 'user.patch', 'user.patch', 'user.patch', 'role.create']);
    expect(got.every((d) => d.verifiedBy.length === 1)).toBe(true);
  });
});

/** The webhook as GET /webhook/{id} answers it. */
const webhookOf = async (id: number) => (await svc.request('GET', `/webhook/${id}`)).body;
const historyOf = async (id: number, query = '') => svc.request('GET', `/webhook/${id}/delivery/${query}`);

describe('failures and retries', () => {
  test('a 500, a timeout, a connection the receiver drops and a 3xx are retried; the next event waits for the 2xx; each attempt is in the history', async () => {
    const { id, name } = await hook(['user.create']);
    receiver.script(name, { status: 500, body: 'down' }, 'hang', { status: 302, headers: { location: receiver.url('elsewhere') } });
    const first = await createUser(svc, { firstName: 'Hook', lastName: 'Retried' });
    const second = await createUser(svc, { firstName: 'Hook', lastName: 'After' });
    const got = await receiver.waitFor(name, 5);
    // The first event four times (500, timeout, 302 not followed, 2xx), then the second.
    expect(got.map((d) => d.json.data.recordID)).toEqual([first, first, first, first, second]);
    expect(new Set(got.slice(0, 4).map((d) => d.id)).size).toBe(1);
    expect(receiver.received('elsewhere')).toBe(0);
    expect(got.every((d) => d.verifiedBy.length === 1)).toBe(true);
    await waitFor('the history', async () => (await historyOf(id)).body.length === 5);
    const history = (await historyOf(id, '?orderBy=id')).body;
    expect(history.map((h: { attempt: number; status: number | null }) => [h.attempt, h.status])).toEqual([
      [1, 500],
      [2, null],
      [3, 302],
      [4, 204],
      [1, 204],
    ]);
    expect(history[0]).toMatchObject({ error: 'HTTP 500', responseBody: 'down', eventID: Number(got[0].id) });
    expect(history[1].error).toBe('timeout');
    expect(history[2].error).toBe('HTTP 302');
    expect(history[3]).toMatchObject({ error: null, responseBody: '' });
    expect(Object.keys(history[0]).sort()).toEqual(['at', 'attempt', 'durationMs', 'error', 'eventID', 'id', 'responseBody', 'status']);
    expect((await webhookOf(id)).active).toBe(true);
  });

  test('410 Gone disables the webhook at once, with its reason and a warn line; active: true resumes with that event', async () => {
    const { id, name } = await hook(['user.create']);
    receiver.script(name, { status: 410 });
    const first = await createUser(svc, { firstName: 'Hook', lastName: 'Gone' });
    await receiver.waitFor(name, 1);
    await waitFor('the webhook disabled', async () => (await webhookOf(id)).active === false);
    const disabled = await webhookOf(id);
    expect(disabled.disabledReason).toMatch(/410 Gone/);
    expect(svc.logLines.some((l) => l.includes('"level":"warn"') && l.includes('webhook disabled') && l.includes(`"webhook":${id}`))).toBe(true);
    // The disable is an audited write of the service's own (no actor).
    const audit = (await svc.request('GET', `/audit/?filter=${encodeURIComponent(`resource eq webhook and recordID eq ${id} and action eq patch`)}`)).body;
    expect(audit.at(-1)).toMatchObject({ actorTokenID: null, changes: { active: { before: true, after: false } } });
    const second = await createUser(svc, { firstName: 'Hook', lastName: 'While disabled' });
    expect((await svc.request('PATCH', `/webhook/${id}`, { body: { active: true } })).status).toBe(200);
    expect(await webhookOf(id)).toMatchObject({ active: true, disabledReason: null });
    const got = await receiver.waitFor(name, 3);
    expect(got.map((d) => d.json.data.recordID)).toEqual([first, first, second]);
  });

  test('retries end after WEBHOOK_RETRY_HOURS from the first failure: the webhook is disabled (warn lines), and re-enabling resumes', async () => {
    const { id, name } = await hook(['user.create']);
    receiver.fallback = { status: 503 };
    try {
      const user = await createUser(svc, { firstName: 'Hook', lastName: 'Given up' });
      await receiver.waitFor(name, 2);
      // The first failure a day ago, as the clock will say 24 hours later.
      await svc.sql(`update webhook_states set failing_since = now() - interval '25 hours' where webhook_id = ?`, [id]);
      await waitFor('the webhook disabled', async () => (await webhookOf(id)).active === false);
      expect((await webhookOf(id)).disabledReason).toMatch(/^gave up on event \d+ after \d+ attempts over 24 h \(last: HTTP 503\)$/);
      expect(svc.logLines.some((l) => l.includes('webhook delivery given up') && l.includes(`"webhook":${id}`))).toBe(true);
      receiver.fallback = { status: 204 };
      const before = receiver.received(name);
      expect((await svc.request('PATCH', `/webhook/${id}`, { body: { active: true } })).status).toBe(200);
      const [resumed] = (await receiver.waitFor(name, before + 1)).slice(before);
      expect(resumed.json.data.recordID).toBe(user);
    } finally {
      receiver.fallback = { status: 204 };
    }
  });

  test('the answer’s body is read up to 64 KiB and recorded', async () => {
    const { id, name } = await hook(['user.create']);
    receiver.script(name, { status: 200, body: 'x'.repeat(200_000) });
    await createUser(svc, { firstName: 'Hook', lastName: 'Big answer' });
    await receiver.waitFor(name, 1);
    await waitFor('the history', async () => (await historyOf(id)).body.length === 1);
    const [row] = (await historyOf(id)).body;
    expect(row.status).toBe(200);
    expect(row.responseBody).toBe('x'.repeat(64 * 1024));
  });
});

describe('secrets', () => {
  test('after a rotation both secrets sign for 24 hours; then only the new one', async () => {
    const { id, name, secret } = await hook(['user.create']);
    const rotated = await svc.request('POST', `/webhook/${id}/secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body).toMatch(/^whsec_/);
    expect(rotated.body).not.toBe(secret);
    receiver.secrets.set(name, [secret, rotated.body]);
    await createUser(svc, { firstName: 'Hook', lastName: 'Both' });
    const [both] = await receiver.waitFor(name, 1);
    expect(both.verifiedBy).toEqual([0, 1]);
    expect(both.headers['webhook-signature'].split(' ')).toHaveLength(2);
    // The old secret past its 24 hours.
    await svc.sql(`update webhook_secrets set signs_until = now() - interval '1 second' where webhook_id = ?`, [id]);
    await svc.request('PATCH', `/webhook/${id}`, { body: { description: 'reloaded' } });
    await waitFor('one signature', async () => {
      await createUser(svc, { firstName: 'Hook', lastName: 'New only' });
      const last = receiver.of(name).at(-1)!;
      return last.headers['webhook-signature'].split(' ').length === 1;
    });
    expect(receiver.of(name).at(-1)!.verifiedBy).toEqual([1]);
  });
});

describe('replay and history', () => {
  test('replay delivers again the events after `after`, in order; past the newest or more than 100,000 back is a 400', async () => {
    const { id, name } = await hook(['user.create']);
    const users = [
      await createUser(svc, { firstName: 'Hook', lastName: 'R1' }),
      await createUser(svc, { firstName: 'Hook', lastName: 'R2' }),
      await createUser(svc, { firstName: 'Hook', lastName: 'R3' }),
    ];
    const first = await receiver.waitFor(name, 3);
    const after = Number(first[0].id);
    const replay = await svc.request('POST', `/webhook/${id}/replay`, { body: { after } });
    expect(replay.status).toBe(200);
    expect(replay.body).toBe(1);
    const got = (await receiver.waitFor(name, 5)).slice(3);
    expect(got.map((d) => d.json.data.recordID)).toEqual(users.slice(1));
    const [{ newest }] = await svc.sql<{ newest: string }>('select max(id)::text as newest from audit_events');
    for (const [body, message] of [
      [{ after: Number(newest) + 1 }, /past the newest event/],
      [{ after: -1 }, /between 0 and/],
      [{ after: 'x' }, /integer/],
      [{}, /is required/],
    ] as const) {
      const res = await svc.request('POST', `/webhook/${id}/replay`, { body });
      expect({ status: res.status, field: res.body.details?.[0]?.field }).toEqual({ status: 400, field: 'after' });
      expect(res.body.message).toMatch(message);
    }
    // 100,000 events back: the id sequence moved on as 100,001 events would move it.
    await svc.sql(`select setval(pg_get_serial_sequence('audit_events', 'id'), (select max(id) from audit_events) + 100000)`);
    await createUser(svc, { firstName: 'Hook', lastName: 'Far ahead' });
    const [{ last }] = await svc.sql<{ last: string }>('select max(id)::text as last from audit_events');
    expect((await svc.request('POST', `/webhook/${id}/replay`, { body: { after: Number(last) - 100_001 } })).status).toBe(400);
    expect((await svc.request('POST', `/webhook/${id}/replay`, { body: { after: Number(last) - 100_000 } })).status).toBe(200);
    expect((await svc.request('POST', `/webhook/${id}/replay`, { body: { after: Number(last) } })).status).toBe(200);
  });

  test('the history takes the list language and pages; unknown webhook 404', async () => {
    const { id, name } = await hook(['user.create']);
    receiver.script(name, { status: 500 }, { status: 500 });
    await createUser(svc, { firstName: 'Hook', lastName: 'H' });
    await receiver.waitFor(name, 3);
    await waitFor('the history', async () => (await historyOf(id)).body.length === 3);
    const failed = await historyOf(id, `?filter=${encodeURIComponent('status ge 500')}&orderBy=-attempt`);
    expect(failed.status).toBe(200);
    expect(failed.headers.get('x-total-count')).toBe('2');
    expect(failed.body.map((h: { attempt: number }) => h.attempt)).toEqual([2, 1]);
    const json = await historyOf(id, `?filter=${encodeURIComponent(JSON.stringify({ status: { isNull: false }, attempt: { gte: 3 } }))}`);
    expect(json.body.map((h: { attempt: number }) => h.attempt)).toEqual([3]);
    const paged = await historyOf(id, '?pageSize=1&page=2');
    expect(paged.body).toHaveLength(1);
    expect(paged.headers.get('link')).toContain('rel="next"');
    expect((await historyOf(id, '?filter=nope%20eq%201')).status).toBe(400);
    expect((await historyOf(id, '?orderBy=responseBody')).status).toBe(400);
    expect((await historyOf(99_999_999)).status).toBe(404);
    const gql = await svc.graphql(
      'query($id: ID!) { webhook(id: $id) { deliveries(orderBy: [{ attempt: DESC }], pageSize: 2) { total data { attempt status error } } } }',
      {
        id,
      },
    );
    expect(gql.body.data.webhook.deliveries).toEqual({
      total: 3,
      data: [
        { attempt: 3, status: 204, error: null },
        { attempt: 2, status: 500, error: 'HTTP 500' },
      ],
    });
  });

  test('attempts older than WEBHOOK_LOG_DAYS are pruned', async () => {
    const { id, name } = await hook(['user.create']);
    await createUser(svc, { firstName: 'Hook', lastName: 'Old' });
    await createUser(svc, { firstName: 'Hook', lastName: 'New' });
    await receiver.waitFor(name, 2);
    await waitFor('the history', async () => (await historyOf(id)).body.length === 2);
    const [oldest] = (await historyOf(id, '?orderBy=id')).body;
    await svc.sql(`update webhook_deliveries set at = now() - interval '8 days' where id = ?`, [oldest.id]);
    await waitFor('the old attempt pruned', async () => (await historyOf(id)).body.length === 1, 60_000);
    expect((await historyOf(id)).body[0].id).not.toBe(oldest.id);
  });
});

// Last: it counts what the tests above did.
test('/metrics: attempts by result, deliveries by outcome, lag per webhook, disabled webhooks', async () => {
  const { id } = await hook(['user.create']);
  await waitFor('the metrics', async () => {
    const text = await (await fetch(`${svc.url}/metrics`)).text();
    return text.includes(`webhook_lag_seconds{webhook="${id}"}`);
  });
  const text = await (await fetch(`${svc.url}/metrics`)).text();
  expect(text).toMatch(/webhook_attempts_total\{result="2xx"\} [1-9]/);
  expect(text).toMatch(/webhook_attempts_total\{result="5xx"\} [1-9]/);
  expect(text).toMatch(/webhook_deliveries_total\{outcome="delivered"\} [1-9]/);
  expect(text).toMatch(/webhook_deliveries_total\{outcome="gone"\} [1-9]/);
  expect(text).toMatch(/webhook_deliveries_total\{outcome="gave_up"\} [1-9]/);
  expect(text).toMatch(/webhook_endpoints_disabled \d+/);
  expect(text).toMatch(new RegExp(`webhook_lag_seconds\\{webhook="${id}"\\} 0`));
});
