// What both floors of the stack share (koa-floor.mjs, apollo-floor.mjs): the pool, the bearer
// token's keyed hash (the service's own Keyring, from a build), its check as the service makes it,
// and the write: the service's own statement (built from its resource definition) that updates
// the user's row and inserts the audit row (FLOOR_AUDIT=0: the update alone, as the anchors' writes).
//
// The token's check rides in the request's first statement, as the service's does once it has
// seen the token (src/auth/checked-sql.ts): a read joined to the live token, a write conditional
// on it being the token last seen. A token not seen before is looked up in a statement of its own
// first (FLOOR_CHECKED=0, or FLOOR_AUDIT=0: always, as the service did before its token hints, and
// as the anchors do).
import pg from 'pg';
import { liveTokenGate, withLiveToken } from '../dist/src/auth/authenticate.js';
import { Keyring } from '../dist/src/db/keyring.js';
import { updateStatement } from '../dist/src/resource/writes.js';
import { users } from '../dist/src/users/user.resource.js';

export const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const keyring = Keyring.of(Buffer.from(process.env.TOKEN_KEY ?? '', 'base64'));
const audit = process.env.FLOOR_AUDIT !== '0';
const checkedInStatement = audit && process.env.FLOOR_CHECKED !== '0';

// The live-token rule of src/auth/authenticate.ts, numbered from `$1` (its hash).
const LIVE_TOKEN = `select t.id, t.user_id, t.scope from tokens t join users u on u.id = t.user_id
          where t.access_token_hmac = $1 and t.deleted_at is null and u.deleted_at is null
            and (t.expire_at is null or t.expire_at > now())`;
const TOKEN = { name: 'floor-token', text: LIVE_TOKEN };

const numbered = (text) => {
  let n = 0;
  return text.replace(/\?/g, () => `$${++n}`);
};
/** What the last check of each token found, by its hash: the service's TokenHints, unbounded (the benchmark's tokens are few). */
const hints = new Map();

/**
 * The credential of an `Authorization: Bearer …` header: its hash and its token, as last seen
 * when it was seen before (its statements check it), else looked up here first (`lookedUp`).
 * Null when there is no bearer value or the lookup found no live token.
 */
export async function credentialOf(authorization) {
  const m = /^Bearer +(\S+)$/.exec(authorization ?? '');
  if (!m) return null;
  const hash = keyring.hash('accessToken', m[1]);
  const key = hash.toString('latin1');
  const hint = checkedInStatement ? hints.get(key) : undefined;
  if (hint) return { hash, key, token: hint, lookedUp: false };
  const token = (await pool.query({ ...TOKEN, values: [hash] })).rows[0] ?? null;
  if (!token) return null;
  hints.set(key, token);
  return { hash, key, token, lookedUp: true };
}

/** Thrown when a statement's check found the token not live: the request's answer is a 401. */
export class NotLive extends Error {}

const same = (a, b) => String(a.id) === String(b.id) && String(a.user_id) === String(b.user_id) && a.scope === b.scope;

/**
 * A read (`statement`'s `$1` its first value) for a credential: checked in the statement when the
 * token was not looked up for this request. Its rows; NotLive when the token is not live.
 */
export async function readFor(credential, statement, values) {
  if (credential.lookedUp) return (await pool.query({ ...statement, values })).rows;
  return checkedRows(credential, await pool.query({ ...statement.checked, values: [credential.hash, ...values], rowMode: 'array' }));
}

/** The statement's own rows of a checked statement (the token's three columns, `present`, then its), the token's check passed. */
function checkedRows(credential, { rows, fields }) {
  const token = rows[0] ? { id: rows[0][0], user_id: rows[0][1], scope: rows[0][2] } : null;
  if (!token) {
    hints.delete(credential.key);
    throw new NotLive();
  }
  // A token changed (its scope, its user) since it was last seen: the service runs the request
  // again with it looked up afresh; the benchmark never changes one, so the floor refuses.
  if (!same(token, credential.token)) {
    hints.delete(credential.key);
    throw new NotLive();
  }
  // As the service's readRows makes them (src/auth/checked-sql.ts).
  const found = [];
  for (const values of rows) {
    if (values[3] !== true) continue; // the statement found nothing: the token's row alone
    const row = {};
    for (let i = 4; i < fields.length; i++) row[fields[i].name] = values[i];
    found.push(row);
  }
  return found;
}

/**
 * A statement that reads (its placeholders `$1`, `$2`… in order), with its checked form: the
 * service's own (withLiveToken: the token beside its rows, answered as arrays).
 */
export function read(name, text) {
  return { name, text, checked: { name: `${name}-checked`, text: numbered(withLiveToken(1, text.replace(/\$\d+/g, '?'))) } };
}

// The service's own update texts (src/resource/writes.ts, built once here from the build's
// resource definition): optimistic, no row lock (a race lost answers "writeRaced", which the floor
// does not run again), the audit row in the same statement; `gated`: with the token's check in it
// (liveTokenGate). `fields`: the user's fields answered (all of them for REST, as the service's
// PATCH; those asked for in GraphQL).
const floorCaller = { tokenId: 1, userId: 1, scope: '', requestId: null };
function patchStatements(name, fields) {
  const statement = updateStatement(users, 0, { firstName: '' }, 'patch', {
    caller: floorCaller,
    optimistic: true,
    answer: fields ? users.columnsOf(new Set(fields)) : undefined,
  });
  const plain = audit
    ? numbered(statement.text)
    : `update users set first_name = $2::text, updated_at = now() where id = $1::bigint and deleted_at is null returning id, first_name as "firstName"`;
  return { plain: { name, text: plain }, gated: { name: `${name}-gated`, text: numbered(statement.gated(liveTokenGate(1))) } };
}
const PATCHES = new Map();

/**
 * Sets the first name of user `id` for a credential (`fields`: the user's fields answered, all
 * when absent): the row, or null; NotLive when the token is not live.
 */
export async function patchFirstName(id, firstName, credential, fields) {
  const key = fields?.join(',') ?? '*';
  let patch = PATCHES.get(key);
  if (!patch) PATCHES.set(key, (patch = patchStatements(`floor-patch-${PATCHES.size}`, fields)));
  const { token } = credential;
  // In the order of updateStatement's placeholders (optimistic: the compared value, the id, the
  // written value, then the audit row's actor: token, user, request id).
  const values = audit ? [firstName, id, firstName, token.id, token.user_id, null] : [id, firstName];
  if (credential.lookedUp) return (await pool.query({ ...patch.plain, values })).rows[0] ?? null;
  const gate = [credential.hash, token.id, token.user_id, token.scope];
  return checkedRows(credential, await pool.query({ ...patch.gated, values: [...gate, ...values], rowMode: 'array' }))[0] ?? null;
}
