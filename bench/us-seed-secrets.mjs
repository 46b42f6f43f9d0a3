// Writes bench/compare/us-seed.sql adapted to secrets at rest (SPEC §9): the same users,
// applications, roles and links, and the same tokens 'tok-<user>-<n>' (scope '*', no expiry), but
// stored as the service stores them, keyed hash and ciphertext under TOKEN_KEY, since the table no
// longer has plain columns. Needs a build (dist/) and the TOKEN_KEY the service will run with
// (npm run bench:compare runs it so):
//
//   export TOKEN_KEY=$(node -e "console.log(require('crypto').randomBytes(32).toString('base64'))")
//   node bench/us-seed-secrets.mjs > /tmp/us-seed-secrets.sql
import { readFileSync } from 'node:fs';
import { Keyring } from '../dist/src/db/keyring.js';

const key = Buffer.from(process.env.TOKEN_KEY ?? '', 'base64');
if (key.length !== 32) throw new Error('set TOKEN_KEY to 32 bytes in base64');
const keyring = Keyring.of(key);
const original = readFileSync(new URL('./compare/us-seed.sql', import.meta.url), 'utf8');
const head = original.slice(0, original.indexOf('insert into tokens'));
const hex = (buffer) => `'\\x${buffer.toString('hex')}'::bytea`;
const out = [head];
const USERS = 10_000;
for (let first = 1; first <= USERS; first += 1000) {
  const rows = [];
  for (let user = first; user < first + 1000 && user <= USERS; user++) {
    for (const n of [1, 2]) {
      const access = `tok-${user}-${n}`;
      const refresh = `refresh-${user}-${n}`;
      rows.push(
        `(${user}, ${hex(keyring.hash('accessToken', access))}, ${hex(keyring.seal('accessToken', access))}, ` +
          `${hex(keyring.hash('refreshToken', refresh))}, ${hex(keyring.seal('refreshToken', refresh))}, '*', 'Bearer', null, 'bench', now(), now())`,
      );
    }
  }
  out.push(
    `insert into tokens (user_id, access_token_hmac, access_token_cipher, refresh_token_hmac, refresh_token_cipher, scope, token_type, expire_at, client, created_at, updated_at) values\n${rows.join(',\n')};\n`,
  );
}
// Statistics now, as a loaded database would have them before any benchmark: without them the
// planner takes `deleted_at is null` for a handful of rows and sorts whole tables for a page.
out.push('commit;\nanalyze;\n');
process.stdout.write(out.join('\n'));
