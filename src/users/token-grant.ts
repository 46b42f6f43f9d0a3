import type { Caller } from '../auth/caller.js';
import type { ScopeVocabulary } from '../auth/scopes.js';
import type { Transaction } from '../db/sql.js';
import { AppError } from '../errors.js';

/** How many token ids a refusal names at most (a user may hold thousands of tokens). */
const NAMED_AT_MOST = 20;

/**
 * The user delete's side of the grant rule (src/auth/scopes.ts): a delete of user `userId` ends its live tokens, so every
 * one of them must be a token the caller could have granted; else a 403 naming them (by id, never
 * by value) and the scope a caller would need, and nothing changes. Runs in the delete's
 * transaction once the user's row is locked FOR UPDATE (so no token can be created for or moved to
 * the user meanwhile: those writes lock it FOR SHARE); the tokens are locked too, so that none is
 * given a wider scope between this check and the delete. A caller holding `*` could have granted
 * anything: nothing is read.
 */
export async function checkUserTokensGrantable(scopes: ScopeVocabulary, tx: Transaction, caller: Caller, userId: number): Promise<void> {
  if (caller.scopes.has('*')) return;
  const live = await tx.rows<{ id: number; scope: string }>('select id, scope from tokens where user_id = ? and deleted_at is null order by id for update', [
    userId,
  ]);
  const refused = live.map((token) => ({ id: token.id, missing: scopes.ungrantableWords(caller, token.scope) })).filter((t) => t.missing.length > 0);
  if (refused.length === 0) return;
  const words = [...new Set(refused.flatMap((t) => t.missing))].sort();
  // `*` alone grants every other word.
  const needed = words.includes('*') ? '*' : words.join(' ');
  const named = refused
    .slice(0, NAMED_AT_MOST)
    .map((t) => `${t.id} (${t.missing.map((w) => `"${w}"`).join(', ')})`)
    .join(', ');
  const more = refused.length > NAMED_AT_MOST ? ` and ${refused.length - NAMED_AT_MOST} more` : '';
  const message =
    `deleting user ${userId} would revoke ${refused.length === 1 ? 'token' : 'tokens'} ${named}${more}, with scopes this token cannot grant; ` +
    `a token holding "${needed}" may delete the user`;
  throw new AppError('FORBIDDEN', message, [{ field: 'id', message: `user ${userId} holds tokens this token could not have granted` }], { permission: needed });
}
