import { field } from '../resource/field.js';
import { defineResource, type RecordOf, type WritableOf } from '../resource/resource.js';
import { eventPattern } from './patterns.js';

/** A webhook secret as the Standard Webhooks scheme writes it: `whsec_` and the base64 of 24 to 64 random bytes. */
const SECRET_FORM = {
  test: /^whsec_(?=[A-Za-z0-9+/]{32,88}={0,2}$)(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/,
  message: 'must be "whsec_" followed by the base64 of 24 to 64 bytes (leave it out to have one generated)',
};

/**
 * An HTTP endpoint that committed changes are delivered to (docs/rest.md#webhooks). Its secret is
 * write-only: stored as a keyed hash and a ciphertext like a token's secrets, answered once (by
 * the create, or a rotation) and never read back; `active` and `disabledReason` say whether the
 * service still delivers to it. Where its deliveries stand is not part of the record
 * (src/webhooks/dispatcher.ts keeps it in webhook_states). `events` holds patterns over the audit
 * log's resources, which the modules make (`eventsPattern`: null leaves the items unchecked).
 */
const webhookSpec = (eventsPattern: { test: RegExp; message: string } | null) => ({
  name: 'webhook',
  label: 'webhook',
  table: 'webhooks',
  counted: true,
  type: 'Webhook',
  description: 'An HTTP endpoint that every committed change matching its events is delivered to, signed (Standard Webhooks).',
  inputDescription: 'Every writable field of a webhook; absent optional fields take their defaults (a replace keeps the secret when it has none).',
  fields: {
    id: field.id(),
    url: field.string(2048, {
      required: true,
      nonEmpty: true,
      description: 'Where deliveries are POSTed: an absolute http:// or https:// URL.',
    }),
    events: field.textList(100, 64, {
      defaultValue: ['*'],
      ...(eventsPattern ? { pattern: eventsPattern } : {}),
      description: 'Patterns <resource>.<action> of the events delivered ("user.*", "token.revoke"; "*", the default, for all).',
    }),
    description: field.string(255, { nullable: true }),
    active: field.boolean({
      defaultValue: true,
      description:
        'Whether events are delivered; the service sets it to false when it gives up (see disabledReason). Setting it back to true resumes where delivery stopped.',
    }),
    disabledReason: field.string(255, { origin: 'service', nullable: true, description: 'Why the service disabled it (null while active).' }),
    secret: field.writeOnlySecret(
      128,
      { hmac: 'secret_hmac', cipher: 'secret_cipher' },
      {
        pattern: SECRET_FORM,
        description: 'The signing secret (whsec_…): generated when left out of a create; write-only.',
      },
    ),
    createdAt: field.createdAt(),
    updatedAt: field.updatedAt(),
    deletedAt: field.deletedAt(),
  },
});

/**
 * The webhooks' definition as the schema, the ORM entity and the OpenAPI document read it (the
 * published surfaces, made before the list of modules is known: the patterns do not show there).
 */
export const webhooks = defineResource(webhookSpec(null));

/**
 * The same with `events` checked against the audit log's resources of the running modules
 * (ModuleDeps.auditResources): what the webhook service, and so every write, parses with.
 */
export const webhooksOver = (auditResources: readonly string[]) => defineResource(webhookSpec(eventPattern(auditResources)));

export type WebhookRecord = RecordOf<typeof webhooks>;
export type WebhookValues = WritableOf<typeof webhooks>;

/**
 * One attempt to deliver one event to one webhook (GET /webhook/{id}/delivery/, GraphQL
 * `Webhook.deliveries`), kept WEBHOOK_LOG_DAYS. Read with the webhook's permission.
 */
export const webhookDeliveries = defineResource({
  name: 'webhook',
  label: 'webhook delivery attempt',
  table: 'webhook_deliveries',
  type: 'WebhookDelivery',
  description: 'One attempt to deliver one event to a webhook.',
  fields: {
    id: field.id(),
    webhookID: field.hidden('reference'),
    eventID: field.reference({ origin: 'service', description: 'The audit event delivered (its webhook-id header).' }),
    attempt: field.int32({ origin: 'service', description: '1 for the first attempt at this event, then 2, 3, …' }),
    at: field.date({ origin: 'service', description: 'When the attempt began.' }),
    status: field.int32({
      origin: 'service',
      nullable: true,
      description: 'The HTTP status answered; null when none came (timeout, connection error, refused address).',
    }),
    durationMs: field.int32({ origin: 'service', description: 'From the attempt’s start to its answer read (or its failure), in milliseconds.' }),
    error: field.string(255, { origin: 'service', nullable: true, description: 'Why it failed, when it did.' }),
    responseBody: field.string(65_536, {
      origin: 'service',
      nullable: true,
      listed: false,
      graphqlOrder: false,
      description: 'The answer’s body, its first 64 KiB.',
    }),
  },
});

export type WebhookDelivery = RecordOf<typeof webhookDeliveries>;
