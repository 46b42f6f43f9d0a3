import type { Agent } from 'undici';
import { pinnedLookup } from './destination.js';

/**
 * The HTTP client of deliveries: undici (Node's own fetch is built on it), one shared Agent that
 * keeps a pool of connections per origin. Its rules (docs/rest.md#webhooks):
 * - one attempt takes at most `timeoutMs` (10 s by default) from connecting to the last byte of the
 *   answer read, whatever the answer does (a server that sends its headers, then trickles its body);
 * - no redirect is followed (undici's `request` follows none): a 3xx is an answer like any other
 *   non-2xx, a failure;
 * - at most 64 KiB of the answer's body is read (and recorded); the rest is not;
 * - unless private destinations are allowed, every connection goes to an address the connector's
 *   own DNS lookup checked (src/webhooks/destination.ts).
 *
 * undici is loaded with the first delivery, not with the service: loaded alone it holds 5.5 MB of
 * heap (its JavaScript, the WebAssembly HTTP parser it compiles); in the service it was 3–7 MB of
 * RSS at start and ~6 MB at the benchmark's peak (docs/benchmarks.md), which an instance with
 * nothing to deliver (`WEBHOOK_DELIVERY=false`, or no webhook registered) would carry for nothing.
 */
export const MAX_RESPONSE_BYTES = 64 * 1024;

export interface Attempt {
  /** The HTTP status, or null when no answer came. */
  status: number | null;
  /** The first 64 KiB of the answer's body (UTF-8), or null. */
  body: string | null;
  /** Why it failed without an answer (timeout, connection error). */
  error: string | null;
}

export interface DeliveryClient {
  post(url: URL, headers: Record<string, string>, body: string): Promise<Attempt>;
  close(): Promise<void>;
}

/**
 * undici's own timeouts (its documented error codes): the attempt's limit is also undici's connect,
 * headers and body timeouts, and whichever of its timers or the attempt's signal fires first, the
 * attempt outlasted its limit.
 */
const UNDICI_TIMEOUTS = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/**
 * What a failure without an answer is called in the history: `timeout` when the attempt outlasted
 * its limit, else the error's code (ECONNREFUSED, ENOTFOUND, …), never its message's details.
 */
export function failureOf(err: unknown, timedOut: boolean): string {
  const error = err as { code?: string; name?: string; message?: string; cause?: { code?: string; name?: string; message?: string } };
  // undici reports some failures as themselves, others as the cause of a wrapping error.
  const failures = [error, error?.cause];
  if (timedOut || failures.some((e) => UNDICI_TIMEOUTS.has(e?.code ?? ''))) return 'timeout';
  // A refused destination (the connector's lookup) says which address and why.
  const refused = failures.find((e) => e?.name === 'RefusedDestination');
  if (refused) return `refused: ${refused.message}`;
  return error?.code ?? error?.cause?.code ?? error?.name ?? 'connection failed';
}

export function deliveryClient(options: { timeoutMs: number; allowPrivate: boolean }): DeliveryClient {
  const { timeoutMs } = options;
  // One Agent, made by the first delivery (concurrent first deliveries share it). A load that
  // failed (undici missing from an install) is the attempt's error, and tried again by the next.
  let loading: Promise<Agent> | null = null;
  let closed = false;
  const agentOf = (): Promise<Agent> => {
    if (closed) return Promise.reject(Object.assign(new Error('the delivery client is closed'), { code: 'CLIENT_CLOSED' }));
    loading ??= import('undici').then(
      ({ Agent }) =>
        new Agent({
          connect: { timeout: timeoutMs, ...(options.allowPrivate ? {} : { lookup: pinnedLookup(timeoutMs) }) },
          keepAliveTimeout: 30_000,
          // Deliveries to one endpoint go one at a time; a few connections per origin serve several endpoints there.
          connections: 8,
        }),
      (err: unknown) => {
        loading = null;
        throw err;
      },
    );
    return loading;
  };
  return {
    async post(url, headers, body) {
      const signal = AbortSignal.timeout(timeoutMs);
      // The status once the headers are in: an answer whose body then fails (or outlasts the
      // attempt) is still the answer given, with what of its body was read.
      let status: number | null = null;
      const chunks: Buffer[] = [];
      try {
        const agent = await agentOf();
        const answer = await agent.request({
          origin: url.origin,
          path: `${url.pathname}${url.search}`,
          method: 'POST',
          headers,
          body,
          signal,
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        });
        status = answer.statusCode;
        let size = 0;
        for await (const chunk of answer.body as AsyncIterable<Buffer>) {
          const room = MAX_RESPONSE_BYTES - size;
          chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
          size += Math.min(chunk.length, room);
          if (size >= MAX_RESPONSE_BYTES) break; // leaving the loop destroys the rest of the body
        }
        return { status: answer.statusCode, body: Buffer.concat(chunks).toString('utf8'), error: null };
      } catch (err) {
        return { status, body: status === null ? null : Buffer.concat(chunks).toString('utf8'), error: failureOf(err, signal.aborted) };
      }
    },
    close: async () => {
      closed = true;
      // A load that failed left nothing to close.
      const agent = await loading?.catch(() => null);
      await agent?.close();
    },
  };
}
