import { randomBytes } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Services } from '../services.js';
import { Token } from '../tokens/token.entity.js';
import { User } from '../users/user.entity.js';
import type { Caller } from './caller.js';

/** The identity of the service's own start-up and command-line tasks: every permission. */
export const SYSTEM_CALLER: Caller = { tokenId: 0, userId: 0, scopes: new Set(['*']), client: 'user-token-service' };

export const newAccessToken = () => randomBytes(32).toString('base64url');

const BOOTSTRAP_USER = { firstName: 'Bootstrap', lastName: 'Administrator', outKey: 'bootstrap' };

async function bootstrapUserId(orm: MikroORM, services: Services): Promise<number> {
  const existing = await orm.em.fork().findOne(User, { outKey: BOOTSTRAP_USER.outKey, deletedAt: null }, { fields: ['id'] });
  return existing?.id ?? (await services.users.create(SYSTEM_CALLER, BOOTSTRAP_USER)).id;
}

/**
 * Makes sure the service can be used at all (SPEC §1):
 * - with BOOTSTRAP_TOKEN, a live, unexpiring token with that value and scope `*` exists;
 * - without it, on a database that has never had a token, a first one is created and returned so
 *   that the caller can print it once.
 * Returns the newly created access token, if one was created without BOOTSTRAP_TOKEN.
 */
export async function ensureFirstToken(orm: MikroORM, services: Services, bootstrapToken: string | undefined): Promise<string | null> {
  const em = orm.em.fork();
  if (bootstrapToken) {
    const token = await em.findOne(Token, { accessTokenHmac: { $in: services.tokens.accessTokenHashes(bootstrapToken) }, deletedAt: null }, { populate: ['user'] as never });
    const owner = token ? await em.count(User, { id: token.user, deletedAt: null }) : 0;
    if (!token || owner === 0) {
      if (token) await services.tokens.destroy(SYSTEM_CALLER, token.id);
      await services.tokens.create(SYSTEM_CALLER, { userID: await bootstrapUserId(orm, services), accessToken: bootstrapToken, scope: '*' });
    } else if (token.scope !== '*' || token.expireAt !== null) {
      await services.tokens.patch(SYSTEM_CALLER, token.id, { scope: '*', expireAt: null });
    }
    return null;
  }
  if ((await em.count(Token, {})) > 0) return null;
  const accessToken = newAccessToken();
  await services.tokens.create(SYSTEM_CALLER, { userID: await bootstrapUserId(orm, services), accessToken, scope: '*' });
  return accessToken;
}
