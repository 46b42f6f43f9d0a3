import { requirePermission, type Caller } from '../auth/caller.js';
import { whenConfirmed, type Sql, type Transaction } from '../db/sql.js';
import { AppError } from '../errors.js';
import { andAll, offsetPageSql, type CompiledList, type Page } from '../list/list.js';
import { recordService, type ListOptions, type RecordDeps } from '../resource/service.js';
import { plainColumns, type Encode } from '../resource/writes.js';
import type { Keyring } from '../db/keyring.js';
import { urlProblem } from './destination.js';
import { newSecret } from './signing.js';
import { webhookDeliveries, webhooks, webhooksOver, type WebhookDelivery, type WebhookRecord, type WebhookValues } from './webhook.resource.js';

/**
 * The webhooks' operations (docs/rest.md#webhooks) over the generic record service, with their own
 * rules:
 * - the `url` is checked (form, and its destination unless WEBHOOK_ALLOW_PRIVATE) before any write;
 * - the secret is generated when a create has none, answered by the create only (and by a
 *   rotation), stored as a keyed hash and a ciphertext under the token key; a write that changes
 *   it keeps the previous one signing for 24 hours (webhook_secrets); a replace without it keeps it;
 * - a new webhook's deliveries start after the newest event committed when it was created
 *   (webhook_states, in the create's transaction);
 * - `active: true` on a disabled webhook clears `disabledReason` and its failed attempts: delivery
 *   resumes with the event it stopped at;
 * - replay moves where its deliveries stand back to an event (at most MAX_REPLAY_SPAN events back).
 */

/** How far back a replay may go, in audit events of every kind (as a subscription's resume: src/realtime/hub.ts). */
export const MAX_REPLAY_SPAN = 100_000;
/** How long a previous secret still signs after a change. */
export const SECRET_OVERLAP = '24 hours';

/** A webhook with the secret it was just given: answered by a create and a rotation, never by a read. */
export type WebhookWithSecret = WebhookRecord & { id: number; secret: string };

const STATE_AT_CREATE = `insert into webhook_states (webhook_id, position) select ?::bigint, coalesce(max(id), 0) from audit_events`;
const KEEP_PREVIOUS_SECRET = `insert into webhook_secrets (webhook_id, secret_cipher, signs_until)
  select id, secret_cipher, now() + interval '${SECRET_OVERLAP}' from webhooks where id = ?::bigint and secret_hmac is distinct from ?::bytea`;
const RESUME = `update webhook_states set attempt = 0, next_attempt_at = null, failing_since = null, lease_owner = null, lease_until = null where webhook_id = ?::bigint`;

/**
 * `allowPrivate`: WEBHOOK_ALLOW_PRIVATE; `auditResources`: the audit log's resources of the running
 * modules, which a webhook's event patterns may name (ModuleDeps.auditResources).
 */
