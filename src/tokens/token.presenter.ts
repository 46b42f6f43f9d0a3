import { isoDate } from '../shared/present.js';
import type { Token } from './token.entity.js';

export function presentToken(token: Token) {
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
