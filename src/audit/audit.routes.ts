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
    docs: {
      tag: {
        name: 'audit',
        description: 'The audit log: one event per record each successful write changed, written in the write’s own transaction; append-only.',
      },
      trailingSlash: true,
      summary: 'List audit events',
      description:
        'A page of events as a bare JSON array with `X-Total-Count` and `Link`: who wrote (token and user), the request id, the action, ' +
        'the resource and record, and each changed field before and after (secrets as `"[redacted]"`). The list language of docs/rest.md ' +
        'over `id at actorTokenID actorUserID requestId action resource recordID`. Needs `audit:read`.',
    },
    handle: async (ctx, caller, sql) => sendList(ctx, await audit.list(caller, sql, compileList(listQuery(ctx), audit.listFields))),
  },
];
