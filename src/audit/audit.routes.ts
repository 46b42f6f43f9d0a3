import { listQuery, sendList } from '../http/presenter.js';
import type { RouteSpec } from '../http/routes.js';
import { compileList } from '../list/list.js';
import type { AuditService } from './audit.service.js';

/** GET /audit/: the audit log, with the list language (permission audit:read). */
export const auditRoutes = (audit: AuditService): RouteSpec[] => [
  {
    method: 'GET',
    path: '/audit',
    permission: 'audit:read',
    handle: async (ctx, caller, sql) => sendList(ctx, await audit.list(caller, sql, compileList(listQuery(ctx), audit.listFields))),
  },
];
