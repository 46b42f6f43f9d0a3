import { listOperation, recordSchema, ref, type Schema } from '../http/openapi-schemas.js';
import { listQuery, sendList } from '../http/presenter.js';
import type { RouteSpec } from '../http/routes.js';
import { compileList } from '../list/list.js';
import { AUDIT_ACTIONS } from '../resource/audit.js';
import { auditEvents } from './audit.resource.js';
import type { AuditService } from './audit.service.js';

/** An audit event as REST answers it: the record, its action one of the audit log's, its changes each a before and an after. */
function auditEventSchema(): Schema {
  const schema = recordSchema(auditEvents);
  const properties = schema.properties as Record<string, Schema>;
  properties.action = { enum: [...AUDIT_ACTIONS] };
  properties.changes = { type: 'object', additionalProperties: { type: 'object', properties: { before: {}, after: {} } } };
  return schema;
}

/** GET /audit/: the audit log, with the list language (permission audit:read). */
export const auditRoutes = (audit: AuditService): RouteSpec[] => [
  {
    method: 'GET',
    path: '/audit',
    permission: audit.permissions.list,
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
      operation: listOperation(ref('AuditEvent'), false),
      schemas: { AuditEvent: auditEventSchema() },
    },
    handle: async (ctx, caller, sql) => sendList(ctx, await audit.list(caller, sql, compileList(listQuery(ctx), audit.listFields))),
  },
];
