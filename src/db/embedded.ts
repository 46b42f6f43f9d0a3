import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
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

/**
 * The socket's name in its directory: the one libpq and `pg` derive from a directory (`host=/dir`)
 * and a port (`/dir/.s.PGSQL.5432`).
 */
const SOCKET_PORT = 5432;
const SOCKET_NAME = `.s.PGSQL.${SOCKET_PORT}`;
/** A Unix socket's path must fit in sun_path: 108 bytes on Linux, 104 on macOS, with its final NUL. */
const MAX_SOCKET_PATH_BYTES = 103;

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
 * DATA_DIR, private to this user (0700) before anything is written into it: PostgreSQL's own rule
 * for its data directory. One that belongs to another user is refused.
 */
async function makePrivate(dataDir: string): Promise<void> {
  try {
    await chmod(dataDir, 0o700);
  } catch (err) {
    throw new ConfigError(
      `DATA_DIR ${dataDir} cannot be made private to the user running the service (${(err as NodeJS.ErrnoException).code}); it must belong to that user`,
    );
  }
}

/**
 * Everything in DATA_DIR readable and writable by this user only (0700 directories, 0600 files),
 * whatever the umask. PostgreSQL creates its files 0600 as it runs, but PGlite's initdb leaves its
 * files 0666, and a directory from an older version of the service (or a copy) may have any mode.
 * Done by walking the directory rather than by setting the process's umask: a umask would change
 * the mode of every file the process creates, not only these, and initdb's files ignore it anyway.
 */
async function restrictContents(dataDir: string): Promise<void> {
  for (const entry of await readdir(dataDir, { recursive: true, withFileTypes: true })) {
    if (entry.isSymbolicLink()) continue;
    try {
      await chmod(join(entry.parentPath, entry.name), entry.isDirectory() ? 0o700 : 0o600);
    } catch (err) {
      // PostgreSQL removes temporary files as it runs.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}

/**
 * Where the database's Unix socket goes: DATA_DIR itself (private to its owner), or, when that
 * path is too long for a socket, a new private directory (0700) under the system's temporary
 * directory, named in the owner file.
 */
async function socketDirectory(dataDir: string): Promise<{ dir: string; temporary: boolean }> {
  const dir = resolve(dataDir);
  if (Buffer.byteLength(join(dir, SOCKET_NAME)) <= MAX_SOCKET_PATH_BYTES) return { dir, temporary: false };
  return { dir: await mkdtemp(join(tmpdir(), 'uts-db-')), temporary: true };
}

/** The `pg` URL of a socket directory (`host` a directory: a Unix socket; no TLS on it). */
const socketUrl = (dir: string) => `postgres://postgres@localhost:${SOCKET_PORT}/postgres?host=${encodeURIComponent(dir)}&sslmode=disable`;

/**
 * Starts PGlite (PostgreSQL compiled to WebAssembly) on `dataDir` and serves it with the
 * PostgreSQL wire protocol on a Unix socket inside DATA_DIR, so that the ordinary `pg` driver,
 * MikroORM and the migrations work exactly as against a real server. PGlite has no authentication:
 * whoever reaches the socket is its superuser. So the socket lives where only this user can reach
 * it (DATA_DIR is 0700), never on a TCP port any local user could connect to. PGlite runs one query
 * at a time; the socket server queues the protocol messages of its connections and keeps a
 * transaction's together (which is why every statement runs in a transaction there: src/db/sql.ts).
 *
 * Only one process may open a data directory. When another one already serves it, `share` (the
 * command-line tools, run by the same user) connects through that process; otherwise starting
 * fails with a clear message.
 */
export async function startEmbeddedPostgres(dataDir: string, share = false): Promise<EmbeddedPostgres> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const owner = await runningOwner(dataDir);
  if (owner) {
    if (share) return { url: owner.url, owned: false, stop: async () => {} };
    throw new ConfigError(`DATA_DIR ${dataDir} is in use by process ${owner.pid}; stop it or choose another DATA_DIR`);
  }
  // Private before PGlite writes anything: from here on nobody else can even list the directory.
  await makePrivate(dataDir);
  const db = await PGlite.create(dataDir);
  const ownerFile = join(dataDir, OWNER_FILE);
  let socket: { dir: string; temporary: boolean } | undefined;
  let server: PGLiteSocketServer | undefined;
  let url: string;
  try {
    await restrictContents(dataDir);
    socket = await socketDirectory(dataDir);
    const socketPath = join(socket.dir, SOCKET_NAME);
    // A socket left by a process that crashed (no live owner, checked above) would block the bind.
    if ((await lstat(socketPath).catch(() => null))?.isSocket()) await unlink(socketPath);
    server = new PGLiteSocketServer({ db, path: socketPath, maxConnections: MAX_CONNECTIONS });
    await server.start();
    await chmod(socketPath, 0o600);
    url = socketUrl(socket.dir);
    await writeFile(ownerFile, JSON.stringify({ pid: process.pid, url }), { mode: 0o600 });
    await chmod(ownerFile, 0o600); // one left by an older version may have had another mode
  } catch (err) {
    await server?.stop();
    await db.close();
    if (socket?.temporary) await rm(socket.dir, { recursive: true, force: true });
    throw err;
  }
  servedHere.set(resolve(dataDir), url);
  const serving = server;
  const socketDir = socket;
  return {
    url,
    owned: true,
    async stop() {
      servedHere.delete(resolve(dataDir));
      await serving.stop(); // closing the server removes its socket file
      await db.close();
      await rm(ownerFile, { force: true });
      if (socketDir.temporary) await rm(socketDir.dir, { recursive: true, force: true });
    },
  };
}
