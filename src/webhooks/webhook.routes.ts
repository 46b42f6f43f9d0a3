import { listQuery, sendList, sendUpdated, sendWritten } from '../http/presenter.js';
import { recordRoutes } from '../http/record-routes.js';
import type { RouteSpec } from '../http/routes.js';
import { AppError } from '../errors.js';
import { compileList } from '../list/list.js';
import { parseId, requireObject } from '../resource/input.js';
import { checkInteger } from '../shared/values.js';
import type { WebhookService } from './webhook.service.js';

/** `after` of a replay: an event id, or 0 for the log's start. */
export function parseAfter(raw: unknown): number {
  const checked =
    typeof raw === 'string' && /^\d{1,16}$/.test(raw) ? checkInteger(Number(raw), 0, Number.MAX_SAFE_INTEGER) : checkInteger(raw, 0, Number.MAX_SAFE_INTEGER);
  if (!checked.ok)
    throw AppError.invalid([
      { field: 'after', message: raw === undefined ? 'is required: the event id to deliver after' : `${checked.message} (an event id)` },
    ]);
  return checked.value;
}

/**
 * /webhook/… (docs/rest.md#webhooks): the record routes, and
 * - `POST /webhook/{id}/secret`: a new secret, answered this once (bare, as a JSON string; with
 *   `Prefer: return=representation`, the webhook with its `secret`);
 * - `POST /webhook/{id}/replay` `{"after": <eventID>}`: deliver again the events after it (`1`, or the webhook);
 * - `GET /webhook/{id}/delivery/`: the delivery attempts, with the list language.
 */
export function webhookRoutes(webhooks: WebhookService, basePath: string): RouteSpec[] {
  return [
    ...recordRoutes({ path: '/webhook', basePath, service: webhooks }),
    {
      method: 'POST',
      path: '/webhook/:id/secret',
      permission: 'webhook:write',
      handle: async (ctx, caller, sql) => {
        const record = await webhooks.rotateSecret(caller, sql, parseId(ctx.params.id));
        sendWritten(ctx, record.secret, record);
      },
    },
    {
      method: 'POST',
      path: '/webhook/:id/replay',
      permission: 'webhook:write',
      handle: async (ctx, caller, sql) => {
        const id = parseId(ctx.params.id);
        const after = parseAfter(requireObject(ctx.request.body).after);
        sendUpdated(ctx, await webhooks.replay(caller, sql, id, after));
      },
    },
    {
      method: 'GET',
      path: '/webhook/:id/delivery',
      permission: 'webhook:read',
      handle: async (ctx, caller, sql) => {
        const id = parseId(ctx.params.id);
        sendList(ctx, await webhooks.deliveries(caller, sql, id, compileList(listQuery(ctx), webhooks.deliveryListFields)));
      },
    },
  ];
}
