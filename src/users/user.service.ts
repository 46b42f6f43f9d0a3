import type { Caller } from '../auth/caller.js';
import type { ScopeVocabulary } from '../auth/scopes.js';
import type { Sql } from '../db/sql.js';
import { AppError } from '../errors.js';
import { recordService, type RecordDeps } from '../resource/service.js';
import { checkUserTokensGrantable } from './token-grant.js';
import { users, type UserRecord } from './user.resource.js';

/** Users: the shared record operations, and the status setter (docs/rest.md#conventions: PATCH or PUT /user/{id}/status/). */
export function userService(deps: RecordDeps & { scopes: ScopeVocabulary }) {
  const { scopes } = deps;
  const records = recordService(
    users,
    {
      conflict: () => AppError.conflict('the user conflicts with an existing one'),
      // A delete ends the user's tokens: only if the caller could have granted every one of them.
      cascadeGuard: (tx, caller, id) => checkUserTokensGrantable(scopes, tx, caller, id),
    },
    deps,
  );
  return {
    ...records,
    permissions: { ...records.permissions, updateStatus: records.permissions.patch },
    /** Sets a user's status (an audit event of its own kind: `status`). */
    updateStatus: (caller: Caller, sql: Sql, id: number, status: number): Promise<UserRecord> => records.patch(caller, sql, id, { status }, 'status'),
  };
}

export type UserService = ReturnType<typeof userService>;
