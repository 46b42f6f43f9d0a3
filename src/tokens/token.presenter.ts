import { wireDate, wireInt } from '../db/reads.js';
import { isoDate } from '../shared/present.js';
import type { Keyring } from './secrets.js';
import type { Token } from './token.entity.js';

/** The token on the wire. */
export interface TokenRecord {
  id: number;
  userID: number;
  accessToken: string;
  refreshToken: string;
  scope: string;
  code: string;
  codeChallenge: string | null;
  tokenType: string;
  expireAt: string | null;
  client: string;
  version: string;
  createdAt: string | null;
  updatedAt: string | null;
}

/** The columns a read selects (alias `t`): the secrets as ciphertexts, opened by `tokenFromRow`. */
export const TOKEN_COLUMNS =
  't.id, t.user_id, t.access_token_cipher, t.refresh_token_cipher, t.scope, t.code, t.code_challenge, t.token_type, t.expire_at, t.client, t.version, t.created_at, t.updated_at';

interface TokenRow {
  id: string;
  user_id: string;
  access_token_cipher: Buffer;
  refresh_token_cipher: Buffer;
  scope: string;
  code: string;
  code_challenge: string | null;
  token_type: string;
  expire_at: string | null;
  client: string;
  version: number;
  created_at: string;
  updated_at: string;
}

/**
 * The wire record of a row of the read path (TOKEN_COLUMNS), its secrets decrypted with the
 * service's keys. A secret under a key the service does not hold cannot be answered: the start-up
 * check (checkTokenKeys) keeps such rows out, and one that appears anyway (another instance with
 * another key) fails the request with a 500 rather than answering a made-up value.
 */
export const tokenFromRow = (keyring: Keyring) => (row: TokenRow): TokenRecord => ({
  id: wireInt(row.id),
  userID: wireInt(row.user_id),
  accessToken: keyring.open('accessToken', row.access_token_cipher),
  refreshToken: keyring.open('refreshToken', row.refresh_token_cipher),
  scope: row.scope,
  code: row.code,
  codeChallenge: row.code_challenge,
  tokenType: row.token_type,
  expireAt: wireDate(row.expire_at),
  client: row.client,
  version: String(row.version),
  createdAt: wireDate(row.created_at),
  updatedAt: wireDate(row.updated_at),
});

/** An entity of the write path. */
export function presentToken(token: Token): TokenRecord {
  return {
    id: token.id,
    userID: token.user,
    accessToken: token.accessToken,
    refreshToken: token.refreshToken,
    scope: token.scope,
    code: token.code,
    codeChallenge: token.codeChallenge,
    tokenType: token.tokenType,
    expireAt: isoDate(token.expireAt),
    client: token.client,
    version: String(token.version),
    createdAt: isoDate(token.createdAt),
    updatedAt: isoDate(token.updatedAt),
  };
}
