import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Sql, WriteGate } from '../db/sql.js';
import { AppError } from '../errors.js';
import { headerCount, headerText } from '../shared/headers.js';
import { bearerOf } from './bearer.js';
import { parseScopes, type Caller } from './caller.js';

/**
 * What makes a token live, written once: not deleted, not expired, and owned by a user who is not
 * deleted (`t` the token's row, `u` its user's), so deleting or expiring a token, or deleting its
 * user, takes effect on the next request, and closes the subscriptions it opened (src/realtime/hub.ts).
 */
const LIVE = `t.deleted_at is null and u.deleted_at is null
     and (t.expire_at is null or t.expire_at > now())`;
const TOKEN_AND_USER = 'tokens t join users u on u.id = t.user_id';

/**
 * The live token behind a bearer value, in one indexed statement: the keyed hash (HMAC-SHA-256,
 * docs/operations.md#secrets-at-rest) of the value against the unique index of live tokens, joined to its user. During a key
 * rotation the value's hash under TOKEN_KEY_PREVIOUS is matched too (`in` of two: still one
 * statement on the same index).
 *
 * With the read cache on, the same statement reads the database's snapshot (which transactions
 * have committed, and the server's start), the cache's freshness check (src/read-cache/store.ts):
 * it costs no statement of its own.
 */
const liveTokenSql = (keys: number, snapshot: boolean, floor: boolean) => `select t.id, t.user_id, t.scope${
  snapshot
    ? `,
         pg_current_snapshot()::text || ' ' || pg_postmaster_start_time()::text as snapshot`
    : ''
}${
  floor
    ? `,
         pg_current_wal_flush_lsn()::text as floor`
    : ''
}
    from ${TOKEN_AND_USER}
   where t.access_token_hmac ${keys === 1 ? '= ?' : `in (${Array(keys).fill('?').join(', ')})`}
     and ${LIVE}`;
/** By number of keys held (one, or two during a rotation), then by what else is read: the snapshot (bit 1), the read floor (bit 2). */
const LIVE_TOKEN = [1, 2].map((keys) => [0, 1, 2, 3].map((what) => liveTokenSql(keys, (what & 1) !== 0, (what & 2) !== 0)));

/**
 * Of these token ids, those still live, with their expiry (null: none): how open connections learn
 * that their token ended (src/realtime/hub.ts), by the same rule a request's token is checked by.
 */
export async function liveTokenExpiries(sql: Sql, tokenIds: readonly number[]): Promise<Map<number, number | null>> {
  if (!tokenIds.length) return new Map();
  const live = await sql.rows<{ id: number; expire_at: string | Date | null }>(
    `select t.id, t.expire_at from ${TOKEN_AND_USER} where t.id = any(?::bigint[]) and ${LIVE}`,
    [`{${tokenIds.join(',')}}`],
  );
  return new Map(live.map((r) => [Number(r.id), r.expire_at === null ? null : new Date(r.expire_at).getTime()]));
}

/**
 * The keyed hashes of a secret under every key the service holds (the tokens' keyring,
 * src/db/keyring.ts, is one): what a bearer value is looked up by.
 */
export interface SecretHashes {
  hashes(field: 'accessToken', value: string): Buffer[];
}

/** What the token lookup reads besides the token. */
export interface LookupExtras {
  /**
   * The database snapshot, which the read cache keys answers by (src/read-cache/store.ts): read
   * when the cache wants it, asked only once a statement will run (while it stands aside, the
   * cache takes a sample).
   */
  snapshot?: { wantsSnapshot(): boolean } | null;
  /**
   * The primary's WAL position: everything committed before this request. A replica serves the
   * request's reads only once it has replayed that far (src/db/replicas.ts).
   */
  floor?: boolean;
}

export interface LiveToken {
  tokenId: number;
  userId: number;
  scope: string;
  /** Absent unless asked for. */
  snapshot?: string;
  floor?: string;
}

/**
 * The live token with this access token value, or null: the lookup of every request, also used
 * to introspect and revoke a token by its value (RFC 7662, RFC 7009).
 */
export async function liveTokenByValue(db: { sql: Sql; keyring: SecretHashes }, value: string, extras: LookupExtras = {}): Promise<LiveToken | null> {
  return liveTokenByHashes(db.sql, tokenHashes(db.keyring, value), extras);
}

/** The keyed hashes a bearer value is looked up by (one per key held), or null for a value no token can have. */
export function tokenHashes(keyring: SecretHashes, value: string): Buffer[] | null {
  return value.length === 0 || value.length > 1024 ? null : keyring.hashes('accessToken', value);
}

/** The live token with these keyed hashes (tokenHashes), or null. */
export async function liveTokenByHashes(sql: Sql, hashes: Buffer[] | null, extras: LookupExtras = {}): Promise<LiveToken | null> {
  if (!hashes) return null;
  const what = (extras.snapshot?.wantsSnapshot() ? 1 : 0) | (extras.floor ? 2 : 0);
  const [row] = await sql.rows<{ id: number; user_id: number; scope: string; snapshot?: string; floor?: string }>(LIVE_TOKEN[hashes.length - 1][what], hashes);
  // Found by keyed hash: equality of the stored hash is the check (a hash is no secret to time).
  if (!row) return null;
  const token: LiveToken = { tokenId: row.id, userId: row.user_id, scope: row.scope };
  if (row.snapshot) token.snapshot = row.snapshot;
  if (row.floor) token.floor = row.floor;
  return token;
}

/**
 * A statement's rows beside the live token read from `token` (`v`): its first three columns are
 * the token's id, user and scope, the fourth is true on a row of the statement's; no row at all
 * when the token is not live, one row with the statement's columns null when it found nothing.
 *
 * The statement is the inner side of a join without a condition, which PostgreSQL can only run as
 * a nested loop over the one token row: its rows come in its own order.
 */
