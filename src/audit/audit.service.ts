import { requirePermission, type Caller } from '../auth/caller.js';
import type { Sql } from '../db/sql.js';
import { offsetPageSql, type CompiledList, type Page } from '../list/list.js';
import { auditEvents, type AuditEvent } from './audit.resource.js';

/** GET /audit/ and GraphQL auditEvents: the log, through the list language; needs audit:read. */
export function auditService() {
  const permissions = { list: auditEvents.permissions.read } as const;
  return {
    permissions,
    listFields: auditEvents.listFields,
    async list(caller: Caller, sql: Sql, q: CompiledList, options: { count?: boolean } = {}): Promise<Page<AuditEvent>> {
      requirePermission(caller, permissions.list);
      const page = offsetPageSql(auditEvents.columns, 'audit_events', q.where, q.order, q);
      const where = q.where ? ` where ${q.where.sql}` : '';
      const [data, total] = await Promise.all([
        sql.rows<AuditEvent>(page.sql, page.params),
        options.count === false
          ? null
          : sql.rows<{ total: number }>(`select count(*) as total from audit_events t${where}`, q.where?.params ?? []).then(([r]) => r.total),
      ]);
      return { total, page: q.page, pageSize: q.pageSize, data };
    },
  };
}

export type AuditService = ReturnType<typeof auditService>;
