import { AUDIT_ACTIONS } from '../resource/audit.js';

/**
 * A webhook's `events`: patterns `<resource>.<action>` over the audit log's resources and actions
 * (docs/rest.md#webhooks), with `*` for any resource or action, and `*` alone for every event.
 * One rule, three forms: the check of a write, a test of one event in memory (which endpoints an
 * event wakes), and a condition in SQL (which events an endpoint reads, and its lag).
 */
const ACTION = `(\\*|${AUDIT_ACTIONS.join('|')})`;

/**
 * What a write's `events` items must look like (field.ts applies it to each item), over the audit
 * log's resources: the modules' (ModuleDeps.auditResources), so that a new module's resource may be
 * named.
 */
export function eventPattern(resources: readonly string[]): { test: RegExp; message: string } {
  const resource = `(\\*|${resources.map((name) => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})`;
  return {
    test: new RegExp(`^(\\*|${resource}\\.${ACTION})$`),
    message: `is not a pattern <resource>.<action> (or "*") over the audit log's resources (${resources.join(', ')}) and actions (${AUDIT_ACTIONS.join(', ')}), either may be "*"`,
  };
}

/** Whether an event of `resource` and `action` matches one of the patterns. */
export function matches(patterns: readonly string[], resource: string, action: string): boolean {
  for (const pattern of patterns) {
    if (pattern === '*') return true;
    const dot = pattern.indexOf('.');
    const r = pattern.slice(0, dot);
    const a = pattern.slice(dot + 1);
    if ((r === '*' || r === resource) && (a === '*' || a === action)) return true;
  }
  return false;
}

/**
 * The same test in SQL, for the audit row of alias `a` and a `text[]` of patterns (an expression: a
 * bound parameter or a webhook's `events` column).
 */
export const matchesSql = (patterns: string, a = 'a') =>
  `exists (select 1 from unnest(${patterns}) p(e) where e = '*' or e = ${a}.resource || '.' || ${a}.action or e = ${a}.resource || '.*' or e = '*.' || ${a}.action)`;
