import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { requirePermission, type Caller } from '../auth/caller.js';
import { readerFor, whereSql, wireDate, wireInt } from '../db/reads.js';
import { compileList, orderSql, type ListFields, type ListInput, type Page } from '../list/list.js';

/** What a write did (SPEC §9). */
export type AuditAction = 'create' | 'update' | 'patch' | 'status' | 'delete' | 'link' | 'unlink' | 'right' | 'apply' | 'revoke' | 'restore';

/** The changed fields of one record: before and after, secrets as "[redacted]". */
export type Changes = Record<string, { before: unknown; after: unknown }>;

export interface AuditEvent {
  id: number;
  at: string;
  actorTokenID: number | null;
  actorUserID: number | null;
  requestId: string | null;
  action: AuditAction;
  resource: string;
  recordID: number;
  changes: Changes;
}

/** Values that never enter the log, whatever changed. */
const SECRETS = new Set(['accessToken', 'refreshToken', 'password', 'rememberToken']);
const REDACTED = '[redacted]';

const wire = (value: unknown) => (value instanceof Date ? value.toISOString() : value === undefined ? null : value);

/** The fields whose value differs, before and after (secrets redacted, dates in the wire format). */
export function changesOf(before: Record<string, unknown>, after: Record<string, unknown>): Changes {
  const changes: Changes = {};
  for (const name of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const b = wire(before[name]);
    const a = wire(after[name]);
    if (b === a) continue;
    changes[name] = SECRETS.has(name) ? { before: b === null ? null : REDACTED, after: a === null ? null : REDACTED } : { before: b, after: a };
  }
  return changes;
}

/**
 * Appends one event per changed record, on the write's own transaction (`em`), so it commits or
 * rolls back with the write. The actor is the caller's token and user (none for the service's own
 * writes, such as the first token).
 */
export async function appendAudit(
  em: EntityManager,
  caller: Caller,
  events: readonly { action: AuditAction; resource: string; recordID: number; changes: Changes }[],
): Promise<void> {
  if (events.length === 0) return;
  const system = caller.tokenId === 0;
  const values = events.map(() => '(?, ?, ?, ?, ?, ?, ?::jsonb)').join(', ');
  const params = events.flatMap((e) => [
    system ? null : caller.tokenId,
    system ? null : caller.userId,
    caller.requestId ?? null,
    e.action,
    e.resource,
    e.recordID,
    JSON.stringify(e.changes),
  ]);
  await em.execute(`insert into audit_events (actor_token_id, actor_user_id, request_id, action, resource, record_id, changes) values ${values}`, params);
}

export const AUDIT_LIST_FIELDS: ListFields = {
  id: { column: 'a.id', kind: 'id' },
  at: { column: 'a.at', kind: 'date' },
  actorTokenID: { column: 'a.actor_token_id', kind: 'id', nullable: true },
  actorUserID: { column: 'a.actor_user_id', kind: 'id', nullable: true },
  requestId: { column: 'a.request_id', kind: 'string', nullable: true },
  action: { column: 'a.action', kind: 'string' },
  resource: { column: 'a.resource', kind: 'string' },
  recordID: { column: 'a.record_id', kind: 'id' },
};

const COLUMNS = 'a.id, a.at, a.actor_token_id, a.actor_user_id, a.request_id, a.action, a.resource, a.record_id, a.changes';

interface AuditRow {
  id: string;
  at: string;
  actor_token_id: string | null;
  actor_user_id: string | null;
  request_id: string | null;
  action: AuditAction;
  resource: string;
  record_id: string;
  changes: Changes | string;
}

const eventFromRow = (row: AuditRow): AuditEvent => ({
  id: wireInt(row.id),
  at: wireDate(row.at)!,
  actorTokenID: row.actor_token_id === null ? null : wireInt(row.actor_token_id),
  actorUserID: row.actor_user_id === null ? null : wireInt(row.actor_user_id),
  requestId: row.request_id,
  action: row.action,
  resource: row.resource,
  recordID: wireInt(row.record_id),
  changes: typeof row.changes === 'string' ? (JSON.parse(row.changes) as Changes) : row.changes,
});

/** GET /audit/ and GraphQL auditEvents: the log, through the list language; needs audit:read. */
export function auditService(orm: MikroORM) {
  const rows = readerFor(orm);
  return {
    async list(caller: Caller, input: ListInput, options: { count?: boolean } = {}): Promise<Page<AuditEvent>> {
      requirePermission(caller, 'audit:read');
      const q = compileList(input, AUDIT_LIST_FIELDS);
      const where = whereSql(q.where);
      const params = q.where?.params ?? [];
      const [data, total] = await Promise.all([
        rows<AuditRow>(`select ${COLUMNS} from audit_events a${where} order by ${orderSql(q.order)} limit ? offset ?`, [...params, q.limit, q.offset]),
        options.count === false ? null : rows<{ total: string }>(`select count(*) as total from audit_events a${where}`, params).then(([r]) => Number(r.total)),
      ]);
      return { total, page: q.page, pageSize: q.pageSize, data: data.map(eventFromRow) };
    },
  };
}

export type AuditService = ReturnType<typeof auditService>;
