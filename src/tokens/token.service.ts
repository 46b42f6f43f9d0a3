import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { LockMode } from '@mikro-orm/core';
import { BEARER_VALUE_PATTERN, liveTokenByValue } from '../auth/authenticate.js';
import { can, parseScopes, requirePermission, type Caller, type Permission } from '../auth/caller.js';
import { andAll, compileList, compileQuery, type ListFields, type ListInput, type Page } from '../list/list.js';
import type { Keyring } from './secrets.js';
import { compileKeyset, type ConnectionInput } from '../list/keyset.js';
import { connectionsByParent, pagesByParent, type NestedSource } from '../list/pages.js';
import { crudService } from '../shared/crud.js';
import { AppError } from '../shared/errors.js';
import type { WritableFields } from '../shared/input.js';
import { User } from '../users/user.entity.js';
import { Token } from './token.entity.js';
import { idArray, readerFor, wireDate } from '../db/reads.js';
import { transaction } from '../db/transaction.js';
import { appendAudit, changesOf } from '../audit/audit.service.js';
import { presentToken, tokenFromRow, TOKEN_COLUMNS, type TokenRecord } from './token.presenter.js';

/** An accessToken travels in an Authorization header: anything else could never be used. */
const SENDABLE_AS_BEARER = { test: BEARER_VALUE_PATTERN, message: 'must be visible ASCII characters without spaces (it is sent in an Authorization header)' };

export const TOKEN_WRITABLE: WritableFields = {
  userID: { kind: 'id', required: true },
  accessToken: { kind: 'string', max: 1024, required: true, nonEmpty: true, pattern: SENDABLE_AS_BEARER },
  refreshToken: { kind: 'string', max: 1024 },
  scope: { kind: 'string', max: 255 },
  code: { kind: 'string', max: 1024 },
  codeChallenge: { kind: 'string', max: 1024, nullable: true },
  tokenType: { kind: 'string', max: 255 },
  expireAt: { kind: 'date', nullable: true },
};

export const TOKEN_LIST_FIELDS: ListFields = {
  id: { column: 't.id', kind: 'id' },
  userID: { column: 't.user_id', kind: 'id' },
  // Matched through their keyed hashes (SPEC §9): eq, ne, in, nin only; see tokenListFields.
  accessToken: { column: 't.access_token_hmac', kind: 'secret' },
  refreshToken: { column: 't.refresh_token_hmac', kind: 'secret' },
  scope: { column: 't.scope', kind: 'string' },
  code: { column: 't.code', kind: 'string' },
  codeChallenge: { column: 't.code_challenge', kind: 'string', nullable: true },
  tokenType: { column: 't.token_type', kind: 'string' },
  expireAt: { column: 't.expire_at', kind: 'date', nullable: true },
  client: { column: 't.client', kind: 'string' },
  version: { column: 't.version', kind: 'revision' },
  createdAt: { column: 't.created_at', kind: 'date' },
  updatedAt: { column: 't.updated_at', kind: 'date' },
};

/** TOKEN_LIST_FIELDS with the secret fields matched through the keyed hashes of a key ring. */
export function tokenListFields(keyring: Keyring): ListFields {
  return {
    ...TOKEN_LIST_FIELDS,
    accessToken: { ...TOKEN_LIST_FIELDS.accessToken, match: (value) => keyring.hashes('accessToken', value) },
    refreshToken: { ...TOKEN_LIST_FIELDS.refreshToken, match: (value) => keyring.hashes('refreshToken', value) },
  };
}

/** Writes a token's in-memory secrets into its stored forms under the current key. */
function seal(token: Token, keyring: Keyring): void {
  token.accessTokenHmac = keyring.hash('accessToken', token.accessToken);
  token.accessTokenCipher = keyring.seal('accessToken', token.accessToken);
  token.refreshTokenHmac = keyring.hash('refreshToken', token.refreshToken);
  token.refreshTokenCipher = keyring.seal('refreshToken', token.refreshToken);
}

