import { field } from '../resource/field.js';
import { defineResource, type RecordOf } from '../resource/resource.js';

/** What a write did (docs/rest.md#audit-log). */
export const AUDIT_ACTIONS = ['create', 'update', 'patch', 'status', 'delete', 'link', 'unlink', 'right', 'apply', 'revoke', 'restore'] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** What an audit event's `resource` names: a record's resource, or the links of a user. */
export const AUDIT_RESOURCES = ['user', 'token', 'application', 'role', 'application_link', 'role_link', 'webhook'] as const;

/** The audit log: one row per record a successful write changed, appended in the write's transaction. */
export const auditEvents = defineResource({
  name: 'audit',
  label: 'audit event',
  table: 'audit_events',
  type: 'AuditEvent',
  description: 'One record changed by one successful write (append-only).',
  fields: {
    id: field.id(),
    at: field.date({ origin: 'service' }),
    actorTokenID: field.reference({
      origin: 'service',
      nullable: true,
      graphqlOrder: false,
      description: 'The token that made the write; null for the service’s own writes.',
    }),
    actorUserID: field.reference({ origin: 'service', nullable: true, graphqlOrder: false }),
    requestId: field.string(128, { origin: 'service', nullable: true, graphqlOrder: false, description: 'The X-Request-Id of the write.' }),
    action: field.string(16, { origin: 'service', description: `${AUDIT_ACTIONS.slice(0, -1).join(', ')} or ${AUDIT_ACTIONS.at(-1)}.` }),
    resource: field.string(32, { origin: 'service', description: `${AUDIT_RESOURCES.slice(0, -1).join(', ')} or ${AUDIT_RESOURCES.at(-1)}.` }),
    recordID: field.reference({ origin: 'service', description: 'The record (for a link: the user).' }),
    changes: field.json({
      description:
        'The changed fields: {"field": {"before": …, "after": …}}; secrets and credentials (a token’s accessToken, refreshToken, code, codeChallenge) as "[redacted]".',
    }),
  },
});

export type AuditEvent = RecordOf<typeof auditEvents>;
