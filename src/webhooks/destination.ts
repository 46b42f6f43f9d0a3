import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Where a webhook may deliver (docs/rest.md#webhooks, Safety). A service that POSTs to addresses its
 * clients choose must not become a way into the network it runs in: a `url` whose host is, or
 * resolves to, a loopback, private, link-local, multicast, unspecified or otherwise reserved address
 * is refused, at create and update (a 400 naming `url`) and again at every delivery, unless
 * WEBHOOK_ALLOW_PRIVATE=true (tests, development).
 *
 * Addresses are classified by ipaddr.js; only its `unicast` range (public addresses) passes, after
 * an IPv4-mapped IPv6 address is read as the IPv4 address it carries. Two checks guard a
 * delivery: before it, the URL's host and its DNS answer (a name's answer kept RECHECK_ANSWER_MS);
 * and for every new connection, the HTTP client's connector looks the name up itself and connects
 * only to an address it has just checked (`pinnedLookup`, src/webhooks/client.ts). So a name that
 * resolves to a public address for one lookup and to a private one a moment later (DNS rebinding)
 * never gets a connection to the private one; a kept-alive connection stays with the public
 * address it was opened to, and a name that turned private is refused within RECHECK_ANSWER_MS.
 */

/** Why an address is refused, or null when it is a public one. */
export function refusedRange(address: string): string | null {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address);
  } catch {
    return 'not an IP address';
  }
  const range = parsed.range();
  return range === 'unicast' ? null : range;
}

/** A refused destination: its address and ipaddr.js's name of the range it is in. */
export class RefusedDestination extends Error {
  override name = 'RefusedDestination';
  constructor(
    readonly host: string,
    readonly address: string,
    readonly range: string,
  ) {
    super(`${host} is ${address === host ? 'a' : `${address}, a`} ${range} address, to which webhooks are not delivered (WEBHOOK_ALLOW_PRIVATE is off)`);
  }
}

/** How long the check of a create or update waits for DNS before it lets the name through (checked again at delivery). */
const CHECK_DNS_MS = 5_000;

/** A URL's host as DNS and sockets take it (`[::1]` → `::1`). */
const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1');

/**
 * The problem with a webhook `url` as a client wrote it, or null. Its form (absolute http or https,
 * no credentials in it), then, unless private destinations are allowed, its host: an IP address
 * must be public; a name must not resolve to any address that is not. A name that does not resolve
 * (yet) is let through: it is checked again at each delivery, which then fails until it does.
 * `beforeLookup` resolves before a name goes to DNS (the caller confirmed: a lookup is sent out).
 */
export async function urlProblem(raw: string, allowPrivate: boolean, beforeLookup: () => Promise<void> = () => Promise.resolve()): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute http:// or https:// URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an absolute http:// or https:// URL';
  if (url.username || url.password) return 'must not carry a user name or password (deliveries are signed with the webhook’s secret)';
  if (allowPrivate) return null;
  const host = hostOf(url);
  await beforeLookup();
  try {
    await checkHost(host, CHECK_DNS_MS);
  } catch (err) {
    if (err instanceof RefusedDestination) return err.message;
    return null; // not resolvable now: checked again at delivery
  }
  return null;
}

/** Every address a name resolves to (all families, as the system resolver answers, /etc/hosts included). */
function resolveAll(host: string, timeoutMs: number): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`DNS lookup of ${host} timed out`)), timeoutMs);
    dnsLookup(host, { all: true, verbatim: true }, (err, addresses) => {
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(addresses);
    });
  });
}

type Resolve = (host: string, timeoutMs: number) => Promise<LookupAddress[]>;

/** Throws RefusedDestination unless `host` (an address, or a name and every address it resolves to) is public. */
async function checkHost(host: string, timeoutMs: number, resolve: Resolve = resolveAll): Promise<LookupAddress[]> {
  if (isIP(host)) {
    const range = refusedRange(host);
    if (range) throw new RefusedDestination(host, host, range);
    return [{ address: host, family: isIP(host) }];
  }
  const addresses = await resolve(host, timeoutMs);
  for (const { address } of addresses) {
    const range = refusedRange(address);
    if (range) throw new RefusedDestination(host, address, range);
  }
  return addresses;
}

/**
 * The DNS lookup of the delivery client's connector (node:net's `lookup` option): the name is
 * resolved once, every address checked, and the connection made to the checked addresses only.
 * Node asks with `all: true` when it tries several addresses (autoSelectFamily), else for one.
 */
export function pinnedLookup(timeoutMs: number): LookupFunction {
  return (hostname, options, callback) => {
    checkHost(hostname, timeoutMs).then(
      (addresses) => {
        const family = typeof options === 'object' ? options.family : options;
        const usable = family === 4 || family === 6 ? addresses.filter((a) => a.family === family) : addresses;
        if (usable.length === 0) {
          const err = Object.assign(new Error(`${hostname} has no IPv${family} address`), { code: 'ENOTFOUND' });
          return callback(err, '', 0);
        }
        if (typeof options === 'object' && options.all) (callback as unknown as (err: null, all: LookupAddress[]) => void)(null, usable);
        else callback(null, usable[0].address, usable[0].family);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };
}

/**
 * How long the check a delivery makes reuses a name's DNS answer. Without it every delivery waited
 * for a lookup of its own (the system resolver, on libuv's thread pool): one more wait per event, on
 * the path of an endpoint whose events go one at a time. With it a name that starts resolving to a
 * private address is refused within this long; new connections are never made on a kept answer
 * (the connector's lookup above checks its own, fresh one).
 */
export const RECHECK_ANSWER_MS = 5_000;
/** Names whose answers are kept at most (past it, the expired ones are dropped, then all). */
const MAX_KEPT_ANSWERS = 10_000;

/**
 * The check a delivery makes before it connects (an address in the URL is never looked up): throws
 * RefusedDestination unless the host, and every address a name resolves to, is public. A name's
 * successful DNS answer is kept `keepMs` and checked again at every delivery meanwhile; a failed
 * lookup is not kept. `resolve` and `now` are the system resolver and clock, but for tests.
 */
export function destinationCheck(options: { keepMs?: number; resolve?: Resolve; now?: () => number } = {}) {
  const { keepMs = RECHECK_ANSWER_MS, resolve = resolveAll, now = Date.now } = options;
  const answers = new Map<string, { until: number; addresses: Promise<LookupAddress[]> }>();
  const kept: Resolve = (host, timeoutMs) => {
    const at = now();
    const known = answers.get(host);
    if (known && known.until > at) return known.addresses;
    if (answers.size >= MAX_KEPT_ANSWERS) {
      for (const [name, answer] of answers) if (answer.until <= at) answers.delete(name);
      if (answers.size >= MAX_KEPT_ANSWERS) answers.clear();
    }
    const addresses = resolve(host, timeoutMs);
    const entry = { until: at + keepMs, addresses };
    answers.set(host, entry);
    addresses.catch(() => {
      if (answers.get(host) === entry) answers.delete(host);
    });
    return addresses;
  };
  return (url: URL, timeoutMs: number): Promise<LookupAddress[]> => checkHost(hostOf(url), timeoutMs, kept);
}

/** The delivery check of this process (src/webhooks/endpoint.ts). */
export const checkDestination = destinationCheck();