/** The scopes this service itself understands; other scope words pass through untouched. */
const OWN_SCOPE = /^(\*|(user|token|application|role):(read|write|\*)|audit:(read|\*))$/;

/**
 * A token may only carry this service's permissions that its creator holds itself, and only such
 * tokens may be changed or revoked: `token:write` lets a caller manage tokens, not raise its own
 * rights (for instance by giving a `*` token an accessToken of its choosing).
 */
function checkGrantable(caller: Caller, scope: string): void {
  for (const word of parseScopes(scope)) {
    if (!OWN_SCOPE.test(word)) continue;
    const granted =
      word === '*'
        ? caller.scopes.has('*')
        : word.endsWith(':*')
          ? caller.scopes.has('*') || caller.scopes.has(word)
          : can(caller, word as Permission);
    if (!granted) {
      throw AppError.forbidden(word, `this token cannot grant, change or revoke the scope "${word}" because it does not hold it`);
    }
  }
}

/** Whether a live token other than `exceptId` holds one of these accessToken hashes. */
async function liveTwin(em: EntityManager, hashes: readonly Buffer[], exceptId: number): Promise<boolean> {
  const [taken] = await em.execute(
    `select 1 as taken from tokens where access_token_hmac in (${hashes.map(() => '?').join(', ')}) and deleted_at is null and id <> ? limit 1`,
    [...hashes, exceptId],
  );
  return Boolean(taken);
}

/**
 * Whether the user is live, locked FOR SHARE: a concurrent delete of the owner (FOR UPDATE, then
 * its tokens) waits for this write, or this write waits for it and then finds the owner deleted;
 * never a live token of a deleted user.
 */
async function liveOwner(em: EntityManager, userId: number): Promise<boolean> {
  return (await em.findOne(User, { id: userId, deletedAt: null }, { fields: ['id'], lockMode: LockMode.PESSIMISTIC_READ })) !== null;
}

async function checkToken(
  em: EntityManager,
  values: Record<string, unknown>,
  caller: Caller,
  keyring: Keyring,
  record: Token | undefined,
  conflict: () => AppError,
): Promise<void> {
  if (typeof values.scope === 'string') checkGrantable(caller, values.scope);
  // The unique index compares hashes under the current key. During a rotation a live token may
  // still carry its hash under TOKEN_KEY_PREVIOUS; the same value under the new key would slip past
  // the index, so that one is looked for here.
  if (keyring.previous && typeof values.accessToken === 'string') {
    if (await liveTwin(em, [keyring.previous.hash('accessToken', values.accessToken)], record?.id ?? 0)) throw conflict();
  }
  if (values.userID !== undefined && !(await liveOwner(em, values.userID as number))) {
    throw AppError.invalid([{ field: 'userID', message: `no user with id ${values.userID}` }]);
  }
}

/**
 * A token comes back only to a live owner: a token of a deleted user cannot authenticate (SPEC §2),
 * so restoring it would answer success for a credential that does not work. The owner is locked
 * FOR SHARE as checkToken does, so a concurrent delete of the user cannot slip in between.
 */
async function checkTokenRestore(em: EntityManager, token: Token, keyring: Keyring, conflict: () => AppError): Promise<void> {
  if (!(await liveOwner(em, token.user))) {
    throw AppError.conflict(`the token's user ${token.user} is deleted; restore the user first`, [
      { field: 'userID', message: `user ${token.user} is deleted` },
    ]);
  }
  // During a rotation the restored row's hash and a live twin's may be under different keys, which
  // the unique index cannot compare: look for the value under every key held.
  if (keyring.previous && (await liveTwin(em, keyring.hashes('accessToken', token.accessToken), token.id))) throw conflict();
}

const VIEWER = `select ${TOKEN_COLUMNS} from tokens t where t.id = ? and t.deleted_at is null`;

/** RFC 7662 §2.2: what an introspection answers about a token. */
export type Introspection =
  | { active: false }
  | { active: true; scope: string; client_id: string; username: string; sub: string; exp?: number; iat: number; token_type: string };

