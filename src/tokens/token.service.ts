import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { LockMode } from '@mikro-orm/core';
import { BEARER_VALUE_PATTERN } from '../auth/authenticate.js';
import { can, parseScopes, requirePermission, type Caller, type Permission } from '../auth/caller.js';
import { compileList, type ListFields, type ListInput, type Page } from '../list/list.js';
import type { Keyring } from './secrets.js';
import { compileKeyset, type ConnectionInput } from '../list/keyset.js';
import { connectionsByParent, pagesByParent, type NestedSource } from '../list/pages.js';
import { crudService } from '../shared/crud.js';
import { AppError } from '../shared/errors.js';
import type { WritableFields } from '../shared/input.js';
import { User } from '../users/user.entity.js';
import { Token } from './token.entity.js';
import { readerFor } from '../db/reads.js';
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
const OWN_SCOPE = /^(\*|(user|token|application|role):(read|write|\*))$/;

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

const LIVE_UNDER_PREVIOUS_KEY = 'select id from tokens where access_token_hmac = ? and deleted_at is null and id <> ? limit 1';

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
    const [taken] = await em.execute(LIVE_UNDER_PREVIOUS_KEY, [keyring.previous.hash('accessToken', values.accessToken), record?.id ?? 0]);
    if (taken) throw conflict();
  }
  if (values.userID !== undefined) {
    // FOR SHARE: a concurrent delete of the owner (FOR UPDATE, then its tokens) waits for this
    // write, or this write waits for it and then finds the owner deleted; never a live token of a
    // deleted user.
    const owner = await em.findOne(
      User,
      { id: values.userID as number, deletedAt: null },
      { fields: ['id'], lockMode: LockMode.PESSIMISTIC_READ },
    );
    if (!owner) throw AppError.invalid([{ field: 'userID', message: `no user with id ${values.userID}` }]);
  }
}

const VIEWER = `select ${TOKEN_COLUMNS} from tokens t where t.id = ? and t.deleted_at is null`;
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
    conflict,
  });
  return {
    ...crud,
    /** The keys this service seals and matches secrets with. */
    keyring,
    /** The keyed hashes of an accessToken under every key held (for lookups by value). */
    accessTokenHashes: (accessToken: string) => keyring.hashes('accessToken', accessToken),
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
