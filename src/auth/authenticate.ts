import { createHash } from 'node:crypto';
import type { FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../shared/errors.js';
import { Token } from '../tokens/token.entity.js';
import { parseScopes, type Caller } from './caller.js';

const INVALID = 'Bearer error="invalid_token"';

export const sha256 = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/** The bearer value of an Authorization header, or a 401 saying what is wrong with the header. */
export function bearerOf(header: string | undefined): string {
  if (header === undefined || header.trim() === '') {
    throw AppError.unauthorized('an Authorization: Bearer <accessToken> header is required', 'Bearer');
  }
  const m = /^Bearer +([\x21-\x7e]+) *$/i.exec(header);
  if (!m) throw AppError.unauthorized('the Authorization header must be "Bearer <accessToken>"', INVALID);
  return m[1];
}

/**
 * Finds the live token behind a bearer value: one indexed query (the sha256 of the value against
 * the unique index of live tokens, joined to its user). Valid means: not deleted, not expired, and
 * owned by a user who is not deleted. Deleting or expiring a token takes effect on the next request.
 */
export async function authenticate(em: EntityManager, header: string | undefined, client: string): Promise<Caller> {
  const bearer = bearerOf(header);
  if (bearer.length <= 1024) {
    const row = await em.findOne(
      Token,
      {
        accessTokenHash: sha256(bearer),
        deletedAt: null,
        user: { deletedAt: null },
        $or: [{ expireAt: null }, { expireAt: { $gt: new Date() } }],
      } as FilterQuery<Token>,
      { fields: ['id', 'user', 'scope', 'accessToken'], disableIdentityMap: true },
    );
    // The hash is the index key; comparing the value itself rules out any collision.
    if (row && row.accessToken === bearer) {
      return { tokenId: row.id, userId: row.user, scopes: parseScopes(row.scope), client };
    }
  }
  throw AppError.unauthorized('the access token is unknown, expired or revoked', INVALID);
}

/** The client of a request: X-Client, else the product token of User-Agent ("curl/8.5" → "curl/8.5"). */
export function clientOf(xClient: string | undefined, userAgent: string | undefined): string {
  const explicit = xClient?.trim();
  if (explicit) return explicit.slice(0, 255);
  const product = userAgent?.trim().split(/\s+/)[0] ?? '';
  return product.slice(0, 255);
}
