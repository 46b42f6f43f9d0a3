import pg from 'pg';
import { startTestService, type TestService } from '../support/service.js';

/**
 * Many link and unlink calls on one user at once (issue 34, point 3): on PostgreSQL they contend
 * for the same rows, and every link write must take its locks in one order, or PostgreSQL aborts
 * some of them as deadlocks (each costing a second of `deadlock_timeout`, then a 409 or a 503).
 */
let svc: TestService;
beforeAll(async () => {
  // The pool of a deployment (DB_POOL_SIZE's default), not the tests' 4: as many transactions at once as in production.
  svc = await startTestService({ DB_POOL_SIZE: '10' });
});
afterAll(async () => {
  await svc?.stop();
});

async function create(path: string, body: Record<string, unknown>): Promise<number> {
  const reply = await svc.request('POST', path, { body });
  expect(reply.status).toBe(201);
  return reply.body as number;
}

const LINK = {
  application: { link: 'linkUserApplications', unlink: 'unlinkUserApplications', ids: 'applicationIDs', audit: 'application_link', column: 'applicationID' },
  role: { link: 'linkUserRoles', unlink: 'unlinkUserRoles', ids: 'roleIDs', audit: 'role_link', column: 'roleID' },
} as const;
type Kind = keyof typeof LINK;

/** A small seeded generator (mulberry32), so that a failing load can be run again as it was. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The deadlocks PostgreSQL counted in the service's database. A backend reports its counts to the
 * statistics only now and then (at most once a second, when idle) but always when it exits: the
 * service's connections are ended (its pool opens new ones), and the count is read once every one
 * of them is gone from pg_stat_activity (a backend reports before it leaves it).
 */
