import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { databaseSchemaOf } from '../../src/module/registry.js';
import { MODULES } from '../../src/modules.js';
import { createLogger } from '../../src/observability/log.js';
import { startService, type RunningService } from '../../src/server.js';
import { freePort, waitFor } from '../support/processes.js';
import { newTestDatabase, type TestDatabase } from '../support/service.js';

/**
 * MIGRATE=false (docs/operations.md): the service only reads until `npm run migrate` has run. It
 * listens, /readyz answers 503, and nothing is created in the database, so that a role without
 * the right to create tables can run it.
 */
const onPostgres = process.env.DATABASE_URL ? test : test.skip;
const KEY = randomBytes(32).toString('base64');

/** Everything in the database that is not PostgreSQL's own: relations (tables, sequences, indexes, views), schemas, types, functions. */
const CATALOG = `
  select (select count(*) from pg_class c join pg_namespace n on n.oid = c.relnamespace
           where n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg_toast%' and n.nspname not like 'pg_temp%')::int as relations,
         (select count(*) from pg_namespace where nspname not in ('public', 'information_schema') and nspname not like 'pg_%')::int as schemas,
         (select count(*) from pg_type t join pg_namespace n on n.oid = t.typnamespace where n.nspname = 'public')::int as types,
         (select count(*) from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'public')::int as functions`;

/** Starts the service with MIGRATE=false without waiting for it to finish starting (it waits for the migrations). */
function startWaiting(env: Record<string, string>, port: number) {
  const logLines: string[] = [];
  let giveUp = false;
  const config = loadConfig({ TOKEN_KEY: KEY, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', MIGRATE: 'false', ...env });
  const started: Promise<RunningService> = startService(
    config,
    createLogger('info', (line) => logLines.push(line)),
    { stopRequested: () => giveUp },
  );
  return {
    started,
    logLines,
    base: `http://127.0.0.1:${port}`,
    giveUp: () => {
      giveUp = true;
    },
  };
}

const statusOf = async (url: string) => (await fetch(url)).status;

/** A connection of the test's own to the service's database (the embedded one through the service's socket). */
async function connectTo(database: TestDatabase): Promise<pg.Client> {
  const url = database.env.DATABASE_URL ?? (JSON.parse(await readFile(join(database.dataDir!, 'service.json'), 'utf8')) as { url: string }).url;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

test('MIGRATE=false on a new database creates nothing: it listens, /readyz answers 503, and the catalog stays empty until the migrations run', async () => {
  const database = await newTestDatabase();
  const waiting = startWaiting(database.env, await freePort());
  let service: RunningService | undefined;
  try {
    await waitFor('the service to wait for the migrations', () => waiting.logLines.some((line) => line.includes('waiting for the migrations')), 120_000);
    expect(await statusOf(`${waiting.base}/healthz`)).toBe(200);
    expect(await statusOf(`${waiting.base}/readyz`)).toBe(503);
    expect(await statusOf(`${waiting.base}/readyz`)).toBe(503);
    const client = await connectTo(database);
    try {
      expect((await client.query(CATALOG)).rows).toEqual([{ relations: 0, schemas: 0, types: 0, functions: 0 }]);
    } finally {
      await client.end();
    }
    if (database.env.DATABASE_URL) {
      // npm run migrate, beside it: the service then finishes starting, ready.
      const migrator = await openDatabase(
        { databaseUrl: database.env.DATABASE_URL, dataDir: '', poolSize: 2, tokenKey: Buffer.from(KEY, 'base64') },
        { schema: databaseSchemaOf(MODULES) },
      );
      try {
        expect((await migrator.migrate()).length).toBeGreaterThan(0);
      } finally {
        await migrator.close();
      }
      service = await waiting.started;
      expect(service.firstToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(await statusOf(`${waiting.base}/readyz`)).toBe(200);
    } else {
      // The embedded database: `npm run migrate` beside a running service leaves it to the
      // service, so this one is stopped while it waits.
      waiting.giveUp();
      service = await waiting.started;
    }
  } finally {
    waiting.giveUp();
    service ??= await waiting.started.catch(() => undefined);
    await service?.stop();
    await database.drop();
  }
}, 180_000);

onPostgres(
  'MIGRATE=false with a role that may not create anything: not ready until the migrations ran and it was granted the tables, then it serves',
  async () => {
    const database = await newTestDatabase();
    const role = `uts_app_${randomBytes(5).toString('hex')}`;
    const admin = new pg.Client({ connectionString: database.env.DATABASE_URL });
    await admin.connect();
    let service: RunningService | undefined;
    let waiting: ReturnType<typeof startWaiting> | undefined;
    try {
      await admin.query(`create role ${role} login`);
      await admin.query(`grant connect on database ${database.name} to ${role}`);
      // PostgreSQL 15 and later: only the database owner may create in schema public; say it anyway.
      await admin.query(`revoke create on schema public from public`);
      const roleUrl = new URL(database.env.DATABASE_URL);
      roleUrl.username = role;
      waiting = startWaiting({ DATABASE_URL: roleUrl.toString() }, await freePort());
      await waitFor('the service to wait for the migrations', () => waiting!.logLines.some((line) => line.includes('waiting for the migrations')), 60_000);
      expect(await statusOf(`${waiting.base}/readyz`)).toBe(503);

      const migrator = await openDatabase(
        { databaseUrl: database.env.DATABASE_URL, dataDir: '', poolSize: 2, tokenKey: Buffer.from(KEY, 'base64') },
        { schema: databaseSchemaOf(MODULES) },
      );
      try {
        await migrator.migrate();
      } finally {
        await migrator.close();
      }
      await admin.query(`grant select, insert, update, delete on all tables in schema public to ${role}`);
      await admin.query(`grant usage, select on all sequences in schema public to ${role}`);
      service = await waiting.started;
      expect(await statusOf(`${waiting.base}/readyz`)).toBe(200);
      const listed = await fetch(`${waiting.base}/user/`, { headers: { Authorization: `Bearer ${service.firstToken}` } });
      expect(listed.status).toBe(200);
      // It created nothing itself: every table belongs to the role that migrated.
      const owned = await admin.query(`select count(*)::int as n from pg_class where relowner = (select oid from pg_roles where rolname = $1)`, [role]);
      expect(owned.rows).toEqual([{ n: 0 }]);
    } finally {
      waiting?.giveUp();
      service ??= await waiting?.started.catch(() => undefined);
      await service?.stop();
      await admin.end();
      await database.drop();
      const cleanup = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await cleanup.connect();
      await cleanup.query(`drop role if exists ${role}`);
      await cleanup.end();
    }
  },
  180_000,
);
