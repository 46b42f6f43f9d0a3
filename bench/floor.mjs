// What both floors of the stack share (koa-floor.mjs, apollo-floor.mjs): the pool and the bearer
// token's lookup as the service makes it, its keyed hash (the service's own Keyring, from a build),
// and the write: one statement of the service's shape that locks the user's row, updates it and
// inserts the audit row (FLOOR_AUDIT=0: the update alone, as the anchors' writes).
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

const audit = process.env.FLOOR_AUDIT !== '0';
const PATCH = audit
  ? {
      name: 'floor-patch-audited',
      // The service's update as it runs first (src/resource/writes.ts: optimistic, no row lock; a
      // race lost answers "writeRaced", which the floor does not run again).
      text: `with o as (select t.*, t.ctid as write_version, (t.first_name is distinct from $2::text) as write_changes
                    from users t where t.id = $1::bigint and t.deleted_at is null),
                  n as (update users t set first_name = $2::text, updated_at = now() from o
                         where t.id = o.id and t.ctid = o.write_version and o.write_changes returning t.*),
                  a as (insert into audit_events (actor_token_id, actor_user_id, request_id, action, resource, record_id, changes)
                        select $3::bigint, $4::bigint, null, 'patch', 'user', n.id,
                               jsonb_build_object('firstName', jsonb_build_object('before', to_jsonb(o.first_name), 'after', to_jsonb(n.first_name)))
                          from n join o on o.id = n.id)
             select t.id, t.first_name as "firstName", false as "writeRaced" from n t
             union all select t.id, t.first_name, t.write_changes from o t where not exists (select 1 from n)`,
    }
  : {
      name: 'floor-patch',
      text: `update users set first_name = $2::text, updated_at = now() where id = $1::bigint and deleted_at is null returning id, first_name as "firstName"`,
    };

/** Sets the first name of user `id` for `token` (a row of tokenOf); the row's id and first name, or null. */
export async function patchFirstName(id, firstName, token) {
  const values = audit ? [id, firstName, token.id, token.user_id] : [id, firstName];
  return (await pool.query({ ...PATCH, values })).rows[0] ?? null;
}
