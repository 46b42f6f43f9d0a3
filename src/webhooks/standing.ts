import type { Sql } from '../db/sql.js';
import type { WebhookStanding } from './metrics.js';
import { matchesSql } from './patterns.js';

/**
 * Where the webhooks stand, for /metrics (read when it is scraped): each active webhook's lag, the
 * seconds between the newest event it matches and the event its deliveries stand at (0 when no
 * matching event is left), and how many live webhooks are disabled. One statement; the newest
 * matching event is looked for from the end of the log down to the position, so a caught-up
 * endpoint costs an index probe.
 */
const STANDING = `select w.id as webhook,
    coalesce(extract(epoch from (n.at - coalesce(d.at, w.created_at))), 0)::float8 as seconds
  from webhooks w join webhook_states s on s.webhook_id = w.id
  left join lateral (select a.at from audit_events a where a.id > s.position and ${matchesSql('w.events')} order by a.id desc limit 1) n on true
  left join lateral (select a.at from audit_events a where a.id <= s.position order by a.id desc limit 1) d on true
  where w.active and w.deleted_at is null
  order by w.id`;

export async function webhookStanding(sql: Sql): Promise<WebhookStanding> {
  const [lags, [{ disabled }]] = await Promise.all([
    sql.rows<{ webhook: number; seconds: number }>(STANDING),
    sql.rows<{ disabled: number }>('select count(*) as disabled from webhooks where deleted_at is null and not active'),
  ]);
  return { lags: lags.map((l) => ({ webhook: l.webhook, seconds: Math.max(0, Number(l.seconds)) })), disabled: Number(disabled) };
}
