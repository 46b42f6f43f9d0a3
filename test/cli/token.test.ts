import { spawn, spawnSync } from 'node:child_process';
import { tokenCommand } from '../../src/cli/token.js';
import { root } from '../support/processes.js';
import { startTestService, type TestService } from '../support/service.js';

/**
 * `npm run token` beside a running service, on the database the tests run on (the embedded one,
 * reached through the service's socket, or PostgreSQL with DATABASE_URL): a real process that exits
 * on its own once it has printed, and the refusals and warnings of its options.
 */
let svc: TestService;
let userID: number;
/** The CLI's environment: the service's database and token key. */
let cliEnv: Record<string, string>;

beforeAll(async () => {
  svc = await startTestService();
  const user = await svc.request('POST', '/user/', { body: { firstName: 'Cli', lastName: 'User' } });
  userID = user.body;
  cliEnv = {
    DATABASE_URL: svc.config.databaseUrl ?? '',
    ...(svc.config.databaseUrl ? {} : { DATA_DIR: svc.config.dataDir }),
    TOKEN_KEY: svc.config.tokenKey!.toString('base64'),
    LOG_LEVEL: 'silent',
  };
  // The child processes below run dist/: built as npm start and npm run token build it.
  expect(spawnSync(process.execPath, ['scripts/build-if-stale.mjs'], { cwd: root, stdio: 'ignore' }).status).toBe(0);
});
afterAll(async () => {
  await svc?.stop();
});

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; kills it (and fails) if it has not ended after `ms`, a bound far above its run. */
function run(command: string, args: string[], ms = 90_000): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, env: { ...process.env, ...cliEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')} had not ended after ${ms} ms; stdout: ${stdout}; stderr: ${stderr}`));
    }, ms);
    // 'close': the process has exited and its output has been read to the end.
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

const ACCESS_TOKEN = /^[A-Za-z0-9_-]{43}\n$/;

test('npm run token beside the running service prints the token and exits on its own: status 0, no signal', async () => {
  const exit = await run('npm', ['run', '--silent', 'token', '--', '--user', String(userID), '--scope', 'user:read']);
  expect(exit).toMatchObject({ code: 0, signal: null });
  expect(exit.stdout).toMatch(ACCESS_TOKEN);
  expect(exit.stderr).toMatch(/^Issued token \d+ for user \d+ with scope "user:read"\.\n$/);
  expect((await svc.request('GET', `/user/${userID}`, { token: exit.stdout.trim() })).status).toBe(200);
}, 120_000);

/**
 * What kept the process alive after it had printed was a connection to the service's embedded
 * database left in pg's pool, whose idle timer closed it 10 s later: once the command has returned,
 * no timer may be left. (A connection being closed is still a socket for a moment after: its end
 * sent, the server's on its way; that one keeps nothing waiting.)
 */
test('once the token command has returned, its process has no timer left that would keep it alive', async () => {
  const script = `
    import { tokenCommand } from './dist/src/cli/token.js';
    const io = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) };
    const timers = () => process.getActiveResourcesInfo().filter((kind) => !/Wrap$/.test(kind));
    const before = timers();
    const code = await tokenCommand(['--user', '${userID}', '--scope', 'user:read'], process.env, io);
    process.stderr.write('\\n' + JSON.stringify({ code, before, after: timers() }) + '\\n');
  `;
  const exit = await run(process.execPath, ['--input-type=module', '-e', script]);
  expect(exit).toMatchObject({ code: 0, signal: null });
  expect(exit.stdout).toMatch(ACCESS_TOKEN);
  const report = JSON.parse(exit.stderr.trim().split('\n').at(-1)!) as { code: number; before: string[]; after: string[] };
  expect(report).toEqual({ code: 0, before: [], after: [] });
}, 120_000);

/** Runs the command in this process, collecting what it prints. */
async function token(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await tokenCommand(argv, cliEnv, { out: (t) => out.push(t), err: (t) => err.push(t) });
  return { code, out: out.join(''), err: err.join('') };
}

const tokenCount = async () => Number((await svc.sql<{ n: string }>('select count(*) as n from tokens'))[0].n);

test('an empty --scope and an --expires in the past are refused (exit 1, saying why) and create nothing', async () => {
  const count = await tokenCount();
  for (const scope of ['', '   ']) {
    const refused = await token('--user', String(userID), '--scope', scope);
    expect(refused).toEqual({ code: 1, out: '', err: expect.stringContaining('--scope is empty: the token would grant nothing') });
  }
  const past = await token('--user', String(userID), '--scope', 'user:read', '--expires', '2001-02-03T04:05:06Z');
  expect(past).toEqual({ code: 1, out: '', err: '--expires 2001-02-03T04:05:06Z is in the past: the token would never work\n' });
  // The present moment is past too, by the time the token would be stored.
  const now = await token('--user', String(userID), '--scope', 'user:read', '--expires', new Date().toISOString());
  expect(now.code).toBe(1);
  expect(now.err).toContain('is in the past');
  expect(await tokenCount()).toBe(count);

  const future = await token('--user', String(userID), '--scope', 'user:read', '--expires', '2999-01-01T00:00:00Z');
  expect(future.code).toBe(0);
  expect(await tokenCount()).toBe(count + 1);
});

test('scope words that grant nothing here are kept, with one warning line on stderr naming them', async () => {
  const issued = await token('--user', String(userID), '--scope', 'user:raed user:read tokn:read role:* audit:read other-app:admin *');
  expect(issued.code).toBe(0);
  expect(issued.out).toMatch(ACCESS_TOKEN);
  const lines = issued.err.trimEnd().split('\n');
  expect(lines).toHaveLength(2);
  expect(lines[0]).toMatch(
    /^warning: "user:raed", "tokn:read", "other-app:admin" grant nothing in this service \(it checks user:read, .*\); the token carries them all the same$/,
  );
  expect(lines[1]).toMatch(/^Issued token \d+ /);
  const stored = await svc.sql<{ scope: string }>('select scope from tokens where access_token_hmac = ?', [svc.hmac(issued.out.trim())]);
  expect(stored).toEqual([{ scope: 'user:raed user:read tokn:read role:* audit:read other-app:admin *' }]);

  const known = await token('--user', String(userID), '--scope', 'user:read token:* application:write');
  expect(known.code).toBe(0);
  expect(known.err).not.toContain('warning');
});
