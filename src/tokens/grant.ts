import { can, parseScopes, type Caller, type Permission } from '../auth/caller.js';
import type { Transaction } from '../db/sql.js';
import { AppError } from '../errors.js';

/**
 * The grant rule (docs/rest.md#permissions): a token may only carry this service's permissions that its
 * creator holds itself, and only such tokens may be changed, revoked or ended in any other way (the
 * delete of their user): `token:write` or `user:write` lets a caller manage records, not end a
 * credential stronger than its own.
 */

/** The scopes this service itself understands; other scope words pass through untouched. */
const OWN_SCOPE = /^(\*|(user|token|application|role|webhook):(read|write|\*)|audit:(read|\*))$/;

/** The words of `scope` this service understands that the caller could not grant (none: it could have granted the token). */
export function ungrantableWords(caller: Caller, scope: string): string[] {
  if (caller.scopes.has('*')) return [];
  const missing: string[] = [];
  for (const word of parseScopes(scope)) {
    if (!OWN_SCOPE.test(word)) continue;
    const granted = word === '*' ? false : word.endsWith(':*') ? caller.scopes.has(word) : can(caller, word as Permission);
    if (!granted) missing.push(word);
  }
  return missing;
}

/** Refuses (403) a scope the caller could not grant: naming the first word it lacks. */
export function checkGrantable(caller: Caller, scope: string): void {
  const [word] = ungrantableWords(caller, scope);
  if (word !== undefined) throw AppError.forbidden(word, `this token cannot grant, change or revoke the scope "${word}" because it does not hold it`);
}

/** Whether the caller could have granted this scope (and so may change or revoke its token). */
export const grantable = (caller: Caller, scope: string) => ungrantableWords(caller, scope).length === 0;

/** How many token ids a refusal names at most (a user may hold thousands of tokens). */
const NAMED_AT_MOST = 20;

/**
 * The user delete's side of the grant rule: a delete of user `userId` ends its live tokens, so every
 * one of them must be a token the caller could have granted; else a 403 naming them (by id, never
 * by value) and the scope a caller would need, and nothing changes. Runs in the delete's
 * transaction once the user's row is locked FOR UPDATE (so no token can be created for or moved to
 * the user meanwhile: those writes lock it FOR SHARE); the tokens are locked too, so that none is
 * given a wider scope between this check and the delete. A caller holding `*` could have granted
 * anything: nothing is read.
 */
export async function checkUserTokensGrantable(tx: Transaction, caller: Caller, userId: number): Promise<void> {
  if (caller.scopes.has('*')) return;
  const live = await tx.rows<{ id: number; scope: string }>('select id, scope from tokens where user_id = ? and deleted_at is null order by id for update', [
    userId,
  ]);
  const refused = live.map((token) => ({ id: token.id, missing: ungrantableWords(caller, token.scope) })).filter((t) => t.missing.length > 0);
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
