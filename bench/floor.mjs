// What both floors of the stack share (koa-floor.mjs, apollo-floor.mjs): the pool and the bearer
// token's lookup as the service makes it, its keyed hash (the service's own Keyring, from a build)
// and one named statement.
import pg from 'pg';
import { Keyring } from '../dist/src/db/keyring.js';

export const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const keyring = Keyring.of(Buffer.from(process.env.TOKEN_KEY ?? '', 'base64'));
const TOKEN = {
  name: 'floor-token',
  text: `select t.id, t.user_id, t.scope from tokens t join users u on u.id = t.user_id
          where t.access_token_hmac = $1 and t.deleted_at is null and u.deleted_at is null
            and (t.expire_at is null or t.expire_at > now())`,
};

/** The live token of an `Authorization: Bearer …` header, or null. */
export async function tokenOf(authorization) {
  const m = /^Bearer +(\S+)$/.exec(authorization ?? '');
  return m ? ((await pool.query({ ...TOKEN, values: [keyring.hash('accessToken', m[1])] })).rows[0] ?? null) : null;
}
