import { defineModule } from '../module/module.js';
import { rotateTokenKeys, tokenMigrationHooks } from './secret-rows.js';
import { tokenEvents } from './token.events.js';
import { tokenResolvers } from './token.graphql.js';
import { tokens } from './token.resource.js';
import { tokenRoutes } from './token.routes.js';
import { tokenService } from './token.service.js';

/**
 * Tokens (the seed's Token): REST /token/… and the bulk revoke, GraphQL tokens/token/viewer/…, the
 * nested User.tokens, tokenEvents; scope `token`. Their secrets are sealed with the key ring, whose
 * check runs once the migrations have (and plain tokens of an older schema are converted between two of them).
 */
export default defineModule({
  key: 'tokens',
  records: [tokens],
  scope: 'token',
  entities: [tokens],
  database: tokenMigrationHooks,
  service: (deps) => tokenService(deps.keyring, deps.scopes, deps),
  routes: (service, { basePath }) => tokenRoutes(service, basePath),
  graphql: (api) => tokenResolvers(api),
  subscriptions: (api) => tokenEvents(api),
  async rotateKeys(sql, keyring) {
    const { changed, unchanged } = await rotateTokenKeys(sql, keyring);
    return `${changed} token${changed === 1 ? '' : 's'} re-encrypted with TOKEN_KEY (key id ${keyring.current.hexId}); ${unchanged} already under it.`;
  },
});
