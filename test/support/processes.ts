import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { waitFor } from './wait.js';

/**
 * Real processes for the scale-out tests (SPEC §11): the built service (`node dist/src/main.js`,
 * as a container runs it), throw-away databases on the test PostgreSQL, and helpers to wait.
 * Everything started is stopped by PID in the tests' afterAll/finally.
 */
export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const ADMIN_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export { sleep, waitFor } from './wait.js';

/** A database of its own on the test server; `url` reaches it. */
export async function newDatabase(): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `uts_scale_${randomBytes(5).toString('hex')}`;
  await adminQuery(`create database ${name}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return { name, url: url.toString(), drop: () => adminQuery(`drop database if exists ${name} with (force)`).then(() => undefined) };
}

export async function adminQuery<T extends pg.QueryResultRow = Record<string, unknown>>(text: string, url = ADMIN_URL, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, params)).rows;
  } finally {
    await client.end();
  }
}

export interface Instance {
  child: ChildProcess;
  port: number;
  url: string;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or the signal's name). */
  exited: Promise<number | string>;
  /** Log lines (JSON) the service wrote on stderr, parsed. */
  logLines(): Record<string, unknown>[];
}

/** Starts `node dist/src/main.js` with `env` on a port of its own (or the one given); resolves once it has started it. */
export async function startInstance(env: Record<string, string>, port?: number): Promise<Instance> {
  const chosen = port ?? (await freePort());
  const child = spawn(process.execPath, ['dist/src/main.js'], {
    cwd: root,
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: String(chosen), LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return {
    child,
    port: chosen,
    url: `http://127.0.0.1:${chosen}`,
    stdout: () => out,
    stderr: () => err,
    exited,
    logLines: () =>
      err
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

/** Resolves once the instance says it listens (stdout), or fails with what it printed. */
export async function listening(instance: Instance, ms = 60_000): Promise<void> {
  let exited: number | string | undefined;
  void instance.exited.then((code) => (exited = code));
  await waitFor(
    `the instance on ${instance.port} to listen`,
    () => {
      if (exited !== undefined) throw new Error(`exited ${exited}: ${instance.stderr().slice(-2000)}`);
      return instance.stdout().includes('listening on');
    },
    ms,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\nstdout: ${instance.stdout()}\nstderr: ${instance.stderr().slice(-2000)}`);
  });
}

/** SIGTERM (or the given signal), then the exit code; SIGKILL if it has not exited in `ms`. */
export async function stopInstance(instance: Instance, signal: NodeJS.Signals = 'SIGTERM', ms = 20_000): Promise<number | string> {
  if (instance.child.exitCode !== null || instance.child.signalCode !== null) return instance.exited;
  instance.child.kill(signal);
  const timer = setTimeout(() => instance.child.kill('SIGKILL'), ms);
  try {
    return await instance.exited;
  } finally {
    clearTimeout(timer);
  }
}

/** The PIDs of a process's children. */
export const childrenOf = (pid: number): number[] =>
  spawnSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
    .stdout.split('\n')
    .map((l) => Number(l.trim()))
    .filter(Boolean);

/** Runs a command as the `postgres` user (PostgreSQL's tools refuse root), failing with its output. */
export function asPostgres(command: string, args: string[], options: { cwd?: string } = {}): string {
  const result = spawnSync('runuser', ['-u', 'postgres', '--', command, ...args], { encoding: 'utf8', cwd: options.cwd ?? '/tmp' });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${result.status}): ${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

/** The directory of PostgreSQL's server programs (pg_ctl, pg_basebackup) of the newest major version installed. */
export function postgresBin(): string {
  const majors = readdirSync('/usr/lib/postgresql')
    .filter((d) => /^\d+$/.test(d))
    .sort((a, b) => Number(b) - Number(a));
  return `/usr/lib/postgresql/${majors[0]}/bin`;
}

/** A request's status, or 0 when it failed at the network level. */
export async function statusOf(url: string, init?: RequestInit): Promise<number> {
  try {
    const res = await fetch(url, init);
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}
