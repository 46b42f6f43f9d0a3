import { AUDIT_ACTIONS } from '../resource/audit.js';
import { field } from '../resource/field.js';
import { defineResource, type RecordOf } from '../resource/resource.js';

/**
 * What the published schema says an audit event's `resource` is. The resources themselves come from
 * the modules (src/module/module.ts: `auditResourcesOf`; a record's resource, or the links of a
 * user: a relation's `auditResource`), and webhooks' event patterns are checked against those
 * (ModuleDeps.auditResources). This text is fixed: schema.graphql is published, and a definition is
 * made before the list of modules is known.
 */
const RESOURCE_DESCRIPTION = 'user, token, application, role, application_link, role_link or webhook.';

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
    resource: field.string(32, { origin: 'service', description: RESOURCE_DESCRIPTION }),
    recordID: field.reference({ origin: 'service', description: 'The record (for a link: the user).' }),
    changes: field.json({
      description:
        'The changed fields: {"field": {"before": …, "after": …}}; secrets and credentials (a token’s accessToken, refreshToken, code, codeChallenge) as "[redacted]".',
    }),
  },
});

export type AuditEvent = RecordOf<typeof auditEvents>;
