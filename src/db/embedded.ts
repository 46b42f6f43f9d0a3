import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { ConfigError } from '../config.js';

export interface EmbeddedPostgres {
  url: string;
  /** False when this process reached the database through another process that serves it. */
  owned: boolean;
  stop(): Promise<void>;
}

/** The service's one connection, and a few for command-line tools that run beside it. */
const MAX_CONNECTIONS = 5;

/** Written into DATA_DIR while a process serves the embedded database: its pid and address. */
const OWNER_FILE = 'service.json';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Data directories this process serves (the owner file alone cannot tell this process's own). */
const servedHere = new Map<string, string>();

async function runningOwner(dataDir: string): Promise<{ pid: number; url: string } | null> {
  const here = servedHere.get(resolve(dataDir));
  if (here) return { pid: process.pid, url: here };
  try {
    const owner = JSON.parse(await readFile(join(dataDir, OWNER_FILE), 'utf8')) as { pid: number; url: string };
    // A file left by this pid is stale (a crash); one left by a live other process is not.
    return owner.pid !== process.pid && alive(owner.pid) ? owner : null;
  } catch {
    return null;
  }
}

/**
 * Starts PGlite (PostgreSQL compiled to WebAssembly) on `dataDir` and serves it on a loopback port
 * with the PostgreSQL wire protocol, so that the ordinary `pg` driver, MikroORM and the migrations
 * work exactly as against a real server. PGlite runs one query at a time; the socket server queues
 * the protocol messages of its connections and keeps a transaction's together (which is why every
 * statement runs in a transaction there: src/db/sql.ts).
 *
 * Only one process may open a data directory. When another one already serves it, `share` (the
 * command-line tools) connects through that process; otherwise starting fails with a clear message.
 */
export async function startEmbeddedPostgres(dataDir: string, share = false): Promise<EmbeddedPostgres> {
  await mkdir(dataDir, { recursive: true });
  const owner = await runningOwner(dataDir);
  if (owner) {
    if (share) return { url: owner.url, owned: false, stop: async () => {} };
    throw new ConfigError(`DATA_DIR ${dataDir} is in use by process ${owner.pid}; stop it or choose another DATA_DIR`);
  }
  const db = await PGlite.create(dataDir);
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: MAX_CONNECTIONS });
  await server.start();
  const url = `postgres://postgres@${server.getServerConn()}/postgres`;
  await writeFile(join(dataDir, OWNER_FILE), JSON.stringify({ pid: process.pid, url }));
  servedHere.set(resolve(dataDir), url);
  return {
    url,
    owned: true,
    async stop() {
      servedHere.delete(resolve(dataDir));
      await server.stop();
      await db.close();
      await rm(join(dataDir, OWNER_FILE), { force: true });
    },
  };
}
