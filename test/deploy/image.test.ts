import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, linkSync, mkdirSync, readFileSync, readdirSync, readlinkSync, symlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

/**
 * The container image's file layout, run without a Docker engine: the Dockerfile's final stage is
 * reproduced in a temporary directory standing for its WORKDIR, one COPY at a time (the production
 * packages the deps stage installs, as the lock file lists them; what the build stage's tsc emits;
 * the files copied from the build context), with its ENV. There, the commands the Dockerfile's
 * comment documents (`docker run … user-token-service <command>`) run as written, and so does the
 * image's CMD, against a database of their own: a new PostgreSQL database with DATABASE_URL (as
 * `npm test` is run in CI), else the embedded database in the image's DATA_DIR.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const dockerfile = read('Dockerfile');
const finalStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
const workdir = /^WORKDIR (\S+)$/m.exec(finalStage)![1];
/** `docker run --rm --env-file uts.env user-token-service <command>`, as the comment writes them. */
const documented = [...dockerfile.matchAll(/^#\s+docker run --rm --env-file uts\.env user-token-service (.+)$/gm)].map((m) => m[1]);
const ADMIN_URL = process.env.DATABASE_URL;

let app: string;
let scratch: string;
let env: Record<string, string>;
let database: string | null = null;

/** Hard links of a package's files (not its own node_modules: the lock file lists what production needs of those). */
function linkPackage(from: string, to: string, top = true): void {
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    if (top && entry.name === 'node_modules') continue;
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isSymbolicLink()) symlinkSync(readlinkSync(source), target);
    else if (entry.isDirectory()) linkPackage(source, target, false);
    else linkSync(source, target);
  }
}

/** The deps stage (`npm install --omit=dev` from the lock file): every package of the lock not only needed for development. */
function productionPackages(to: string): void {
  const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { dev?: boolean }> };
  for (const [path, entry] of Object.entries(lock.packages)) {
    // An optional package for another platform is in the lock but not installed here (nor in the image).
    if (!path.startsWith('node_modules/') || entry.dev || !existsSync(join(root, path))) continue;
    linkPackage(join(root, path), join(to, path.slice('node_modules/'.length)));
  }
}

