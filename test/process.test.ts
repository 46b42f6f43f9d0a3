import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * SPEC §8 "Process": the real `npm start` (embedded database in a new DATA_DIR) receives signals
 * itself, exits 0 on SIGTERM and SIGINT and leaves no process behind; the first token is created
 * only once the service listens; `npm run token -- --help` prints its usage.
 */
const root = fileURLToPath(new URL('..', import.meta.url));
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function dataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'uts-process-'));
  dirs.push(dir);
  return join(dir, 'data');
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

interface Started {
  child: ChildProcess;
  stdout: () => string;
  exited: Promise<number | null>;
}

function npmStart(env: Record<string, string>): Started {
  const child = spawn('npm', ['start', '--silent'], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: '', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  child.stderr!.resume();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, stdout: () => out, exited };
}

async function waitFor(condition: () => boolean, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The processes whose parent is `pid`. */
const childrenOf = (pid: number): number[] =>
  spawnSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
    .stdout.split('\n')
    .map((l) => Number(l.trim()))
    .filter(Boolean);
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test.each(['SIGTERM', 'SIGINT'] as const)(
  '%s to npm start stops the service gracefully: exit 0, no orphan',
  async (signal) => {
    const port = await freePort();
    const started = npmStart({ PORT: String(port), DATA_DIR: await dataDir() });
    await waitFor(() => started.stdout().includes('listening on'), 120_000);
    const service = childrenOf(started.child.pid!);
    expect(service.length).toBeGreaterThan(0);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    started.child.kill(signal);
    expect(await started.exited).toBe(0);
    await waitFor(() => service.every((pid) => !alive(pid)), 10_000);
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  },
  180_000,
);

test('the first token is created and printed only once the service listens: a start that fails creates none', async () => {
  const dir = await dataDir();
  const blocker: Server = createServer();
  const port = await freePort();
  await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve));
  try {
    const failed = npmStart({ PORT: String(port), DATA_DIR: dir });
    expect(await failed.exited).not.toBe(0);
    expect(failed.stdout()).not.toMatch(/first one with scope/);
  } finally {
    await new Promise<void>((resolve) => blocker.close(() => resolve()));
  }
  const started = npmStart({ PORT: String(port), DATA_DIR: dir });
  await waitFor(() => started.stdout().includes('listening on'), 120_000);
  const token = /\n {2}(\S+)\n/.exec(started.stdout())?.[1];
  expect(token).toBeDefined();
  expect((await fetch(`http://127.0.0.1:${port}/user/`, { headers: { Authorization: `Bearer ${token}` } })).status).toBe(200);
  started.child.kill('SIGTERM');
  expect(await started.exited).toBe(0);
}, 240_000);

test('SIGTERM while npm start is still building: exit 0, and tsc is not left running', async () => {
  const { stat, utimes } = await import('node:fs/promises');
  const main = join(root, 'src', 'main.ts');
  const { atime, mtime } = await stat(main);
  const now = new Date();
  await utimes(main, now, now); // a source newer than the build
  try {
    const started = npmStart({ PORT: String(await freePort()), DATA_DIR: await dataDir() });
    await waitFor(() => childrenOf(started.child.pid!).some((pid) => childrenOf(pid).length > 0), 30_000); // start.mjs → tsc
    const builder = childrenOf(started.child.pid!);
    const tsc = builder.flatMap(childrenOf);
    started.child.kill('SIGTERM');
    expect(await started.exited).toBe(0);
    await waitFor(() => [...builder, ...tsc].every((pid) => !alive(pid)), 10_000);
    expect(started.stdout()).not.toContain('listening on');
  } finally {
    // The source is as it was built: the build is current again, and the next npm start (here or in
    // another test file running meanwhile) does not rebuild.
    await utimes(main, atime, mtime);
  }
}, 120_000);

test('npm run token -- --help prints the usage and exits 0', () => {
  const result = spawnSync('npm', ['run', '--silent', 'token', '--', '--help'], { cwd: root, encoding: 'utf8' });
  expect(result.status).toBe(0);
  expect(result.stdout).toMatch(/^usage: npm run token -- --user <id> --scope/);
  expect(result.stdout).toContain('--expires');
}, 120_000);

/** The command line of a running process, as its arguments. */
const commandLineOf = (pid: number): string[] => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);

test('npm start runs the service in its own process, with the Node flag V8 reads only at start on its command line', async () => {
  const port = await freePort();
  const started = npmStart({ PORT: String(port), DATA_DIR: await dataDir() });
  await waitFor(() => started.stdout().includes('listening on'), 120_000);
  try {
    const [service, ...others] = childrenOf(started.child.pid!);
    expect(others).toEqual([]); // npm execs node: one process, no child of it
    expect(childrenOf(service)).toEqual([]);
    const args = commandLineOf(service);
    // The heap's growth is set by the service itself (src/main.ts), whatever starts it.
    expect(args.filter((arg) => /^--((min|max)-semi-space-size|heap-growing-percent)/.test(arg))).toEqual([
      '--min-semi-space-size=16',
      '--max-semi-space-size=16',
    ]);
    expect(args.at(-1)).toBe('scripts/start.mjs');
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
  } finally {
    started.child.kill('SIGTERM');
  }
  expect(await started.exited).toBe(0);
}, 180_000);