async function deadlocks(): Promise<number> {
  const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await admin.connect();
  try {
    const [{ db }] = await svc.sql<{ db: string }>('select current_database() as db');
    // The pids first, then each ended by its own statement: in one statement's `where`, PostgreSQL
    // may call pg_terminate_backend before it has checked the other conditions.
    const { rows } = await admin.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1', [db]);
    const pids = rows.map((r) => r.pid);
    for (const pid of pids) await admin.query('select pg_terminate_backend($1)', [pid]);
    for (let waited = 0; ; waited += 50) {
      const { rows: left } = await admin.query('select 1 from pg_stat_activity where pid = any($1::int[])', [pids]);
      // The service's pool has let go of the ended connections too (it opens new ones when asked).
      if (left.length === 0 && svc.running.db.poolStats().size === 0) break;
      if (waited > 10_000) throw new Error(`backends ${pids.join(', ')} did not end`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const { rows: counted } = await admin.query<{ deadlocks: string }>('select deadlocks::text from pg_stat_database where datname = $1', [db]);
    return Number(counted[0].deadlocks);
  } finally {
    await admin.end();
  }
}

interface Call {
  transport: 'rest' | 'graphql';
  kind: Kind;
  op: 'link' | 'unlink';
  ids: number[];
}

/** One call, over REST or GraphQL: whether it succeeded, its count, and its answer. */
async function call(user: number, { transport, kind, op, ids }: Call): Promise<Call & { ok: boolean; count: number; answer: string }> {
  if (transport === 'rest') {
    const reply = await svc.request(op === 'link' ? 'POST' : 'DELETE', `/user/${user}/${kind}/`, { body: ids });
    const ok = reply.status === (op === 'link' ? 201 : 200);
    return { transport, kind, op, ids, ok, count: ok ? (reply.body as number) : 0, answer: `${reply.status} ${reply.text}` };
  }
  const field = LINK[kind][op];
  const reply = await svc.graphql(`mutation($id: ID!, $ids: [ID!]!) { ${field}(id: $id, ${LINK[kind].ids}: $ids) }`, {
    id: String(user),
    ids: ids.map(String),
  });
  const ok = reply.status === 200 && !reply.body?.errors && typeof reply.body?.data?.[field] === 'number';
  return { transport, kind, op, ids, ok, count: ok ? (reply.body.data[field] as number) : 0, answer: `${reply.status} ${reply.text}` };
}

describe('a mixed link and unlink load on one user', () => {
  test('64 calls at a time (links and unlinks of applications and roles, REST and GraphQL): all succeed, no deadlock, the links as the audit log tells', async () => {
    const targets: Record<Kind, number[]> = { application: [], role: [] };
    for (let i = 0; i < 6; i++) targets.application.push(await create('/application/', { name: `load-app-${i}` }));
    for (let i = 0; i < 6; i++) targets.role.push(await create('/role/', { name: `load-role-${i}` }));
    const user = await create('/user/', { firstName: 'Many', lastName: 'Links' });
    const onPostgreSQL = Boolean(process.env.DATABASE_URL);
    const before = onPostgreSQL ? await deadlocks() : 0;

    const next = random(343);
    // On the embedded database (one session: no lock is ever contended) fewer: only the answers and the state are checked there.
    const calls = Array.from({ length: onPostgreSQL ? 400 : 128 }, (): Call => {
      // Mostly applications: a revived application link is the update most likely to leave its page.
      const kind: Kind = next() < 0.75 ? 'application' : 'role';
      // A random non-empty subset of the six, in a random order.
      const ids = targets[kind].filter(() => next() < 0.5);
      if (!ids.length) ids.push(targets[kind][Math.floor(next() * 6)]);
      ids.sort(() => next() - 0.5);
      return { kind, op: next() < 0.5 ? 'link' : 'unlink', transport: next() < 0.5 ? 'rest' : 'graphql', ids };
    });
    const results: Awaited<ReturnType<typeof call>>[] = [];
    let at = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (at < calls.length) results.push(await call(user, calls[at++]));
      }),
    );

    const failed = results.filter((r) => !r.ok).map((r) => r.answer);
    const counted = onPostgreSQL ? (await deadlocks()) - before : 0;
    expect(failed).toEqual([]);
    expect(counted).toBe(0);
    // Nothing was taken for a database outage.
    expect(svc.logLines.filter((line) => JSON.parse(line).level === 'warn')).toEqual([]);

    for (const kind of ['application', 'role'] as const) {
      const { audit, column } = LINK[kind];
      // Replayed in id order, the user's link events make and end each link in turn, never twice in a row.
      const events = await svc.sql<{ action: string; changes: Record<string, { before: string | null; after: string | null }> }>(
        `select action, changes from audit_events where resource = ? and record_id = ? order by id`,
        [audit, user],
      );
      const linked = new Set<number>();
      for (const { action, changes } of events) {
        const change = changes[column];
        const target = Number(action === 'link' ? change.after : change.before);
        expect(linked.has(target)).toBe(action === 'unlink');
        if (action === 'link') linked.add(target);
        else linked.delete(target);
      }
      const table = kind === 'application' ? 'user_applications' : 'user_roles';
      const rows = await svc.sql<{ id: string }>(`select ${kind}_id::text as id from ${table} where user_id = ? and deleted_at is null order by 1`, [user]);
      expect(rows.map((r) => Number(r.id)).sort((a, b) => a - b)).toEqual([...linked].sort((a, b) => a - b));
      // Each answer counted what it changed: as many events as counted, links made minus ended is what is linked.
      const mine = results.filter((r) => r.kind === kind);
      const made = mine.filter((r) => r.op === 'link').reduce((sum, r) => sum + r.count, 0);
      const ended = mine.filter((r) => r.op === 'unlink').reduce((sum, r) => sum + r.count, 0);
      expect(events.filter((e) => e.action === 'link')).toHaveLength(made);
      expect(events.filter((e) => e.action === 'unlink')).toHaveLength(ended);
      expect(made - ended).toBe(linked.size);
    }
  }, 180_000);
});
