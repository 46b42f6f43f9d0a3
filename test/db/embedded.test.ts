import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tokenCommand } from '../../src/cli/token.js';
import { loadConfig } from '../../src/config.js';
import { startService, type RunningService } from '../../src/server.js';
import { createLogger } from '../../src/observability/log.js';

/**
 * The quick start's promise, whatever DATABASE_URL says: with no database configured the service
 * runs on the embedded PostgreSQL under DATA_DIR, creates and reports a first token once, keeps
 * its data across restarts, and `npm run token` works beside it.
 */
let dataDir: string;
const env = () => ({ DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'silent', DB_POOL_SIZE: '3' });
const start = (extra: Record<string, string> = {}) => startService(loadConfig({ ...env(), ...extra }), createLogger('silent'));

async function call(service: RunningService, method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(service.url + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, headers: res.headers, body: (await res.json().catch(() => null)) as any };
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'uts-embedded-'));
});
afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

test('first start creates one token with scope *, later starts create none and keep the data', async () => {
  const first = await start();
  let firstToken: string;
  try {
    expect(first.db.kind).toBe('embedded');
    expect(first.firstToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    firstToken = first.firstToken!;
    const created = await call(first, 'POST', '/user/', firstToken, { firstName: 'Kept', lastName: 'Across restarts' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual(expect.any(Number));
    expect((await call(first, 'GET', '/readyz', firstToken)).status).toBe(200);
  } finally {
    await first.stop();
  }

  const second = await start();
  try {
    expect(second.firstToken).toBeNull();
    const users = await call(second, 'GET', `/user/?filter=${encodeURIComponent('{"firstName":"Kept"}')}`, firstToken);
    expect(users.status).toBe(200);
    expect(users.headers.get('x-total-count')).toBe('1');
    expect(users.body).toEqual([expect.objectContaining({ firstName: 'Kept', lastName: 'Across restarts' })]);
    const tokens = await call(second, 'GET', '/token/', firstToken);
    expect(tokens.status).toBe(200);
    expect(tokens.headers.get('x-total-count')).toBe('1');
    expect(tokens.body).toHaveLength(1);
  } finally {
    await second.stop();
  }
});

test('a second service on the same DATA_DIR is refused; npm run token goes through the running one', async () => {
  const running = await start();
  try {
    await expect(start()).rejects.toThrow(/in use by process/);

    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (t: string) => out.push(t), err: (t: string) => err.push(t) };
    const code = await tokenCommand(['--user', '1', '--scope', 'user:read'], env(), io);
    expect(code).toBe(0);
    const issued = out.join('').trim();
    expect(issued).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(err.join('')).not.toContain(issued);

    expect((await call(running, 'GET', '/user/1', issued)).status).toBe(200);
    expect((await call(running, 'GET', '/token/', issued)).status).toBe(403);

    expect(await tokenCommand(['--user', '999', '--scope', 'x'], env(), io)).toBe(1);
    expect(err.join('')).toMatch(/userID: no user with id 999/);
    expect(await tokenCommand(['--scope', 'x'], env(), io)).toBe(2);
    // Usage mistakes exit 2 before the database is opened, saying what is wrong.
    expect(await tokenCommand(['--user', 'abc', '--scope', 'x'], env(), io)).toBe(2);
    expect(err.join('')).toContain('--user must be a user id (a positive integer), got "abc"');
    expect(await tokenCommand(['--user', '1', '--user', '2', '--scope', 'x'], env(), io)).toBe(2);
    expect(err.join('')).toContain('--user is given more than once');
  } finally {
    await running.stop();
  }
});

test('BOOTSTRAP_TOKEN makes sure that token exists with scope *, and no other is printed', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'uts-bootstrap-'));
  try {
    const boot = 'bootstrap-secret-value';
    for (let i = 0; i < 2; i++) {
      const service = await startService(loadConfig({ ...env(), DATA_DIR: dir, BOOTSTRAP_TOKEN: boot }), createLogger('silent'));
      try {
        expect(service.firstToken).toBeNull();
        const tokens = await call(service, 'GET', '/token/', boot);
        expect(tokens.status).toBe(200);
        expect(tokens.headers.get('x-total-count')).toBe('1');
        expect(tokens.body).toHaveLength(1);
        expect(tokens.body[0]).toMatchObject({ accessToken: boot, scope: '*', expireAt: null });
        if (i === 0) {
          // Narrow it; the next start puts the scope back.
          const id = tokens.body[0].id;
          const narrowed = await call(service, 'PATCH', `/token/${id}`, boot, { scope: 'token:read token:write' });
          expect(narrowed.status).toBe(200);
          expect(narrowed.body).toBe(1);
          expect((await call(service, 'GET', `/token/${id}`, boot)).body).toMatchObject({ id, scope: 'token:read token:write' });
        }
      } finally {
        await service.stop();
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
