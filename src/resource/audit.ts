/**
 * What a write did (docs/rest.md#audit-log): the `action` of its audit event. The audit log is the
 * event log every write appends to in its own statement (src/resource/writes.ts) and subscriptions
 * read (src/realtime/): generic, whatever the resource.
 */
export const AUDIT_ACTIONS = ['create', 'update', 'patch', 'status', 'delete', 'link', 'unlink', 'right', 'apply', 'revoke', 'restore'] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];
