import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { Logger } from './observability/log.js';

/**
 * WORKERS=n (docs/operations.md#many-instances-workers-replicas-poolers): n worker processes share the service's port through node:cluster. The
 * primary holds no database connection and serves no request: it starts the workers, starts a new
 * one when one dies, stops them all on SIGTERM or SIGINT (each stops gracefully: exit 0 when all
 * did), and answers the workers' requests for the group's metrics. Every worker is the whole
 * service (src/main.ts): migrations and the first token are done once under the startup lock
 * (src/db/database.ts), whichever worker gets there first. The workers run with the primary's Node
 * flags (node:cluster's default `execArgv`).
 */

/** A worker that dies this soon after it started is restarted after RESTART_DELAY_MS, not at once (a crash loop must not spin). */
const EARLY_DEATH_MS = 5_000;
const RESTART_DELAY_MS = 1_000;

/** The IPC messages a worker sends for `/metrics` and the primary's answer. */
interface MetricsRequest {
  type: 'uts:metrics';
  id: number;
}
interface MetricsAnswer extends MetricsRequest {
  text?: string;
  contentType?: string;
  error?: string;
}

export const isWorker = (): boolean => cluster.isWorker;

/** Runs the primary until its workers have stopped; resolves with the exit code. */
export function runPrimary(workers: number, log: Logger): Promise<number> {
  const aggregator = new AggregatorRegistry();
  const started = new Map<Worker, number>();
  let stopping = false;
  let announced = false;
  const fork = () => started.set(cluster.fork(), Date.now());
  cluster.on('listening', (_worker, address) => {
    if (announced) return;
    announced = true;
    const host = address.address?.includes(':') ? `[${address.address}]` : address.address;
    process.stdout.write(`User and token service listening on http://${host}:${address.port} (${workers} workers)\n`);
  });
  cluster.on('message', (worker, message: MetricsRequest) => {
    if (message?.type !== 'uts:metrics') return;
    const answer = (reply: Omit<MetricsAnswer, 'type' | 'id'>) => worker.send({ type: 'uts:metrics', id: message.id, ...reply } satisfies MetricsAnswer);
    aggregator.clusterMetrics().then(
      (text) => answer({ text, contentType: aggregator.contentType }),
      (err: Error) => answer({ error: err.message }),
    );
  });
  return new Promise((resolve) => {
    cluster.on('exit', (worker, code, signal) => {
      const since = started.get(worker) ?? 0;
      started.delete(worker);
      if (stopping) {
        if (started.size === 0) resolve(0);
        return;
      }
      log.warn('worker died; starting another', { pid: worker.process.pid, code, signal });
      if (Date.now() - since < EARLY_DEATH_MS) setTimeout(() => !stopping && fork(), RESTART_DELAY_MS);
      else fork();
    });
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) return;
      stopping = true;
      log.info('stopping workers', { signal, workers: started.size });
      if (started.size === 0) resolve(0);
      for (const worker of started.keys()) worker.process.kill('SIGTERM');
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
    for (let i = 0; i < workers; i++) fork();
  });
}

let nextRequest = 0;
const waiting = new Map<number, (answer: MetricsAnswer) => void>();

/**
 * In a worker: the metrics of every worker of the group, aggregated by the primary (prom-client's
 * cluster aggregation: counters and histograms summed, gauges as prom-client says per metric).
 */
export function groupMetrics(registry: Registry): () => Promise<{ text: string; contentType: string }> {
  // Constructing one is what makes prom-client answer the primary's requests in a worker.
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([registry]);
  process.on('message', (message: MetricsAnswer) => {
    if (message?.type !== 'uts:metrics') return;
    waiting.get(message.id)?.(message);
    waiting.delete(message.id);
  });
  return () =>
    new Promise((resolve, reject) => {
      const id = ++nextRequest;
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error('the primary did not answer with the metrics'));
      }, 5_000);
      waiting.set(id, (answer) => {
        clearTimeout(timer);
        if (answer.text !== undefined) resolve({ text: answer.text, contentType: answer.contentType ?? registry.contentType });
        else reject(new Error(answer.error ?? 'no metrics'));
      });
      process.send!({ type: 'uts:metrics', id } satisfies MetricsRequest);
    });
}
