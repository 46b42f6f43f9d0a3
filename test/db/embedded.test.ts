import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readlinkSync, readFileSync } from 'node:fs';
import { chmod, lstat, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tokenCommand } from '../../src/cli/token.js';
import { loadConfig } from '../../src/config.js';
import { startService, type RunningService } from '../../src/server.js';
import { createLogger } from '../../src/observability/log.js';
import { freePort, root, waitFor } from '../support/processes.js';

/**
 * The quick start's promise, whatever DATABASE_URL says: with no database configured the service
 * runs on the embedded PostgreSQL under DATA_DIR, creates and reports a first token once, keeps
 * its data across restarts, and `npm run token` works beside it; and no other user of the machine
 * can read the data or reach the database.
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

/** The uid and gid of the user `nobody`, or null where the machine has none. */
function nobody(): { uid: number; gid: number } | null {
  const entry = spawnSync('getent', ['passwd', 'nobody'], { encoding: 'utf8' }).stdout?.split(':');
  return entry && entry.length > 3 ? { uid: Number(entry[2]), gid: Number(entry[3]) } : null;
}

/** The TCP ports process `pid` listens on (its sockets' inodes in /proc/net/tcp and tcp6, state LISTEN). */
function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
      if (inode) inodes.add(inode);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').trim().split('\n').slice(1)) {
      const [, local, , state, , , , , , inode] = line.trim().split(/\s+/);
      if (state === '0A' && inodes.has(inode)) ports.push(parseInt(local.split(':')[1], 16));
    }
  }
  return ports;
}

/**
 * Run as that user: what it gets reading DATA_DIR, its files, and the database at the URL the
 * service wrote (each "ok" or the error's code), and a file anyone may read as a control.
 */
const PROBE = `
  const fs = require('node:fs');
  const pg = require('pg');
  const [dataDir, url, ...files] = process.argv.slice(1);
  const attempt = (work) => { try { work(); return 'ok'; } catch (err) { return err.code; } };
  (async () => {
    const result = { control: attempt(() => fs.readFileSync('package.json')), list: attempt(() => fs.readdirSync(dataDir)) };
    for (const file of files) result[file] = attempt(() => fs.readFileSync(dataDir + '/' + file));
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 30000 });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('select count(*) from users');
      result.database = 'ok';
    } catch (err) {
      result.database = err.code ?? err.message;
    }
    await client.end().catch(() => {});
    process.stdout.write(JSON.stringify(result));
  })();
`;

const other = nobody();
const notPossible = process.getuid?.() !== 0 ? 'the tests do not run as root' : !other ? 'this machine has no user nobody' : null;

(notPossible ? test.skip : test)(
  `another OS user (nobody) can neither read DATA_DIR nor reach the database, whatever the umask${notPossible ? ` (skipped: ${notPossible})` : ''}`,
  async () => {
    // DATA_DIR inside a directory anyone may enter, as ./data in a project checkout is.
    const parent = await mkdtemp(join(tmpdir(), 'uts-private-'));
    await chmod(parent, 0o755);
    const data = join(parent, 'data');
    const port = await freePort();
    const child = spawn('sh', ['-c', 'umask 000 && exec npm start --silent'], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: '', DATA_DIR: data, PORT: String(port), LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (chunk) => (out += chunk));
    child.stderr!.resume();
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await waitFor('the service to listen', () => out.includes('listening on'), 120_000);
      const owner = JSON.parse(await readFile(join(data, 'service.json'), 'utf8')) as { pid: number; url: string };

      // Every directory 0700 and every file 0600, PGlite's own and the service's.
      expect(((await lstat(data)).mode & 0o777).toString(8)).toBe('700');
      const modes = new Map<string, number>();
      for (const entry of await readdir(data, { recursive: true, withFileTypes: true })) {
        const mode = ((await lstat(join(entry.parentPath, entry.name))).mode & 0o777).toString(8);
        const kind = entry.isDirectory() ? 'directory' : 'file';
        modes.set(`${kind} ${mode}`, (modes.get(`${kind} ${mode}`) ?? 0) + 1);
      }
      expect([...modes.keys()].sort()).toEqual(['directory 700', 'file 600']);
      // The database is on no TCP port: the service listens on its HTTP port alone.
      expect(listeningPorts(owner.pid)).toEqual([port]);

      const files = ['service.json', 'token.key', 'PG_VERSION', 'pg_hba.conf', 'global/pg_control'];
      const probe = spawnSync(process.execPath, ['-e', PROBE, data, owner.url, ...files], {
        cwd: root,
        uid: other!.uid,
        gid: other!.gid,
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(JSON.parse(probe.stdout || '{}')).toEqual({
        control: 'ok',
        list: 'EACCES',
        ...Object.fromEntries(files.map((file) => [file, 'EACCES'])),
        database: 'EACCES',
      });
      // The service's own user still gets in: npm run token goes through the running service.
      const token = spawnSync('npm', ['run', '--silent', 'token', '--', '--user', '1', '--scope', 'user:read'], {
        cwd: root,
        env: { ...process.env, DATABASE_URL: '', DATA_DIR: data, LOG_LEVEL: 'silent' },
        encoding: 'utf8',
        timeout: 90_000,
      });
      expect(token.status).toBe(0);
      expect((await fetch(`http://127.0.0.1:${port}/user/1`, { headers: { Authorization: `Bearer ${token.stdout.trim()}` } })).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      await rm(parent, { recursive: true, force: true });
    }
  },
  240_000,
);
