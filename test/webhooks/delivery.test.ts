import { Webhook } from 'standardwebhooks';
import { waitFor } from '../support/processes.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startTestService, type TestService } from '../support/service.js';

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

const createUser = async (lastName: string) => {
  const res = await svc.request('POST', '/user/', { body: { firstName: 'Hook', lastName } });
  expect(res.status).toBe(201);
  return res.body as number;
};

const auditOf = async (id: number) => (await svc.request('GET', `/audit/?filter=${encodeURIComponent(`id eq ${id}`)}`)).body[0];

describe('a delivery', () => {
  test('is a signed POST of {type, timestamp, data}: the audit event as GET /audit/ answers it, verified by Webhook.verify', async () => {
    const { name, secret } = await hook(['user.create']);
    const user = await createUser('Signed');
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
    const user = await createUser('Ordered');
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