/** The build stage (`tsc -p tsconfig.build.json`): what that tsc emits, from this checkout's build. */
function buildOutput(to: string): void {
  const { include } = JSON.parse(read('tsconfig.build.json')) as { include: string[] };
  for (const source of include) {
    const emitted = source.endsWith('.ts') ? [source.replace(/\.ts$/, '.js'), source.replace(/\.ts$/, '.js.map')] : [source];
    for (const path of emitted) cpSync(join(root, 'dist', path), join(to, path), { recursive: true });
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  expect(spawnSync(process.execPath, ['scripts/build-if-stale.mjs'], { cwd: root, stdio: 'inherit' }).status).toBe(0);
  scratch = await mkdtemp(join(tmpdir(), 'uts-image-'));
  app = join(scratch, 'app');
  mkdirSync(app);
  // The final stage's COPY instructions, in order; one this test cannot reproduce fails it.
  for (const [line, from, sources, dest] of finalStage.matchAll(/^COPY (?:--from=(\S+) )?(?:--chown=\S+ )?(.+) (\S+)$/gm)) {
    const target = join(app, dest);
    if (from === 'deps' && sources === `${workdir}/node_modules`) productionPackages(target);
    else if (from === 'build' && sources === `${workdir}/dist`) buildOutput(target);
    else if (from === undefined)
      for (const source of sources.split(' ')) cpSync(join(root, source), dest.endsWith('/') ? join(target, source) : target, { recursive: true });
    else throw new Error(`no way to reproduce ${line}`);
  }
  // Its ENV, with the image's paths under this directory and the port on the loopback interface.
  const image = Object.fromEntries(
    [.../^ENV ([\s\S]*?)\n(?!\s)/m.exec(finalStage)![1].matchAll(/([A-Z_]+)=(\S+)/g)].map(([, name, value]) => [name, value.replace(workdir, app)]),
  );
  // What uts.env holds: the database and the key that seals its tokens.
  const settings: Record<string, string> = { TOKEN_KEY: randomBytes(32).toString('base64') };
  if (ADMIN_URL) {
    database = `uts_image_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`create database ${database}`);
    await admin.end();
    const url = new URL(ADMIN_URL);
    url.pathname = `/${database}`;
    settings.DATABASE_URL = url.toString();
  }
  // A container's environment, not this test's (no npm_* variables naming this checkout); the Node
  // of the image is the Node running this test.
  env = {
    PATH: `${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`,
    HOME: scratch,
    ...image,
    ...settings,
    HOST: '127.0.0.1',
    PORT: String(await freePort()),
  };
}, 120_000);

afterAll(async () => {
  if (database) {
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`drop database if exists ${database} with (force)`);
    await admin.end();
  }
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** Runs a documented command as a shell in the image would, in its WORKDIR. */
function run(command: string, extra: Record<string, string> = {}) {
  return spawnSync('sh', ['-c', command], { cwd: app, env: { ...env, ...extra }, encoding: 'utf8', timeout: 120_000 });
}

test('the image holds what its commands need, and no sources', () => {
  expect(existsSync(join(app, 'dist/src/main.js'))).toBe(true);
  expect(existsSync(join(app, 'scripts/build-if-stale.mjs'))).toBe(true);
  expect(existsSync(join(app, 'src'))).toBe(false);
  expect(existsSync(join(app, 'node_modules/koa/package.json'))).toBe(true);
  // Development packages stay out (the compiler, the test runner).
  expect(existsSync(join(app, 'node_modules/typescript'))).toBe(false);
  expect(existsSync(join(app, 'node_modules/jest'))).toBe(false);
});

test('in the image, the documented commands run: migrate, then the CMD, then a token from the CLI that works', async () => {
  expect(documented).toEqual(
    expect.arrayContaining([
      'npm run migrate',
      expect.stringMatching(/^npm run --silent token -- /),
      expect.stringMatching(/^node dist\/src\/cli\/token\.js /),
    ]),
  );
  const migrate = run(documented.find((c) => c.startsWith('npm run migrate'))!);
  expect({ status: migrate.status, stderr: migrate.status === 0 ? '' : migrate.stderr }).toEqual({ status: 0, stderr: '' });
  if (database) {
    const client = new pg.Client({ connectionString: env.DATABASE_URL });
    await client.connect();
    const { rows } = await client.query<{ n: number }>('select count(*)::int as n from mikro_orm_migrations');
    await client.end();
    expect(rows[0].n).toBeGreaterThan(0);
  }

  // The image's CMD, with a bootstrap token (the first start creates user 1, whom the commands name).
  const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(finalStage)![1]) as string[];
  expect(cmd[0]).toBe('node');
  const bootstrap = randomBytes(24).toString('base64url');
  const service = spawn(process.execPath, cmd.slice(1), { cwd: app, env: { ...env, BOOTSTRAP_TOKEN: bootstrap }, stdio: ['ignore', 'ignore', 'pipe'] });
  let serviceErrors = '';
  service.stderr!.on('data', (chunk: Buffer) => (serviceErrors += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => service.once('exit', resolve));
  const url = `http://127.0.0.1:${env.PORT}`;
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const ready = await fetch(`${url}/readyz`).then(
        (res) => res.status === 200,
        () => false,
      );
      if (ready) break;
      if (service.exitCode !== null || Date.now() > deadline) throw new Error(`the image's CMD did not get ready: ${serviceErrors}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    for (const command of documented.filter((c) => c.includes('token'))) {
      const issued = run(command);
      expect({ command, status: issued.status, stderr: issued.status === 0 ? '' : issued.stderr }).toEqual({ command, status: 0, stderr: '' });
      const token = issued.stdout.trim();
      expect(token).toMatch(/^[A-Za-z0-9_-]{40,}$/);
      const res = await fetch(`${url}/user/1`, { headers: { Authorization: `Bearer ${token}` } });
      expect({ command, status: res.status }).toEqual({ command, status: 200 });
    }
  } finally {
    service.kill('SIGTERM');
  }
  expect(await exited).toBe(0);
}, 180_000);