const INTROSPECTED = `select t.scope, t.client, t.token_type, t.expire_at, t.created_at, u.first_name, u.last_name
    from tokens t join users u on u.id = t.user_id where t.id = ?`;

/** A timestamptz as PostgreSQL writes it in text, in seconds since the epoch (RFC 7662's NumericDate). */
const epochSeconds = (text: string) => Math.floor(Date.parse(wireDate(text)!) / 1000);

/** The result of a bulk revoke: tokens revoked, and matching tokens left alone (not grantable by the caller). */
export interface BulkRevocation {
  revoked: number;
  skipped: number;
}

/** Whether the caller could have granted this scope (and so may change or revoke its token). */
const grantable = (caller: Caller, scope: string) => {
  try {
    checkGrantable(caller, scope);
    return true;
  } catch {
    return false;
  }
};
const USER_TOKENS: Omit<NestedSource<TokenRecord>, 'fromRow'> = {
  from: 'tokens t',
  columns: TOKEN_COLUMNS,
  parentColumn: 't.user_id',
  live: { sql: 't.deleted_at is null', params: [] },
};

export function tokenService(orm: MikroORM, keyring: Keyring) {
  const rows = readerFor(orm);
  const fromRow = tokenFromRow(keyring);
  const listFields = tokenListFields(keyring);
  const conflict = () =>
    AppError.conflict('a live token with this accessToken already exists', [{ field: 'accessToken', message: 'is already in use' }]);
  const userTokens: NestedSource<TokenRecord> = { ...USER_TOKENS, fromRow };
  const crud = crudService(orm, {
    resource: 'token',
    label: 'token',
    entity: Token,
    table: 'tokens',
    columns: TOKEN_COLUMNS,
    fromRow,
    fromEntity: presentToken,
    writable: TOKEN_WRITABLE,
    listFields,
    properties: { userID: 'user' },
    check: (em, values, caller, record) => checkToken(em, values, caller, keyring, record, conflict),
    loaded(token) {
      token.accessToken = keyring.open('accessToken', token.accessTokenCipher);
      token.refreshToken = keyring.open('refreshToken', token.refreshTokenCipher);
    },
    // Changing a token (its accessToken, say) or revoking it is as strong as issuing its scope.
    guard: (token, caller) => checkGrantable(caller, token.scope),
    onCreate(token, caller) {
      token.client = caller.client;
      token.version = 1;
      seal(token, keyring);
    },
    onChange(token) {
      token.version += 1;
      // Sealed afresh (a new nonce, and the current key) whenever the record changes.
      seal(token, keyring);
    },
    checkRestore: (em, token) => checkTokenRestore(em, token, keyring, conflict),
    conflict,
  });
  return {
    ...crud,
    /** The keyed hashes of an accessToken under every key held (for lookups by value). */
    accessTokenHashes: (accessToken: string) => keyring.hashes('accessToken', accessToken),

    /**
     * RFC 7662 introspection for a caller holding token:read: active with the token's details when
     * it is live (not deleted or expired, its user not deleted), `{active: false}` for anything
     * else, unknown values included; never a 404, so nothing tells "never existed" apart.
     */
    async introspect(caller: Caller, value: string): Promise<Introspection> {
      requirePermission(caller, 'token:read');
      const live = await liveTokenByValue({ orm, keyring }, value);
      if (!live) return { active: false };
      const [row] = await rows<Record<string, string | null>>(INTROSPECTED, [live.tokenId]);
      if (!row) return { active: false };
      return {
        active: true,
        scope: row.scope ?? '',
        client_id: row.client ?? '',
        username: `${row.first_name ?? ''} ${row.last_name ?? ''}`.trim(),
        sub: String(live.userId),
        ...(row.expire_at ? { exp: epochSeconds(row.expire_at) } : {}),
        iat: epochSeconds(row.created_at!),
        token_type: row.token_type || 'Bearer',
      };
    },

    /**
     * RFC 7009 revocation by value: the token is deleted if it is live; an unknown or dead one is
     * no error (the caller's goal, a token that no longer works, holds). A caller may always revoke
     * its own token; any other needs token:write and the right to grant the token's scope, like a
     * delete. Without token:write, naming another token is a 403 whether or not it exists.
     */
    async revokeByValue(caller: Caller, value: string): Promise<number> {
      const live = await liveTokenByValue({ orm, keyring }, value);
      if (live?.tokenId === caller.tokenId) {
        // Its own token: no permission needed (RFC 7009 lets a client give up its own credential).
        const now = new Date();
        return transaction(orm, async (em) => {
          const done = await em.execute<{ id: string }[]>('update tokens set deleted_at = ?, updated_at = ? where id = ? and deleted_at is null returning id', [now, now, live.tokenId]);
          await appendAudit(em, caller, done.map(() => ({ action: 'revoke' as const, resource: 'token', recordID: live.tokenId, changes: changesOf({ deletedAt: null }, { deletedAt: now }) })));
          return done.length;
        });
      }
      if (!can(caller, 'token:write')) {
        throw AppError.forbidden('token:write', 'without the "token:write" permission a token may revoke only itself');
      }
      if (!live) return 0;
      try {
        await crud.destroy(caller, live.tokenId, 'revoke');
        return 1;
      } catch (err) {
        // Deleted between the lookup and the delete: revoked all the same.
        if (err instanceof AppError && err.error === 'NOT_FOUND') return 0;
        throw err;
      }
    },

    /**
     * Bulk revoke (DELETE /token/?filter=…, GraphQL destroyTokens): soft-deletes every live token
     * matching the filter that the caller could have granted; the others are left alone and
     * counted as skipped. A filter that selects everything (absent, blank, `{}`) is refused: "all
     * tokens" is never what a missing filter means.
     */
    async destroyMatching(caller: Caller, filter: unknown): Promise<BulkRevocation> {
      requirePermission(caller, 'token:write');
      const blank = filter === undefined || filter === null || (typeof filter === 'string' && filter.trim() === '');
      const { where } = blank ? { where: null } : compileQuery({ filter }, listFields);
      if (!where) throw AppError.invalid([{ field: 'filter', message: 'is required: a bulk revoke never means every token' }]);
      return transaction(orm, async (em) => {
        const live = andAll({ sql: 't.deleted_at is null', params: [] }, where)!;
        const matched = await em.execute<{ id: string; scope: string }[]>(`select t.id, t.scope from tokens t where ${live.sql} for update`, live.params);
        const ids = matched.filter((t) => grantable(caller, t.scope)).map((t) => Number(t.id));
        if (ids.length) {
          const now = new Date();
          await em.execute('update tokens set deleted_at = ?, updated_at = ? where id = any(?::bigint[])', [now, now, idArray(ids)]);
          const changes = changesOf({ deletedAt: null }, { deletedAt: now });
          await appendAudit(em, caller, ids.map((recordID) => ({ action: 'revoke' as const, resource: 'token', recordID, changes })));
        }
        return { revoked: ids.length, skipped: matched.length - ids.length };
      });
    },

    /** The calling token itself (GraphQL `viewer`): any valid token may read its own record. */
    async viewer(caller: Caller): Promise<TokenRecord> {
      const [row] = await rows(VIEWER, [caller.tokenId]);
      if (!row) throw AppError.notFound('the calling token no longer exists');
      return fromRow(row as never);
    },
    /** The tokens of many users, one page each (GraphQL's User.tokens); totals only when `count`. */
    async listForUsers(caller: Caller, userIds: readonly number[], input: ListInput, count = true): Promise<Map<number, Page<TokenRecord>>> {
      requirePermission(caller, 'token:read');
      return pagesByParent(rows, userTokens, userIds, compileList(input, listFields), count);
    },
    /** Keyset pages of many users' tokens (GraphQL's nested User.tokensConnection). */
    connectionsForUsers(caller: Caller, userIds: readonly number[], input: ConnectionInput, count = true) {
      requirePermission(caller, 'token:read');
      return connectionsByParent(rows, userTokens, userIds, compileKeyset(input, listFields), count);
    },
  };
}

export type TokenService = ReturnType<typeof tokenService>;
