import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/**
 * The built service as its own process (`node dist/src/main.js`) for the benchmarks: on a
 * throw-away database created on DATABASE_URL's server when it is set (dropped afterwards), else on
 * the embedded database in a temporary DATA_DIR.
 */
async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function memoryOf(pid: number): Promise<{ rssMiB: number; peakMiB: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMiB: kib('VmRSS') / 1024, peakMiB: kib('VmHWM') / 1024 };
}

/** Starts `node dist/src/main.js` (of the build in `cwd`: this one by default) and resolves once it listens. */
async function startService(env: Record<string, string>, cwd?: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['dist/src/main.js'], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('listening on')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the service exited with ${code} before listening:\n${out}`)));
  });
  return child;
}

export interface BenchService {
  base: string;
  /** The throw-away database's name (on DATABASE_URL's server), or undefined on the embedded database. */
  database: string | undefined;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** `cwd`: the directory of another build to run (a baseline to compare with), else this one. */
export async function benchService(env: Record<string, string>, cwd?: string): Promise<BenchService> {
  const adminUrl = process.env.DATABASE_URL;
  const port = await freePort();
  let dataDir: string | undefined;
  let databaseUrl: string | undefined;
  let dbName: string | undefined;
  if (adminUrl) {
    dbName = `uts_bench_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`create database ${dbName}`);
    await admin.end();
    const url = new URL(adminUrl);
    url.pathname = `/${dbName}`;
    databaseUrl = url.toString();
  } else {
    dataDir = await mkdtemp(join(tmpdir(), 'uts-bench-'));
  }
  const child = await startService(
    {
      PORT: String(port),
      HOST: '127.0.0.1',
      // A key of its own (SPEC §9); the embedded database would otherwise make a key file.
      ...(databaseUrl ? { DATABASE_URL: databaseUrl, TOKEN_KEY: randomBytes(32).toString('base64') } : { DATA_DIR: dataDir! }),
      ...env,
    },
    cwd,
  );
  return {
    base: `http://127.0.0.1:${port}`,
    database: dbName,
    child,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
      if (dbName) {
        const admin = new pg.Client({ connectionString: adminUrl });
        await admin.connect();
        await admin.query(`drop database if exists ${dbName} with (force)`);
        await admin.end();
      }
    },
  };
}