const besideToken = (token: string, select: string) =>
  `select v.id, v.user_id, v.scope, r.* from ${token} v left join lateral (select true as "present", s.* from (${select}) s) r on true`;

/**
 * A read statement (`select …`) and, in the same statement, the live token with these hashes
 * (`hashes` key(s)), answered as besideToken says. `?` placeholders: the hashes', then the read's.
 */
export const withLiveToken = (keys: number, read: string) =>
  // limit 1: during a key rotation a value could match two rows (its hash under each key): the read runs once.
  besideToken(`(${LIVE_TOKEN[keys - 1][0]} limit 1)`, read);

/**
 * A write (src/resource/writes.ts) made conditional on the live token with these hashes (`keys`)
 * being the one a request was served as (its id, user and scope): in the write's own snapshot, so
 * that a token revoked or changed before it commits nothing. Answered as withLiveToken's read.
 * `?` placeholders: the hashes', the token's id, user and scope, then the write's.
 */
const TOKEN_GATES: readonly WriteGate[] = [1, 2].map((keys) => ({
  key: `token${keys}`,
  ctes: `tok as (${LIVE_TOKEN[keys - 1][0]} limit 1), hinted as (select 1 from tok where tok.id = ?::bigint and tok.user_id = ?::bigint and tok.scope = ?::text)`,
  condition: 'exists (select 1 from hinted)',
  answer: (select: string) => besideToken('tok', select),
}));
export const liveTokenGate = (keys: number): WriteGate => TOKEN_GATES[keys - 1];

/** The live token of a withLiveToken statement's first row, or null (none: the token is not live). */
export function liveTokenOfRow(row: readonly unknown[] | undefined): LiveToken | null {
  return row ? { tokenId: Number(row[0]), userId: Number(row[1]), scope: row[2] as string } : null;
}

/**
 * A request's credential, whatever carries it: an HTTP request's headers, a WebSocket's
 * connection_init payload (src/realtime/ws.ts), an event stream's request.
 */
export interface Credential {
  /** The Authorization value (`Bearer <accessToken>`); undefined when none was sent. */
  authorization: string | undefined;
  /** The calling client (clientOf), recorded with the tokens it creates. */
  client: string;
  /** The request's (or connection's) X-Request-Id, for the audit log. */
  requestId: string;
}

/**
 * The scope words of a token's scope text, made once per text: tokens share a few texts, and a
 * Set made for every request was a measurable share of it. At most SCOPE_TEXTS are kept (a
 * service with more distinct texts starts over): the sets are read-only, shared by every caller.
 */
const SCOPE_TEXTS = 1024;
const scopeSets = new Map<string, ReadonlySet<string>>();
function scopesOf(scope: string): ReadonlySet<string> {
  let words = scopeSets.get(scope);
  if (!words) {
    if (scopeSets.size >= SCOPE_TEXTS) scopeSets.clear();
    scopeSets.set(scope, (words = parseScopes(scope)));
  }
  return words;
}

/**
 * The caller behind a credential (401 otherwise), on every transport: REST, GraphQL over HTTP,
 * WebSocket and Server-Sent Events. As `extras` asks, it carries the snapshot its answers are
 * kept under (the read cache is on) and its read floor (replicas serve reads).
 */
export async function authenticate(db: { sql: Sql; keyring: SecretHashes }, credential: Credential, extras: LookupExtras = {}): Promise<Caller> {
  return callerOf(await liveTokenByValue(db, bearerOf(credential.authorization), extras), credential);
}

/** The 401 of a bearer value that is not a live token's. */
export const notLive = () => AppError.unauthorized('the access token is unknown, expired or revoked', 'invalid');

/** The caller a live token and its request's credential make (401 when the token is not live). */
export function callerOf(token: LiveToken | null, credential: Credential): Caller {
  if (!token) throw notLive();
  const caller: Caller = {
    tokenId: token.tokenId,
    userId: token.userId,
    scopes: scopesOf(token.scope),
    client: credential.client,
    requestId: credential.requestId,
  };
  if (token.snapshot) caller.snapshot = token.snapshot;
  if (token.floor) caller.readFloor = token.floor;
  return caller;
}

/** The longest `client` a token records (its column's length), in characters. */
const CLIENT_MAX = 255;

/** At most `max` characters, never cutting a character in two (an emoji is two UTF-16 units). */
const cut = (text: string, max: number) => (text.length <= max ? text : Array.from(text).slice(0, max).join(''));

/**
 * The client of a request: X-Client when the header is there (an empty one means ""), else the
 * product token of User-Agent ("curl/8.5.0 (x86_64…) libcurl/8.5.0" → "curl/8.5.0"), else "";
 * cut to 255 characters.
 */
export function clientOf(headers: IncomingHttpHeaders): string {
  const xClient = headers['x-client']; // several X-Client headers arrive joined by ", "
  if (xClient !== undefined) return cut(headerText(String(xClient)).trim(), CLIENT_MAX);
  const product =
    headerText(headers['user-agent'] ?? '')
      .trim()
      .split(/\s+/)[0] ?? '';
  return cut(product, CLIENT_MAX);
}

/**
 * The request's Authorization header. Node keeps the first of several and drops the rest; a
 * request that sends two is ambiguous (which credential did the caller mean?), so it is a 400.
 */
export function authorizationOf(req: IncomingMessage): string | undefined {
  const count = headerCount(req.rawHeaders, 'authorization');
  if (count > 1) throw AppError.badRequest(`send one Authorization header, not ${count}`);
  return req.headers.authorization || undefined;
}
