import { liveTokenByValue } from '../auth/authenticate.js';
import { can, requirePermission, type Caller } from '../auth/caller.js';
import type { Sql, Transaction } from '../db/sql.js';
import { idArray } from '../db/wire.js';
import { AppError } from '../errors.js';
import type { CompiledKeyset } from '../list/keyset.js';
import { andAll, type CompiledList, type ListFields, type Page, type SqlFragment } from '../list/list.js';
import { connectionsByParent, pagesByParent, type NestedSource } from '../list/pages.js';
import { recordService, type RecordDeps } from '../resource/service.js';
import { auditStatement, plainColumns, type ColumnValue, type Encode } from '../resource/writes.js';
import type { ScopeVocabulary } from '../auth/scopes.js';
import type { Keyring, SecretField } from '../db/keyring.js';
import { tokens, type TokenRecord } from './token.resource.js';

/** Whether a live token other than `exceptId` holds one of these accessToken hashes. */
async function liveTwin(tx: Transaction, hashes: readonly Buffer[], exceptId: number): Promise<boolean> {
  const [taken] = await tx.rows(
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
async function liveOwner(tx: Transaction, userId: number): Promise<boolean> {
  return (await tx.rows('select id from users where id = ? and deleted_at is null for share', [userId])).length > 0;
}

/** A live token as introspection tells of it (src/oauth/ presents it as RFC 7662 §2.2 has it). */
export interface IntrospectedToken {
  userId: number;
  scope: string | null;
  client: string | null;
  tokenType: string | null;
  /** The wire date it expires at; null: never. */
  expireAt: string | null;
  createdAt: string;
  user: { firstName: string | null; lastName: string | null };
}

const INTROSPECTED = `select t.scope, t.client, t.token_type as "tokenType", t.expire_at as "expireAt", t.created_at as "createdAt",
    u.first_name as "firstName", u.last_name as "lastName"
    from tokens t join users u on u.id = t.user_id where t.id = ?`;

/** The result of a bulk revoke: tokens revoked, and matching tokens left alone (not grantable by the caller). */
export interface BulkRevocation {
  revoked: number;
  skipped: number;
}

const SECRETS = ['accessToken', 'refreshToken'] as const satisfies readonly SecretField[];

/** The list language's token fields, the secrets matched through the keyed hashes of a key ring (eq, ne, in, nin). */
export function tokenListFields(keyring: Keyring): ListFields {
  const fields = tokens.listFields;
  return {
    ...fields,
    accessToken: { ...fields.accessToken, match: (value) => keyring.hashes('accessToken', value) },
    refreshToken: { ...fields.refreshToken, match: (value) => keyring.hashes('refreshToken', value) },
  };
}

/**
 * The record operations of tokens: their secrets sealed and opened with the key ring, `client` set
 * from the caller, and the rules of the grant (scope), the owner (a live user) and the unique
 * accessToken, under every key held during a rotation.
 */
function tokenRecords(keyring: Keyring, scopes: ScopeVocabulary, deps: RecordDeps) {
  const conflict = () => AppError.conflict('a live token with this accessToken already exists', [{ field: 'accessToken', message: 'is already in use' }]);

  /**
   * A token read from its row: the secrets opened with the service's keys. A secret under a key the
   * service does not hold cannot be answered: the start-up check (checkTokenKeys) keeps such rows
   * out, and one that appears anyway (another instance with another key) fails the request with a
   * 500 rather than answering a made-up value.
   */
  const fromRow = (row: Record<string, unknown>): TokenRecord => {
    const record = row as unknown as TokenRecord;
    record.accessToken = keyring.open('accessToken', row.accessToken as Buffer);
    record.refreshToken = keyring.open('refreshToken', row.refreshToken as Buffer);
    return record;
  };

  /** A secret is stored as its keyed hash and its ciphertext under the current key, never as it is. */
  const encode: Encode = (name, field, value) => {
    if (field.kind !== 'secret') return plainColumns(name, field, value);
    const secret = name as SecretField;
    return [
      { column: field.secretColumns!.hmac, type: 'bytea', value: keyring.hash(secret, value as string) },
      { column: field.secretColumns!.cipher, type: 'bytea', value: keyring.seal(secret, value as string) },
    ];
  };

  const records = recordService(
    tokens,
    {
      listFields: tokenListFields(keyring),
      fromRow,
      encode,
      conflict,
      onCreate: (caller): ColumnValue[] => [{ column: 'client', type: 'text', value: caller.client }],
      // Sealed afresh (a new nonce, the current key) whenever the record changes.
      onChange: (current) => SECRETS.flatMap((name) => encode(name, tokens.fields[name], current[name])),
      checks: {
        // Changing a token (its accessToken, say) or revoking it is as strong as issuing its scope.
        guard: (current, caller) => scopes.checkGrantable(caller, current.scope),
        async write(tx, caller, values, current) {
          if (values.scope !== undefined) scopes.checkGrantable(caller, values.scope);
          // The unique index compares hashes under the current key. During a rotation a live token may
          // still carry its hash under TOKEN_KEY_PREVIOUS; the same value under the new key would slip
          // past the index, so that one is looked for here.
          if (keyring.previous && values.accessToken !== undefined) {
            if (await liveTwin(tx, [keyring.previous.hash('accessToken', values.accessToken)], current?.id ?? 0)) throw conflict();
          }
          if (values.userID !== undefined && !(await liveOwner(tx, values.userID))) {
            throw AppError.invalid([{ field: 'userID', message: `no user with id ${values.userID}` }]);
          }
        },
        /**
         * A token comes back only to a live owner: a token of a deleted user cannot authenticate (
         * docs/rest.md#permissions), so restoring it would answer success for a credential that does not work. During a
         * rotation the restored row's hash and a live twin's may be under different keys, which the
         * unique index cannot compare: the value is looked for under every key held.
         */
        async restore(tx, _caller, current) {
          if (!(await liveOwner(tx, current.userID))) {
            throw AppError.conflict(`the token's user ${current.userID} is deleted; restore the user first`, [
              { field: 'userID', message: `user ${current.userID} is deleted` },
            ]);
          }
          if (keyring.previous && (await liveTwin(tx, keyring.hashes('accessToken', current.accessToken), current.id))) throw conflict();
        },
      },
    },
    deps,
  );

  return { records, fromRow };
}

export function tokenService(keyring: Keyring, scopes: ScopeVocabulary, deps: RecordDeps) {
  const { records, fromRow } = tokenRecords(keyring, scopes, deps);
  const userTokens: NestedSource<TokenRecord> = {
    from: 'tokens t',
    columns: tokens.columns,
    parentColumn: 't.user_id',
    live: { sql: 't.deleted_at is null', params: [] },
    fromRow,
  };

  /** Each operation's permission (viewer and revokeByValue: any valid token, for itself). */
  const { read, write } = tokens.permissions;
  const permissions = { ...records.permissions, introspect: read, destroyMatching: write, listForUsers: read } as const;

  return {
    ...records,
    permissions,
    /** The keyed hashes of an accessToken under every key held (for lookups by value). */
    accessTokenHashes: (accessToken: string) => keyring.hashes('accessToken', accessToken),

    /**
     * Introspection (RFC 7662) for a caller holding token:read: the token with this value when it
     * is live (not deleted or expired, its user not deleted), else null, unknown values included;
     * never a 404, so nothing tells "never existed" apart.
     */
    async introspect(caller: Caller, sql: Sql, value: string): Promise<IntrospectedToken | null> {
      requirePermission(caller, permissions.introspect);
      const live = await liveTokenByValue({ sql, keyring }, value);
      if (!live) return null;
      const [row] = await sql.rows<Omit<IntrospectedToken, 'userId' | 'user'> & IntrospectedToken['user']>(INTROSPECTED, [live.tokenId]);
      if (!row) return null;
      const { firstName, lastName, ...token } = row;
      return { userId: live.userId, ...token, user: { firstName, lastName } };
    },

    /**
     * RFC 7009 revocation by value: the token is deleted if it is live; an unknown or dead one is
     * no error (the caller's goal, a token that no longer works, holds). A caller may always revoke
     * its own token; any other needs token:write and the right to grant the token's scope, like a
     * delete. Without token:write, naming another token is a 403 whether or not it exists.
     */
    async revokeByValue(caller: Caller, sql: Sql, value: string): Promise<number> {
      const live = await liveTokenByValue({ sql, keyring }, value);
      if (live?.tokenId === caller.tokenId) {
        // Its own token: no permission needed (RFC 7009 lets a client give up its own credential).
        return sql.transaction(async (tx) => {
          const done = await tx.rows<{ id: number; deleted_at: string }>(
            'update tokens set deleted_at = now(), updated_at = now() where id = ? and deleted_at is null returning id, deleted_at',
            [live.tokenId],
          );
          if (done.length) {
            const audit = auditStatement(caller, [
              { action: 'revoke', resource: 'token', recordID: live.tokenId, changes: { deletedAt: { before: null, after: done[0].deleted_at } } },
            ]);
            await tx.rows(audit.text, audit.params);
          }
          return done.length;
        });
      }
      if (!can(caller, permissions.destroy))
        throw AppError.forbidden(permissions.destroy, 'without the "token:write" permission a token may revoke only itself');
      if (!live) return 0;
      try {
        await records.destroy(caller, sql, live.tokenId, 'revoke');
        return 1;
      } catch (err) {
        // Deleted between the lookup and the delete: revoked all the same.
        if (err instanceof AppError && err.code === 'NOT_FOUND') return 0;
        throw err;
      }
    },

    /**
     * Bulk revoke (DELETE /token/?filter=…, GraphQL destroyTokens): soft-deletes every live token
     * matching the filter (compiled by the adapter against `listFields`) that the caller could have
     * granted; the others are left alone and counted as skipped. A filter that selects everything
     * (absent, blank, `{}`: no condition) is refused: "all tokens" is never what a missing filter means.
     */
    async destroyMatching(caller: Caller, sql: Sql, where: SqlFragment | null): Promise<BulkRevocation> {
      requirePermission(caller, permissions.destroyMatching);
      if (!where) throw AppError.invalid([{ field: 'filter', message: 'is required: a bulk revoke never means every token' }]);
      return sql.transaction(async (tx) => {
        const live = andAll({ sql: 't.deleted_at is null', params: [] }, where)!;
        const matched = await tx.rows<{ id: number; scope: string }>(`select t.id, t.scope from tokens t where ${live.sql} for update`, live.params);
        const ids = matched.filter((t) => scopes.grantable(caller, t.scope)).map((t) => t.id);
        if (ids.length) {
          const [{ at }] = await tx.rows<{ at: string }>(
            'with d as (update tokens set deleted_at = now(), updated_at = now() where id = any(?::bigint[]) returning deleted_at) select min(deleted_at) as at from d',
            [idArray(ids)],
          );
          const changes = { deletedAt: { before: null, after: at } };
          const audit = auditStatement(
            caller,
            ids.map((recordID) => ({ action: 'revoke' as const, resource: 'token', recordID, changes })),
          );
          await tx.rows(audit.text, audit.params);
        }
        return { revoked: ids.length, skipped: matched.length - ids.length };
      });
    },

    /** The calling token itself (GraphQL `viewer`): any valid token may read its own record. */
    async viewer(caller: Caller, sql: Sql): Promise<TokenRecord> {
      const [row] = await sql.rows(`select ${tokens.columns} from tokens t where t.id = ? and t.deleted_at is null`, [caller.tokenId]);
      if (!row) throw AppError.notFound('the calling token no longer exists');
      return fromRow(row);
    },

    /** The tokens of many users, one page each (GraphQL's User.tokens); totals only when `count`. */
    async listForUsers(caller: Caller, sql: Sql, userIds: readonly number[], list: CompiledList, count = true): Promise<Map<number, Page<TokenRecord>>> {
      requirePermission(caller, permissions.listForUsers);
      return pagesByParent(sql, userTokens, userIds, list, count);
    },

    /** Keyset pages of many users' tokens (GraphQL's nested User.tokensConnection). */
    connectionsForUsers(caller: Caller, sql: Sql, userIds: readonly number[], keyset: CompiledKeyset, count = true) {
      requirePermission(caller, permissions.listForUsers);
      return connectionsByParent(sql, userTokens, userIds, keyset, count);
    },
  };
}

export type TokenService = ReturnType<typeof tokenService>;