export function webhookService(keyring: Keyring, options: { allowPrivate: boolean; auditResources: readonly string[] }, deps: RecordDeps) {
  /** The secret goes into its keyed hash and ciphertext; every other field into its column. */
  const encode: Encode = (name, field, value) =>
    field.kind !== 'secret'
      ? plainColumns(name, field, value)
      : [
          { column: field.secretColumns!.hmac, type: 'bytea', value: keyring.hash('webhookSecret', value as string) },
          { column: field.secretColumns!.cipher, type: 'bytea', value: keyring.seal('webhookSecret', value as string) },
        ];

  const records = recordService(
    webhooksOver(options.auditResources),
    {
      encode,
      // No unique index on webhooks: never reached.
      conflict: () => AppError.conflict('the webhook conflicts with another record'),
      checks: {
        async write(tx: Transaction, _caller, values, current) {
          if (!current) return;
          if (typeof values.secret === 'string') await tx.rows(KEEP_PREVIOUS_SECRET, [current.id, keyring.hash('webhookSecret', values.secret)]);
          if (values.active === true && !current.active) await tx.rows(RESUME, [current.id]);
        },
      },
    },
    deps,
  );
  const { read, write } = webhooks.permissions;
  const permissions = { ...records.permissions, rotateSecret: write, replay: write, deliveries: read } as const;

  /**
   * The url's problem as a 400 naming `url`, before anything is written. Its host goes to DNS only
   * once the caller is confirmed (a request may run ahead of its token's check: src/auth/checked-sql.ts).
   */
  async function checkUrl(sql: Sql, values: Partial<WebhookValues>): Promise<void> {
    if (typeof values.url !== 'string') return;
    const problem = await urlProblem(values.url, options.allowPrivate, () => whenConfirmed(sql));
    if (problem) throw AppError.invalid([{ field: 'url', message: problem }]);
  }

  /**
   * The values a change writes: a secret left out (null) is kept; `active: true` also clears
   * `disabledReason` (null whenever a webhook delivers).
   */
  const changeOf = (values: Partial<WebhookValues>): Partial<WebhookValues> => {
    const { secret, ...rest } = values;
    const change: Record<string, unknown> = typeof secret === 'string' ? { ...rest, secret } : rest;
    if (values.active === true) change.disabledReason = null;
    return change as Partial<WebhookValues>;
  };

  const notFound = (id: number) => AppError.notFound(`no webhook with id ${id}`);

  return {
    ...records,
    permissions,

    /** Creates a webhook with its secret (generated when not given); answers it with the secret, this once. */
    async create(caller: Caller, sql: Sql, values: Partial<WebhookValues>, id?: number): Promise<WebhookWithSecret> {
      requirePermission(caller, permissions.create);
      await checkUrl(sql, values);
      const secret = typeof values.secret === 'string' ? values.secret : newSecret();
      return sql.transaction(async (tx) => {
        const record = await records.create(caller, tx, { ...values, secret }, id);
        await tx.rows(STATE_AT_CREATE, [record.id]);
        return { ...record, secret };
      });
    },

    async replace(caller: Caller, sql: Sql, id: number, values: Partial<WebhookValues>) {
      requirePermission(caller, permissions.replace);
      await checkUrl(sql, values);
      return records.replace(caller, sql, id, changeOf(values));
    },

    async patch(caller: Caller, sql: Sql, id: number, values: Partial<WebhookValues>) {
      requirePermission(caller, permissions.patch);
      await checkUrl(sql, values);
      return records.patch(caller, sql, id, changeOf(values));
    },

    /**
     * A new secret (POST /webhook/{id}/secret, rotateWebhookSecret): answered this once; the
     * previous one signs alongside it for 24 hours. Audited as a patch of `secret` (redacted).
     */
    async rotateSecret(caller: Caller, sql: Sql, id: number): Promise<WebhookWithSecret> {
      requirePermission(caller, permissions.rotateSecret);
      const secret = newSecret();
      const record = await records.patch(caller, sql, id, { secret });
      return { ...record, secret };
    },

    /**
     * Delivers again the events after `after` (POST /webhook/{id}/replay, replayWebhook): where the
     * webhook's deliveries stand moves back to it, its failed attempts are forgotten, and whichever
     * instance held it lets it go (the next to claim it starts from there). `after` must be an event
     * that exists or existed (at most the newest id) and at most MAX_REPLAY_SPAN events back.
     */
    async replay(caller: Caller, sql: Sql, id: number, after: number): Promise<WebhookRecord & { id: number }> {
      requirePermission(caller, permissions.replay);
      return sql.transaction(async (tx) => {
        const [record] = await tx.rows<WebhookRecord & { id: number }>(
          `select ${webhooks.columns} from webhooks t where t.id = ? and t.deleted_at is null for update`,
          [id],
        );
        if (!record) throw notFound(id);
        const [{ newest }] = await tx.rows<{ newest: number }>('select coalesce(max(id), 0) as newest from audit_events');
        if (after > newest) throw AppError.invalid([{ field: 'after', message: `is past the newest event (${newest})` }]);
        if (newest - after > MAX_REPLAY_SPAN) {
          throw AppError.invalid([{ field: 'after', message: `is more than ${MAX_REPLAY_SPAN.toLocaleString('en')} events back (the newest is ${newest})` }]);
        }
        await tx.rows(
          `update webhook_states set position = ?::bigint, attempt = 0, next_attempt_at = null, failing_since = null, lease_owner = null, lease_until = null where webhook_id = ?::bigint`,
          [after, id],
        );
        return record;
      });
    },

    /** The delivery attempts of a live webhook (GET /webhook/{id}/delivery/, Webhook.deliveries), through the list language. */
    async deliveries(caller: Caller, sql: Sql, id: number, q: CompiledList, options: ListOptions = {}): Promise<Page<WebhookDelivery>> {
      requirePermission(caller, permissions.deliveries);
      const [live] = await sql.rows('select 1 as found from webhooks where id = ? and deleted_at is null', [id]);
      if (!live) throw notFound(id);
      return deliveryPage(sql, [id], q, options.count !== false).then((pages) => pages.get(id)!);
    },

    /** The delivery attempts of several webhooks (GraphQL's Webhook.deliveries over a page of webhooks), one page each. */
    async deliveriesOf(caller: Caller, sql: Sql, ids: readonly number[], q: CompiledList, count: boolean): Promise<Map<number, Page<WebhookDelivery>>> {
      requirePermission(caller, permissions.deliveries);
      return deliveryPage(sql, ids, q, count);
    },

    deliveryListFields: webhookDeliveries.listFields,
  };
}

/** A page of each webhook's delivery attempts (a webhook's list is short-lived and bounded by retention: one statement per webhook). */
async function deliveryPage(sql: Sql, ids: readonly number[], q: CompiledList, count: boolean): Promise<Map<number, Page<WebhookDelivery>>> {
  const pages = new Map<number, Page<WebhookDelivery>>();
  await Promise.all(
    ids.map(async (id) => {
      const where = andAll({ sql: 't.webhook_id = ?', params: [id] }, q.where)!;
      const statement = offsetPageSql(webhookDeliveries.columns, 'webhook_deliveries', where, q.order, q);
      const [data, total] = await Promise.all([
        sql.rows<WebhookDelivery>(statement.sql, statement.params),
        count
          ? sql.rows<{ total: number }>(`select count(*) as total from webhook_deliveries t where ${where.sql}`, where.params).then(([r]) => Number(r.total))
          : null,
      ]);
      pages.set(id, { total, page: q.page, pageSize: q.pageSize, data });
    }),
  );
  return pages;
}

export type WebhookService = ReturnType<typeof webhookService>;
