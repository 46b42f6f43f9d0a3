import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { LockMode } from '@mikro-orm/core';
import { BEARER_VALUE_PATTERN } from '../auth/authenticate.js';
import { can, parseScopes, requirePermission, type Caller, type Permission } from '../auth/caller.js';
import { compileList, type ListFields, type ListInput, type Page } from '../list/list.js';
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
  accessToken: { column: 't.access_token', kind: 'string' },
  refreshToken: { column: 't.refresh_token', kind: 'string' },
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

async function checkToken(em: EntityManager, values: Record<string, unknown>, caller: Caller): Promise<void> {
  if (typeof values.scope === 'string') checkGrantable(caller, values.scope);
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

/**
 * A token comes back only to a live owner: a token of a deleted user cannot authenticate (SPEC §2),
 * so restoring it would answer success for a credential that does not work. The owner is locked
 * FOR SHARE as checkToken does, so a concurrent delete of the user cannot slip in between.
 */
async function checkTokenRestore(em: EntityManager, token: Token): Promise<void> {
  const owner = await em.findOne(User, { id: token.user, deletedAt: null }, { fields: ['id'], lockMode: LockMode.PESSIMISTIC_READ });
  if (!owner) {
    throw AppError.conflict(`the token's user ${token.user} is deleted; restore the user first`, [
      { field: 'userID', message: `user ${token.user} is deleted` },
    ]);
  }
}

const VIEWER = `select ${TOKEN_COLUMNS} from tokens t where t.id = ? and t.deleted_at is null`;
const USER_TOKENS: NestedSource<TokenRecord> = {
  from: 'tokens t',
  columns: TOKEN_COLUMNS,
  parentColumn: 't.user_id',
  live: { sql: 't.deleted_at is null', params: [] },
  fromRow: tokenFromRow,
};

export function tokenService(orm: MikroORM) {
  const rows = readerFor(orm);
  const crud = crudService(orm, {
    resource: 'token',
    label: 'token',
    entity: Token,
    table: 'tokens',
    columns: TOKEN_COLUMNS,
    fromRow: tokenFromRow,
    fromEntity: presentToken,
    writable: TOKEN_WRITABLE,
    listFields: TOKEN_LIST_FIELDS,
    properties: { userID: 'user' },
    check: checkToken,
    // Changing a token (its accessToken, say) or revoking it is as strong as issuing its scope.
    guard: (token, caller) => checkGrantable(caller, token.scope),
    onCreate(token, caller) {
      token.client = caller.client;
      token.version = 1;
    },
    onChange(token) {
      token.version += 1;
    },
    checkRestore: checkTokenRestore,
    conflict: () =>
      AppError.conflict('a live token with this accessToken already exists', [
        { field: 'accessToken', message: 'is already in use' },
      ]),
  });
  return {
    ...crud,
    /** The calling token itself (GraphQL `viewer`): any valid token may read its own record. */
    async viewer(caller: Caller): Promise<TokenRecord> {
      const [row] = await rows(VIEWER, [caller.tokenId]);
      if (!row) throw AppError.notFound('the calling token no longer exists');
      return tokenFromRow(row as never);
    },
    /** The tokens of many users, one page each (GraphQL's User.tokens); totals only when `count`. */
    async listForUsers(caller: Caller, userIds: readonly number[], input: ListInput, count = true): Promise<Map<number, Page<TokenRecord>>> {
      requirePermission(caller, 'token:read');
      return pagesByParent(rows, USER_TOKENS, userIds, compileList(input, TOKEN_LIST_FIELDS), count);
    },
    /** Keyset pages of many users' tokens (GraphQL's nested User.tokensConnection). */
    connectionsForUsers(caller: Caller, userIds: readonly number[], input: ConnectionInput, count = true) {
      requirePermission(caller, 'token:read');
      return connectionsByParent(rows, USER_TOKENS, userIds, compileKeyset(input, TOKEN_LIST_FIELDS), count);
    },
  };
}

export type TokenService = ReturnType<typeof tokenService>;
