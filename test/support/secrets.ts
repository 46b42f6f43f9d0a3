/**
 * The helpers of the secrets-at-rest tests (test/tokens/secrets and keys.test.ts): services started
 * on a database of their own with given keys, and what a dump of that database shows.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../../src/config.js';
import { startService, type RunningService } from '../../src/server.js';
import { createLogger } from '../../src/observability/log.js';
import { type TestDatabase } from './service.js';
import { createToken, createUser, type Requester } from './users.js';

export const ADMIN_URL = process.env.DATABASE_URL;
export const onEmbedded = ADMIN_URL ? test.skip : test;
export const newKey = () => randomBytes(32).toString('base64');
export const silent = { out: () => {}, err: () => {} };

export const ADMIN = `admin-${randomBytes(12).toString('hex')}`;
export const baseEnv = (place: TestDatabase, env: Record<string, string>) => ({
  PORT: '0',
  LOG_LEVEL: 'silent',
  DB_POOL_SIZE: '3',
  BOOTSTRAP_TOKEN: ADMIN,
  ...place.env,
  ...env,
});
export const start = (place: TestDatabase, env: Record<string, string>) => startService(loadConfig(baseEnv(place, env)), createLogger('silent'));

export async function call(service: RunningService, method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(service.url + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: (text ? JSON.parse(text) : null) as any };
}

export const sqlOf =
  (service: RunningService) =>
  <T = any>(text: string, params: unknown[] = []) =>
    service.db.orm.em.fork().execute(text, params) as Promise<T[]>;

/** Every byte string a dump must not contain for a secret value: itself, its sha256 (hex, base64). */
export function forms(value: string): string[] {
  const sha = createHash('sha256').update(value, 'utf8').digest();
  return [
    value,
    sha.toString('hex'),
    sha.toString('base64'),
    sha.toString('base64url'),
    Buffer.from(value).toString('base64'),
    Buffer.from(value).toString('hex'),
  ];
}

/** Every file under a directory, as one buffer per file. */
export async function filesUnder(dir: string): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) out.push(await readFile(join(entry.parentPath, entry.name)));
  }
  return out;
}

/** What a dump of the database shows: pg_dump on PostgreSQL; on the embedded one, its files. */
export async function dumpOf(place: TestDatabase): Promise<Buffer[]> {
  if (place.name) {
    const url = new URL(ADMIN_URL!);
    const { stdout } = await promisify(execFile)(
      'pg_dump',
      ['-h', url.hostname, '-p', url.port || '5432', '-U', decodeURIComponent(url.username || 'postgres'), place.name],
      { maxBuffer: 256 * 1024 * 1024, env: { ...process.env, ...(url.password ? { PGPASSWORD: decodeURIComponent(url.password) } : {}) } },
    );
    return [Buffer.from(stdout)];
  }
  return filesUnder(place.dataDir!);
}

export function expectAbsent(dump: Buffer[], values: string[]) {
  for (const value of values) {
    for (const form of forms(value)) {
      expect({ form, found: dump.some((b) => b.includes(Buffer.from(form))) }).toEqual({ form, found: false });
    }
  }
}

/** A service started here, as its bootstrap token calls it. */
const asAdmin = (service: RunningService): Requester => ({ request: (method, path, options) => call(service, method, path, ADMIN, options?.body) });

export const makeUser = (service: RunningService, lastName = 'Secret') => createUser(asAdmin(service), { firstName: 'Key', lastName });

export const makeToken = (service: RunningService, userID: number, body: Record<string, unknown> = {}) =>
  createToken(asAdmin(service), userID, { accessToken: `tok-${randomBytes(16).toString('hex')}`, scope: 'token:read', ...body });
