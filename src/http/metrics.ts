import type { Middleware } from 'koa';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { groupMetrics, isWorker } from '../cluster.js';
import type { Database } from '../db/database.js';
import type { RealtimeMetrics, TrustedDocumentMetrics } from '../observability/metrics.js';
import type { AppContext, AppState } from './context.js';
import { routeOf } from './middleware.js';

/**
 * Prometheus metrics (docs/operations.md), with prom-client: requests by method, route template and status
 * with their latency; GraphQL operations by name and type; the database pool; and prom-client's
 * process metrics. Labels are templates, never paths or values: an unknown path is `unmatched`,
 * so a scan of random URLs cannot grow the series; operation names are bounded likewise.
 */
export interface Metrics {
  /** Counts an answered request that took `ms` milliseconds to be ready (src/http/middleware.ts's requestEdge calls it, timed as its log line). */
  observe(ctx: AppContext, ms: number): void;
  /** GET /metrics (no token). */
  endpoint: Middleware<AppState>;
  /** The subscriptions' (src/realtime/). */
  realtime: RealtimeMetrics;
  /** Operations outside the trusted documents (src/graphql/gate.ts). */
  trustedDocuments: TrustedDocumentMetrics;
  /** The registry GET /metrics reads: where a module puts its own metrics (src/module/module.ts: `start`). */
  registry: Registry;
}

/** Distinct operation names that get a series of their own; later ones count as "other". */
const MAX_OPERATION_NAMES = 200;

export function createMetrics(db: Pick<Database, 'poolStats' | 'replicaStates'>): Metrics {
  // Operation names come from clients: only sane names get a label, and only so many of them, or a
  // client sending random names would grow the series (and the memory) without end.
  const named = new Set<string>();
  const operationLabel = (name: string | null): string => {
    if (name === null) return '';
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(name)) return 'other';
    if (named.has(name)) return name;
    if (named.size >= MAX_OPERATION_NAMES) return 'other';
    named.add(name);
    return name;
  };
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const group = isWorker() ? groupMetrics(registry) : null;
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({ name: 'http_requests_total', help: 'HTTP requests answered', labelNames, registers: [registry] });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from a request arriving to its answer being ready',
    labelNames,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const operations = new Counter({
    name: 'graphql_operations_total',
    help: 'GraphQL operations run, by operation name ("" when anonymous) and type',
    labelNames: ['name', 'type'] as const,
    registers: [registry],
  });
  const cacheLookups = new Counter({
    name: 'read_cache_lookups_total',
    help: 'Cacheable reads (REST and GraphQL), by whether the read cache answered them (hit), did not (miss), or stood aside under writes too frequent for kept answers to be reused (aside)',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  dbGauges(registry, db);
  const realtime = realtimeMetrics(registry);
  const untrusted = new Counter({
    name: 'graphql_untrusted_operations_total',
    help: 'GraphQL operations outside the trusted documents (GRAPHQL_TRUSTED_DOCUMENTS), by transport and outcome (logged, refused, explorer)',
    labelNames: ['transport', 'outcome'] as const,
    registers: [registry],
  });

  return {
    realtime,
    trustedDocuments: { outside: (transport, outcome) => untrusted.inc({ transport, outcome }) },
    registry,
    observe(ctx, ms) {
      const labels = { method: ctx.method, route: routeOf(ctx) ?? 'unmatched', status: String(ctx.status) };
      duration.observe(labels, ms / 1e3);
      requests.inc(labels);
      const operation = ctx.state.graphql;
      if (operation) operations.inc({ name: operationLabel(operation.name), type: operation.type });
      if (ctx.state.readCache) cacheLookups.inc({ result: ctx.state.readCache });
    },
    endpoint: async function metricsEndpoint(ctx) {
      if (group) {
        // A worker of WORKERS=n: the whole group's, from the primary.
        const { text, contentType } = await group();
        ctx.set('Content-Type', contentType);
        ctx.body = text;
        return;
      }
      ctx.set('Content-Type', registry.contentType);
      ctx.body = await registry.metrics();
    },
  };
}

/** The database pool's and the read replicas' gauges, read when scraped. */
function dbGauges(registry: Registry, db: Pick<Database, 'poolStats' | 'replicaStates'>): void {
  const pool = (name: string, help: string, read: (stats: ReturnType<Database['poolStats']>) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read(db.poolStats()));
      },
    });
  pool('db_pool_connections', 'Open database connections', (s) => s.size);
  pool('db_pool_connections_idle', 'Open database connections not in use', (s) => s.idle);
  pool('db_pool_connections_used', 'Database connections in use by a request', (s) => s.size - s.idle);
  pool('db_pool_waiting', 'Requests waiting for a database connection', (s) => s.waiting);
  pool('db_pool_max', 'Largest number of database connections the pool opens', (s) => s.max);
  // Read replicas (DATABASE_READ_URLS): how far behind each is, and whether reads go to it.
  new Gauge({
    name: 'db_replica_lag_seconds',
    help: 'How far each read replica is behind the primary (-1: unreachable)',
    labelNames: ['replica'] as const,
    registers: [registry],
    collect() {
      for (const r of db.replicaStates()) this.set({ replica: r.name }, r.lagSeconds ?? -1);
    },
  });
  new Gauge({
    name: 'db_replica_usable',
    help: 'Whether reads go to each read replica (1) or skip it (0: lagging or unreachable)',
    labelNames: ['replica'] as const,
    registers: [registry],
    collect() {
      for (const r of db.replicaStates()) this.set({ replica: r.name }, r.usable ? 1 : 0);
    },
  });
}

/** What the subscriptions count (src/realtime/). */
function realtimeMetrics(registry: Registry): RealtimeMetrics {
  const connections = new Gauge({
    name: 'realtime_connections',
    help: 'Open subscription connections, by transport (ws: graphql-ws over WebSocket, sse: graphql-sse)',
    labelNames: ['transport'] as const,
    registers: [registry],
  });
  const subscriptions = new Gauge({
    name: 'realtime_subscriptions',
    help: 'Running subscriptions, by operation',
    labelNames: ['operation'] as const,
    registers: [registry],
  });
  const eventsSent = new Counter({ name: 'realtime_events_sent_total', help: 'Events handed to subscriptions', registers: [registry] });
  const closes = new Counter({
    name: 'realtime_connections_closed_total',
    help: 'Subscription connections closed, by transport and reason (client, init_timeout, unauthorized, forbidden, slow, too_many, waiting_from_address, waiting, going)',
    labelNames: ['transport', 'reason'] as const,
    registers: [registry],
  });
  // Series that exist from the start, so that a dashboard sees zeros rather than nothing.
  for (const transport of ['ws', 'sse']) connections.set({ transport }, 0);

  return {
    connected: (transport, delta) => connections.inc({ transport }, delta),
    // Operations are the schema's subscription fields: a bounded set.
    subscribed: (operation, delta) => subscriptions.inc({ operation }, delta),
    sent: (count) => eventsSent.inc(count),
    closed: (transport, reason) => closes.inc({ transport, reason }),
  };
}
