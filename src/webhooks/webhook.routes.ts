import { errors, json, listOperation, param, preferred, recordSchema, ref, WRITE_ERRORS } from '../http/openapi-schemas.js';
import { listQuery, sendList, sendUpdated, sendWritten } from '../http/presenter.js';
import { recordRoutes } from '../http/record-routes.js';
import type { ApiTag, RouteSpec } from '../http/routes.js';
import { AppError } from '../errors.js';
import { compileList } from '../list/list.js';
import { parseId, requireObject } from '../resource/input.js';
import { checkInteger } from '../shared/values.js';
import { webhookDeliveries } from './webhook.resource.js';
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
const TAG: ApiTag = {
  name: 'webhooks',
  description:
    'HTTP endpoints that receive every committed change (the audit log) they subscribe to, signed by the Standard Webhooks scheme, at least once, in order (docs/rest.md#webhooks).',
};

/** A webhook as a create and a rotation answer it: with its secret, this once. */
const WITH_SECRET = {
  allOf: [
    ref('Webhook'),
    { type: 'object', required: ['secret'], properties: { secret: { type: 'string', description: 'the signing secret, answered this once' } } },
  ],
};

export function webhookRoutes(webhooks: WebhookService, basePath: string): RouteSpec[] {
  const { permissions } = webhooks;
  return [
    ...recordRoutes({
      path: '/webhook',
      basePath,
      service: webhooks,
      tag: TAG,
      notes: {
        write:
          '`url` must be an absolute http(s) URL whose host is no loopback, private, link-local or multicast address (unless WEBHOOK_ALLOW_PRIVATE=true); `events` lists `<resource>.<action>` patterns of the audit log. A create without `secret` gets a generated one, answered once with `Prefer: return=representation`.',
        destroy: 'Its deliveries stop; its delivery history is kept for WEBHOOK_LOG_DAYS.',
        restore: 'Its deliveries resume where they stopped.',
      },
      created: { name: 'WebhookWithSecret', schema: WITH_SECRET },
    }),
    {
      method: 'POST',
      path: '/webhook/:id/secret',
      permission: permissions.rotateSecret,
      docs: {
        tag: TAG,
        summary: 'Give a webhook a new secret',
        description:
          'The new secret is answered this once (a bare JSON string; with `Prefer: return=representation`, the webhook with its `secret`). The previous secret keeps signing beside it for 24 hours. Needs `webhook:write`.',
        operation: {
          parameters: [param('id'), param('Prefer')],
          responses: {
            200: {
              description: 'The new secret, or the webhook with it with Prefer: return=representation',
              content: preferred(ref('WebhookSecret'), ref('WebhookWithSecret')),
            },
            ...errors(400, 401, 403, 404, 503),
          },
        },
        schemas: {
          WebhookSecret: { type: 'string', pattern: '^whsec_', description: 'the new signing secret, answered this once' },
          WebhookWithSecret: WITH_SECRET,
        },
      },
      handle: async (ctx, caller, sql) => {
        const record = await webhooks.rotateSecret(caller, sql, parseId(ctx.params.id));
        sendWritten(ctx, record.secret, record);
      },
    },
    {
      method: 'POST',
      path: '/webhook/:id/replay',
      permission: permissions.replay,
      docs: {
        tag: TAG,
        summary: 'Deliver the events after an event id again',
        description:
          'Body `{"after": <eventID>}`: the webhook is delivered every matching event after it again, in order (at most 100,000 events back, else 400). Answers `1`, or the webhook with `Prefer: return=representation`. Needs `webhook:write`.',
        operation: {
          parameters: [param('id'), param('Prefer')],
          requestBody: { required: true, content: json(ref('WebhookReplay')) },
          responses: {
            200: { description: '`1`, or the webhook with Prefer: return=representation', content: preferred(ref('One'), ref('Webhook')) },
            ...errors(...WRITE_ERRORS),
          },
        },
        schemas: {
          WebhookReplay: {
            type: 'object',
            required: ['after'],
            properties: {
              after: { type: 'integer', minimum: 0, description: 'the event id to deliver after (0: the log’s start), at most 100,000 events back' },
            },
          },
        },
      },
      handle: async (ctx, caller, sql) => {
        const id = parseId(ctx.params.id);
        const after = parseAfter(requireObject(ctx.request.body).after);
        sendUpdated(ctx, await webhooks.replay(caller, sql, id, after));
      },
    },
    {
      method: 'GET',
      path: '/webhook/:id/delivery',
      permission: permissions.deliveries,
      docs: {
        tag: TAG,
        trailingSlash: true,
        summary: 'List a webhook’s delivery attempts',
        description:
          'A page of its delivery attempts (`eventID`, `attempt`, `at`, `status`, `durationMs`, `error`, `responseBody` truncated), kept WEBHOOK_LOG_DAYS, as a bare JSON array with `X-Total-Count` and `Link`; the list language of docs/rest.md. Needs `webhook:read`.',
        operation: listOperation(ref('WebhookDelivery'), true),
        schemas: { WebhookDelivery: recordSchema(webhookDeliveries) },
      },
      handle: async (ctx, caller, sql) => {
        const id = parseId(ctx.params.id);
        sendList(ctx, await webhooks.deliveries(caller, sql, id, compileList(listQuery(ctx), webhooks.deliveryListFields)));
      },
    },
  ];
}
