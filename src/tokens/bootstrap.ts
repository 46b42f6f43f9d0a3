import { randomBytes } from 'node:crypto';
import { SYSTEM_CALLER } from '../auth/caller.js';
import type { Sql } from '../db/sql.js';
import type { UserService } from '../users/user.service.js';
import type { TokenService } from './token.service.js';

/** What the first token is made with: the users' and the tokens' services. */
interface Services {
  users: Pick<UserService, 'create'>;
  tokens: TokenService;
}

export const newAccessToken = () => randomBytes(32).toString('base64url');

const BOOTSTRAP_USER = { ref: 0, outKey: 'bootstrap', firstName: 'Bootstrap', lastName: 'Administrator', avatarUrl: null, photoUrl: null, status: 0 };

async function bootstrapUserId(sql: Sql, services: Services): Promise<number> {
  const [existing] = await sql.rows<{ id: number }>("select id from users where out_key = 'bootstrap' and deleted_at is null order by id limit 1");
  return existing?.id ?? (await services.users.create(SYSTEM_CALLER, sql, BOOTSTRAP_USER)).id;
}

/** A token's values as a create writes them: every writable field, defaults filled in. */
const tokenValues = (userID: number, accessToken: string) => ({
  userID,
  accessToken,
  refreshToken: '',
  scope: '*',
  code: '',
  codeChallenge: null,
  tokenType: '',
  expireAt: null,
});

/**
 * Makes sure the service can be used at all (docs/operations.md):
 * - with BOOTSTRAP_TOKEN, a live, unexpiring token with that value and scope `*` exists;
 * - without it, on a database that has never had a token, a first one is created and returned so
 *   that the caller can print it once.
 * Returns the newly created access token, if one was created without BOOTSTRAP_TOKEN.
 */
export async function ensureFirstToken(sql: Sql, services: Services, bootstrapToken: string | undefined): Promise<string | null> {
  if (bootstrapToken) {
    const hashes = services.tokens.accessTokenHashes(bootstrapToken);
    const [token] = await sql.rows<{ id: number; scope: string; expire_at: string | null; owner_live: boolean }>(
      `select t.id, t.scope, t.expire_at, u.deleted_at is null as owner_live
         from tokens t join users u on u.id = t.user_id
        where t.access_token_hmac in (${hashes.map(() => '?').join(', ')}) and t.deleted_at is null`,
      hashes,
    );
    if (!token || !token.owner_live) {
      if (token) await services.tokens.destroy(SYSTEM_CALLER, sql, token.id);
      await services.tokens.create(SYSTEM_CALLER, sql, tokenValues(await bootstrapUserId(sql, services), bootstrapToken));
    } else if (token.scope !== '*' || token.expire_at !== null) {
      await services.tokens.patch(SYSTEM_CALLER, sql, token.id, { scope: '*', expireAt: null });
    }
    return null;
  }
  const [{ any }] = await sql.rows<{ any: boolean }>('select exists (select 1 from tokens) as any');
  if (any) return null;
  const accessToken = newAccessToken();
  await services.tokens.create(SYSTEM_CALLER, sql, tokenValues(await bootstrapUserId(sql, services), accessToken));
  return accessToken;
}
