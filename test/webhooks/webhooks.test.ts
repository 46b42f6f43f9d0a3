import { waitFor } from '../support/processes.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startTestService, type TestService } from '../support/service.js';

/**
 * The webhook resource over REST (SPEC §13, The resource and Safety), on a service as deployed:
 * private destinations refused (WEBHOOK_ALLOW_PRIVATE off). Webhooks that pass the checks point at
 * names under `.invalid` (RFC 2606: they never resolve) or are inactive, so nothing leaves the
 * machine; the one receiver here listens on loopback, where nothing may be delivered.
 */
let svc: TestService;
let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
  svc = await startTestService({ WEBHOOK_POLL_MS: '100', WEBHOOK_RETRY_SCHEDULE: '50ms' });
});
afterAll(async () => {
  await svc?.stop();
  await receiver?.close();
});

let n = 0;
const quietUrl = () => `https://hooks-${++n}.example.invalid/receive`;
const create = (body: Record<string, unknown>, headers: Record<string, string> = {}) => svc.request('POST', '/webhook/', { body, headers });
const representation = { Prefer: 'return=representation' };

describe('create, read, update, delete', () => {
  test('create answers 201 and the id; reads answer the fields of SPEC §13 and never the secret', async () => {
    const url = quietUrl();
    const res = await create({ url, events: ['user.*', 'token.revoke'], description: 'CRM' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual(expect.any(Number));
    expect(res.headers.get('location')).toBe(`/webhook/${res.body}`);
    const got = await svc.request('GET', `/webhook/${res.body}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({
      id: res.body,
      url,
      events: ['user.*', 'token.revoke'],
      description: 'CRM',
      active: true,
      disabledReason: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const list = await svc.request('GET', '/webhook/');
    expect(list.body.some((w: { id: number }) => w.id === res.body)).toBe(true);
    expect(list.body.every((w: object) => !('secret' in w))).toBe(true);
  });

  test('the secret: generated (whsec_ + base64 of 32 bytes), answered once with Prefer: return=representation, stored encrypted, redacted in the audit log, never logged', async () => {
    const res = await create({ url: quietUrl() }, representation);
    expect(res.status).toBe(201);
    expect(res.headers.get('preference-applied')).toBe('return=representation');
    const { secret, id } = res.body;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(res.body).toMatchObject({ events: ['*'], active: true });
    expect('secret' in (await svc.request('GET', `/webhook/${id}`)).body).toBe(false);
    const [row] = await svc.sql<Record<string, unknown>>('select * from webhooks where id = ?', [id]);
    expect(JSON.stringify(row)).not.toContain(secret.slice(6));
    expect((row.secret_cipher as Buffer).toString('latin1')).not.toContain(secret.slice(6));
    expect(svc.open(row.secret_cipher as Buffer, 'webhookSecret')).toBe(secret);
    const audit = (await svc.request('GET', `/audit/?filter=${encodeURIComponent(`resource eq webhook and recordID eq ${id}`)}`)).body;
    expect(audit).toHaveLength(1);
    expect(audit[0].changes.secret).toEqual({ before: null, after: '[redacted]' });
    const rotated = await svc.request('POST', `/webhook/${id}/secret`);
    const everything = JSON.stringify([await svc.sql('select * from audit_events'), svc.logLines]);
    for (const value of [secret, rotated.body]) expect(everything).not.toContain(value.slice(6));
  });

  test('a secret given on create is kept (and must be whsec_ and base64 of 24 to 64 bytes)', async () => {
    const secret = `whsec_${Buffer.alloc(24, 1).toString('base64')}`;
    const res = await create({ url: quietUrl(), secret }, representation);
    expect(res.status).toBe(201);
    expect(res.body.secret).toBe(secret);
    const [row] = await svc.sql<{ secret_cipher: Buffer }>('select secret_cipher from webhooks where id = ?', [res.body.id]);
    expect(svc.open(row.secret_cipher, 'webhookSecret')).toBe(secret);
    for (const bad of ['plain', 'whsec_', `whsec_${Buffer.alloc(8).toString('base64')}`, `whsec_${'!'.repeat(44)}`, 7]) {
      const refused = await create({ url: quietUrl(), secret: bad });
      expect({ status: refused.status, field: refused.body.details?.[0]?.field }).toEqual({ status: 400, field: 'secret' });
    }
  });

  test('PUT replaces (a secret left out is kept), PATCH with Attrs, a secret written rotates with overlap; DELETE is soft', async () => {
    const { body: created } = await create({ url: quietUrl(), events: ['role.*'], description: 'x' }, representation);
    const [before] = await svc.sql<{ secret_hmac: Buffer }>('select secret_hmac from webhooks where id = ?', [created.id]);
    const url = quietUrl();
    const put = await svc.request('PUT', `/webhook/${created.id}`, { body: { url, active: false }, headers: representation });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ url, events: ['*'], description: null, active: false });
    expect('secret' in put.body).toBe(false);
    const [after] = await svc.sql<{ secret_hmac: Buffer }>('select secret_hmac from webhooks where id = ?', [created.id]);
    expect(after.secret_hmac.equals(before.secret_hmac)).toBe(true);
    const patched = await svc.request('PATCH', `/webhook/${created.id}`, {
      body: { description: 'patched', url: 'ignored://' },
      headers: { Attrs: 'Description' },
    });
    expect(patched.status).toBe(200);
    expect((await svc.request('GET', `/webhook/${created.id}`)).body).toMatchObject({ url, description: 'patched' });
    const secret = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
    expect((await svc.request('PATCH', `/webhook/${created.id}`, { body: { secret } })).status).toBe(200);
    const previous = await svc.sql<{ secret_cipher: Buffer; left: number }>(
      `select secret_cipher, extract(epoch from signs_until - now())::int as left from webhook_secrets where webhook_id = ?`,
      [created.id],
    );
    expect(previous.map((p) => svc.open(p.secret_cipher, 'webhookSecret'))).toEqual([created.secret]);
    expect(previous[0].left).toBeGreaterThan(23 * 3600);
    expect((await svc.request('DELETE', `/webhook/${created.id}`)).body).toBe(1);
    expect((await svc.request('GET', `/webhook/${created.id}`)).status).toBe(404);
    expect((await svc.request('DELETE', `/webhook/${created.id}`)).status).toBe(404);
    const deleted = await svc.request('GET', `/webhook/?deleted=only&filter=${encodeURIComponent(`id eq ${created.id}`)}`);
    expect(deleted.body).toEqual([expect.objectContaining({ id: created.id, deletedAt: expect.any(String) })]);
  });

  test('POST /webhook/{id}/secret answers the new secret once (bare, or with the webhook); it is audited redacted', async () => {
    const { body: id } = await create({ url: quietUrl(), active: false });
    const bare = await svc.request('POST', `/webhook/${id}/secret`);
    expect(bare.status).toBe(200);
    expect(bare.headers.get('content-type')).toMatch(/^application\/json/);
    expect(bare.body).toMatch(/^whsec_/);
    const full = await svc.request('POST', `/webhook/${id}/secret`, { headers: representation });
    expect(full.body).toMatchObject({ id, active: false, secret: expect.stringMatching(/^whsec_/) });
    expect(full.body.secret).not.toBe(bare.body);
    const audit = (await svc.request('GET', `/audit/?filter=${encodeURIComponent(`resource eq webhook and recordID eq ${id} and action eq patch`)}`)).body;
    expect(audit.map((e: { changes: object }) => e.changes)).toEqual([
      { secret: { before: '[redacted]', after: '[redacted]' } },
      { secret: { before: '[redacted]', after: '[redacted]' } },
    ]);
    expect((await svc.request('POST', '/webhook/99999999/secret')).status).toBe(404);
  });

  test('lists: totals, filters on active, orderBy', async () => {
    const { body: off } = await create({ url: quietUrl(), active: false, description: 'list-off' });
    const all = await svc.request('GET', '/webhook/');
    const [{ live }] = await svc.sql<{ live: string }>(`select live::text from live_counts where table_name = 'webhooks'`);
    expect(all.headers.get('x-total-count')).toBe(live);
    const [{ count }] = await svc.sql<{ count: string }>('select count(*)::text from webhooks where deleted_at is null');
    expect(live).toBe(count);
    const inactive = await svc.request('GET', `/webhook/?filter=${encodeURIComponent('active eq false and description eq list-off')}`);
    expect(inactive.body.map((w: { id: number }) => w.id)).toEqual([off]);
    const json = await svc.request('GET', `/webhook/?filter=${encodeURIComponent(JSON.stringify({ active: false, description: 'list-off' }))}&orderBy=-active`);
    expect(json.body.map((w: { id: number }) => w.id)).toEqual([off]);
    expect((await svc.request('GET', '/webhook/?filter=active%20eq%207')).status).toBe(400);
    expect((await svc.request('GET', '/webhook/?filter=events%20eq%20x')).status).toBe(400);
  });
});

describe('bad input: 400 naming the field, nothing written', () => {
  test.each([
    ['no url', {}, 'url'],
    ['url not a string', { url: 5 }, 'url'],
    ['a relative url', { url: '/hook' }, 'url'],
    ['another scheme', { url: 'ftp://hooks.example.invalid/' }, 'url'],
    ['credentials in the url', { url: 'https://user:pw@hooks.example.invalid/' }, 'url'],
    ['a url over 2048 characters', { url: `https://hooks.example.invalid/${'a'.repeat(2048)}` }, 'url'],
    ['events not a list', { url: 'https://a.example.invalid/', events: 'user.*' }, 'events'],
    ['an unknown resource', { url: 'https://a.example.invalid/', events: ['group.create'] }, 'events'],
    ['an unknown action', { url: 'https://a.example.invalid/', events: ['user.*', 'user.frobnicate'] }, 'events'],
    ['no action', { url: 'https://a.example.invalid/', events: ['user'] }, 'events'],
    ['a non-string event', { url: 'https://a.example.invalid/', events: [1] }, 'events'],
    ['over 100 events', { url: 'https://a.example.invalid/', events: Array.from({ length: 101 }, () => 'user.*') }, 'events'],
    ['active not a boolean', { url: 'https://a.example.invalid/', active: 'yes' }, 'active'],
    ['a description over 255', { url: 'https://a.example.invalid/', description: 'd'.repeat(256) }, 'description'],
  ])('%s', async (_label, body, field) => {
    const before = await svc.snapshot({ sequences: false });
    const res = await create(body);
    expect(res.status).toBe(400);
    expect(res.body.details.map((d: { field: string }) => d.field)).toContain(field);
    expect(await svc.snapshot({ sequences: false })).toEqual(before);
  });

  test('the message of an unknown pattern names it', async () => {
    const res = await create({ url: 'https://a.example.invalid/', events: ['user.*', 'user.frobnicate'] });
    expect(res.body.details[0].message).toContain('"user.frobnicate"');
  });

  test('every audited resource and action is a pattern, with * for either', async () => {
    const events = ['*', '*.revoke', 'application_link.*', 'role_link.unlink', 'webhook.patch', 'user.status', 'token.apply', 'role.restore'];
    const res = await create({ url: quietUrl(), events, active: false }, representation);
    expect(res.status).toBe(201);
    expect(res.body.events).toEqual(events);
  });
});

describe('destinations (WEBHOOK_ALLOW_PRIVATE off)', () => {
  test.each([
    ['loopback', 'http://127.0.0.1:8080/hook', 'loopback'],
    ['a name resolving to loopback', 'http://localhost/hook', 'loopback'],
    ['IPv6 loopback', 'http://[::1]/hook', 'loopback'],
    ['IPv4-mapped loopback', 'http://[::ffff:127.0.0.1]/hook', 'loopback'],
    ['private 10/8', 'https://10.1.2.3/hook', 'private'],
    ['private 192.168/16', 'https://192.168.0.10/hook', 'private'],
    ['private 172.16/12', 'https://172.20.0.1/hook', 'private'],
    ['link-local (cloud metadata)', 'http://169.254.169.254/latest', 'linkLocal'],
    ['IPv6 link-local', 'http://[fe80::1]/hook', 'linkLocal'],
    ['IPv6 unique local', 'http://[fd00::1]/hook', 'uniqueLocal'],
    ['multicast', 'http://224.0.0.1/hook', 'multicast'],
    ['unspecified', 'http://0.0.0.0/hook', 'unspecified'],
    ['carrier-grade NAT', 'http://100.64.0.1/hook', 'carrierGradeNat'],
  ])('%s is refused at create and update', async (_label, url, range) => {
    const before = await svc.snapshot({ sequences: false });
    const res = await create({ url });
    expect({ status: res.status, field: res.body.details?.[0]?.field }).toEqual({ status: 400, field: 'url' });
    expect(res.body.details[0].message).toContain(range);
    expect(await svc.snapshot({ sequences: false })).toEqual(before);
    const { body: id } = await create({ url: quietUrl(), active: false });
    const patched = await svc.request('PATCH', `/webhook/${id}`, { body: { url } });
    expect({ status: patched.status, field: patched.body.details?.[0]?.field }).toEqual({ status: 400, field: 'url' });
    const put = await svc.request('PUT', `/webhook/${id}`, { body: { url, active: false } });
    expect(put.status).toBe(400);
  });

  test('a public address and a name that does not resolve (yet) are accepted', async () => {
    expect((await create({ url: 'https://93.184.215.14/hook', active: false })).status).toBe(201);
    expect((await create({ url: 'https://[2606:4700::1111]/hook', active: false })).status).toBe(201);
    expect((await create({ url: quietUrl(), active: false })).status).toBe(201);
  });

  test('checked again at each delivery: a webhook whose url became private is never delivered to; its attempts say why', async () => {
    const { body: id } = await create({ url: quietUrl(), events: ['user.create'] });
    // As if WEBHOOK_ALLOW_PRIVATE had been on when it was written.
    await svc.sql('update webhooks set url = ? where id = ?', [receiver.url('private'), id]);
    await svc.request('PATCH', `/webhook/${id}`, { body: { description: 'reload' } });
    await svc.request('POST', '/user/', { body: { firstName: 'Not', lastName: 'Delivered' } });
    await waitFor('two refused attempts', async () => (await svc.request('GET', `/webhook/${id}/delivery/`)).body.length >= 2);
    const attempts = (await svc.request('GET', `/webhook/${id}/delivery/`)).body;
    expect(attempts[0]).toMatchObject({ status: null, error: expect.stringMatching(/^refused: 127\.0\.0\.1 is a loopback address/) });
    expect(receiver.deliveries).toHaveLength(0);
  });
});

describe('permissions', () => {
  test('401 without a token, 403 without webhook:read or webhook:write, on every webhook route', async () => {
    const { body: id } = await create({ url: quietUrl(), active: false });
    const routes: [string, string, string, unknown?][] = [
      ['GET', '/webhook/', 'webhook:read'],
      ['GET', `/webhook/${id}`, 'webhook:read'],
      ['GET', `/webhook/${id}/delivery/`, 'webhook:read'],
      ['POST', '/webhook/', 'webhook:write', { url: quietUrl() }],
      ['PUT', `/webhook/${id}`, 'webhook:write', { url: quietUrl() }],
      ['PATCH', `/webhook/${id}`, 'webhook:write', { description: 'x' }],
      ['DELETE', `/webhook/${id}`, 'webhook:write'],
      ['POST', `/webhook/${id}/restore`, 'webhook:write'],
      ['POST', `/webhook/${id}/secret`, 'webhook:write'],
      ['POST', `/webhook/${id}/replay`, 'webhook:write', { after: 1 }],
    ];
    const reader = await svc.tokenWith('webhook:read');
    const others = await svc.tokenWith('user:* token:* application:* role:* audit:read');
    const before = await svc.snapshot({ sequences: false });
    for (const [method, path, needed, body] of routes) {
      expect({ route: `${method} ${path}`, status: (await svc.request(method, path, { token: null, body })).status }).toEqual({
        route: `${method} ${path}`,
        status: 401,
      });
      // A bad body too: the 403 comes before the body's 400.
      const refused = await svc.request(method, path, { token: others, body: method === 'GET' ? undefined : { bad: true } });
      expect({ route: `${method} ${path}`, status: refused.status }).toEqual({ route: `${method} ${path}`, status: 403 });
      expect(refused.headers.get('www-authenticate')).toContain(`scope="${needed}"`);
      if (needed === 'webhook:write') expect((await svc.request(method, path, { token: reader, body })).status).toBe(403);
    }
    expect(await svc.snapshot({ sequences: false })).toEqual(before);
    expect((await svc.request('GET', `/webhook/${id}`, { token: reader })).status).toBe(200);
    const writer = await svc.tokenWith('webhook:*');
    expect((await svc.request('PATCH', `/webhook/${id}`, { token: writer, body: { description: 'w' } })).status).toBe(200);
  });

  test('a token:write token cannot grant webhook scopes it does not hold', async () => {
    const granter = await svc.tokenWith('token:write user:read');
    const [{ id: userID }] = await svc.sql<{ id: string }>('select id::text from users limit 1');
    const res = await svc.request('POST', '/token/', {
      token: granter,
      body: { userID: Number(userID), accessToken: `t-${Date.now()}`, scope: 'webhook:write' },
    });
    expect(res.status).toBe(403);
    expect(res.body.message).toContain('webhook:write');
  });
});

// Last: afterwards the service's own key no longer opens what it stored.
test('npm run rotate-key re-encrypts webhook secrets (current and previous) under the new key', async () => {
  const { body } = await create({ url: quietUrl(), active: false }, representation);
  const rotated = (await svc.request('POST', `/webhook/${body.id}/secret`)).body;
  const { rotateKeyCommand } = await import('../../src/cli/rotate-key.js');
  const { Keyring } = await import('../../src/db/keyring.js');
  const { randomBytes } = await import('node:crypto');
  const next = randomBytes(32);
  const env = {
    ...(svc.config.databaseUrl ? { DATABASE_URL: svc.config.databaseUrl } : { DATA_DIR: svc.config.dataDir }),
    TOKEN_KEY: next.toString('base64'),
    TOKEN_KEY_PREVIOUS: svc.config.tokenKey!.toString('base64'),
  };
  const out: string[] = [];
  expect(await rotateKeyCommand([], env, { out: (t) => out.push(t), err: (t) => out.push(t) })).toBe(0);
  expect(out.join('')).toMatch(/webhook secrets? re-encrypted/);
  const keyring = Keyring.of(next);
  const [row] = await svc.sql<{ secret_cipher: Buffer; secret_hmac: Buffer }>('select secret_cipher, secret_hmac from webhooks where id = ?', [body.id]);
  expect(keyring.open('webhookSecret', row.secret_cipher)).toBe(rotated);
  expect(row.secret_hmac.equals(keyring.hash('webhookSecret', rotated))).toBe(true);
  const previous = await svc.sql<{ secret_cipher: Buffer }>('select secret_cipher from webhook_secrets where webhook_id = ?', [body.id]);
  expect(previous.map((p) => keyring.open('webhookSecret', p.secret_cipher))).toEqual([body.secret]);
});
