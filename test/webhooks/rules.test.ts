import type { LookupAddress } from 'node:dns';
import { Webhook } from 'standardwebhooks';
import { destinationCheck, pinnedLookup, refusedRange, urlProblem } from '../../src/webhooks/destination.js';
import { auditResources } from '../../src/module/registry.js';
import { MODULES } from '../../src/modules.js';
import { eventPattern, matches } from '../../src/webhooks/patterns.js';
import { nextAttempt, retryDelay } from '../../src/webhooks/schedule.js';
import { newSecret, signedHeaders, signersOf } from '../../src/webhooks/signing.js';

/** The webhooks' pure rules, without a database or a service: addresses, patterns, the retry schedule, signatures. */

describe('destinations', () => {
  test.each([
    ['127.0.0.1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['224.0.0.251', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['192.0.2.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'linkLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['ff02::1', 'multicast'],
    ['::ffff:10.0.0.1', 'private'],
    ['93.184.215.14', null],
    ['2606:4700::1111', null],
  ])('%s: %s', (address, range) => {
    expect(refusedRange(address)).toBe(range);
  });

  test('the connector’s lookup refuses a name that resolves to a private address, and answers only checked addresses', async () => {
    const lookup = pinnedLookup(5_000);
    const ask = (options: object) =>
      new Promise<{ err: NodeJS.ErrnoException | null; address: string | LookupAddress[] }>((resolve) =>
        lookup('localhost', options as never, ((err: NodeJS.ErrnoException | null, address: string | LookupAddress[]) => resolve({ err, address })) as never),
      );
    for (const options of [{}, { all: true }, { family: 4 }]) {
      const { err } = await ask(options);
      expect(err?.name).toBe('RefusedDestination');
      expect(err?.message).toMatch(/^localhost is (127\.0\.0\.1|::1), a loopback address/);
    }
    const literal = await new Promise<{ err: unknown; address: unknown }>((resolve) =>
      lookup('2606:4700::1111', { all: true } as never, ((err: unknown, address: unknown) => resolve({ err, address })) as never),
    );
    expect(literal).toEqual({ err: null, address: [{ address: '2606:4700::1111', family: 6 }] });
  });

  test('the check at delivery keeps a name’s answer a few seconds, checks it at every delivery, and asks again after', async () => {
    const answers: LookupAddress[][] = [[{ address: '93.184.215.14', family: 4 }], [{ address: '10.0.0.7', family: 4 }]];
    const asked: string[] = [];
    let clock = 1_000;
    const check = destinationCheck({
      keepMs: 5_000,
      now: () => clock,
      resolve: async (host) => {
        asked.push(host);
        if (host === 'down.example') throw Object.assign(new Error('no answer'), { code: 'ENOTFOUND' });
        return answers[Math.min(asked.filter((h) => h === host).length, answers.length) - 1];
      },
    });
    const hook = new URL('https://hooks.example/in');
    await expect(check(hook, 1_000)).resolves.toEqual(answers[0]);
    clock += 4_999;
    await expect(check(hook, 1_000)).resolves.toEqual(answers[0]);
    expect(asked).toEqual(['hooks.example']); // kept: one lookup for two deliveries
    clock += 1;
    // Past the answer's time the name is looked up again, and its new (private) address refused.
    await expect(check(hook, 1_000)).rejects.toMatchObject({ name: 'RefusedDestination', address: '10.0.0.7', range: 'private' });
    await expect(check(hook, 1_000)).rejects.toMatchObject({ name: 'RefusedDestination' }); // a refused answer is checked again too
    expect(asked).toEqual(['hooks.example', 'hooks.example']);
    // A failed lookup is not kept; an address in the URL is never looked up.
    const down = new URL('https://down.example/');
    await expect(check(down, 1_000)).rejects.toMatchObject({ code: 'ENOTFOUND' });
    await expect(check(down, 1_000)).rejects.toMatchObject({ code: 'ENOTFOUND' });
    await expect(check(new URL('http://127.0.0.1:9/'), 1_000)).rejects.toMatchObject({ range: 'loopback' });
    expect(asked).toEqual(['hooks.example', 'hooks.example', 'down.example', 'down.example']);
  });

  test('urls: their form always; their host unless private destinations are allowed', async () => {
    expect(await urlProblem('http://127.0.0.1/', true)).toBeNull();
    expect(await urlProblem('http://127.0.0.1/', false)).toMatch(/loopback/);
    expect(await urlProblem('ftp://a.example.invalid/', true)).toMatch(/http/);
    expect(await urlProblem('https://a:b@a.example.invalid/', true)).toMatch(/user name or password/);
    expect(await urlProblem('https://a.example.invalid/', false)).toBeNull();
  });
});

test('event patterns: the audit log’s resources (the modules’) and actions, * for either', () => {
  // The modules' audit resources, in list order: what the pattern's refusal lists, as it always has.
  expect(auditResources(MODULES)).toEqual(['user', 'token', 'application', 'role', 'application_link', 'role_link', 'webhook']);
  const pattern = eventPattern(auditResources(MODULES));
  expect(pattern.message).toBe(
    'is not a pattern <resource>.<action> (or "*") over the audit log\'s resources (user, token, application, role, application_link, role_link, webhook) ' +
      'and actions (create, update, patch, status, delete, link, unlink, right, apply, revoke, restore), either may be "*"',
  );
  for (const ok of ['*', 'user.*', '*.revoke', 'application_link.right', 'webhook.patch']) expect(pattern.test.test(ok)).toBe(true);
  for (const bad of ['', 'user', 'user.', '.create', 'users.create', 'user.created', 'user.*.*', '**', 'USER.create', 'audit.create', 'group.create'])
    expect(pattern.test.test(bad)).toBe(false);
  // Another module's resource is one more word.
  expect(eventPattern([...auditResources(MODULES), 'group']).test.test('group.create')).toBe(true);
  expect(matches(['user.*'], 'user', 'patch')).toBe(true);
  expect(matches(['*.revoke'], 'token', 'revoke')).toBe(true);
  expect(matches(['token.revoke', 'role.*'], 'token', 'delete')).toBe(false);
  expect(matches([], 'user', 'create')).toBe(false);
});

describe('the retry schedule', () => {
  const schedule = [5_000, 30_000, 120_000, 600_000, 3_600_000];
  test('each delay within ±20 % of its step; past the last step, the last repeats', () => {
    expect(retryDelay(schedule, 1, () => 0)).toBe(4_000);
    expect(retryDelay(schedule, 1, () => 1)).toBe(6_000);
    expect(retryDelay(schedule, 2, () => 0.5)).toBe(30_000);
    expect(retryDelay(schedule, 5, () => 0.5)).toBe(3_600_000);
    expect(retryDelay(schedule, 40, () => 0.5)).toBe(3_600_000);
  });
  test('attempts until the window ends (the last at its end), then none', () => {
    const options = { schedule, retryMs: 24 * 3_600_000 };
    const since = Date.parse('2026-11-20T00:00:00Z');
    expect(nextAttempt(options, 1, since, since + 1_000)).toBeGreaterThan(since + 1_000);
    expect(nextAttempt(options, 30, since, since + 23.9 * 3_600_000)).toBe(since + 24 * 3_600_000);
    expect(nextAttempt(options, 31, since, since + 24 * 3_600_000)).toBeNull();
  });
});

test('signatures: one per secret, each verified by standardwebhooks with its secret', () => {
  const [current, previous] = [newSecret(), newSecret()];
  expect(current).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  const body = JSON.stringify({ type: 'user.create', timestamp: new Date().toISOString(), data: { id: 9 } });
  const headers = signedHeaders(signersOf([current, previous]), 9, new Date(), body);
  expect(headers['webhook-id']).toBe('9');
  expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
  for (const secret of [current, previous]) expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  expect(() => new Webhook(newSecret()).verify(body, headers)).toThrow();
});
