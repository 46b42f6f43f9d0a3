import type { GraphQLResolveInfo } from 'graphql';
import { Arg, Args, Ctx, Field, FieldResolver, ID, Info, Mutation, Resolver, Root, type ClassType } from 'type-graphql';
import { requirePermission } from '../auth/caller.js';
import { callerOf, type GraphQLContext } from '../graphql/context.js';
import { listInput } from '../graphql/filters.js';
import { PlainResolver } from '../graphql/plain-resolvers.js';
import { method, params, recordResolver } from '../graphql/record-resolver.js';
import { recordTypes, type RecordTypes } from '../graphql/record-types.js';
import { selects } from '../graphql/selection.js';
import { compileList } from '../list/list.js';
import type { GraphQLApi } from '../module/module.js';
import { parseId } from '../resource/input.js';
import { webhookDeliveries, webhooks, type WebhookRecord } from './webhook.resource.js';
import { parseAfter } from './webhook.routes.js';
import type { WebhookService } from './webhook.service.js';

let types: { webhook: RecordTypes; delivery: RecordTypes } | undefined;

/**
 * The webhooks' GraphQL types (built once: type-graphql's metadata is global). `Webhook.secret` is
 * the one field the definition does not give the object type (it is write-only): it answers the
 * secret in the answer of createWebhook and rotateWebhookSecret, and null everywhere else.
 */
export function webhookTypes() {
  if (!types) {
    const webhook = recordTypes(webhooks, { cacheable: false });
    Field(() => String, {
      nullable: true,
      description: 'The signing secret: answered by createWebhook and rotateWebhookSecret only, null everywhere else (it is never read back).',
    })(webhook.Type.prototype, 'secret');
    types = { webhook, delivery: recordTypes(webhookDeliveries, { cacheable: false }) };
  }
  return types;
}

/** `rotateWebhookSecret(id)`: a new secret, answered this once; the previous one signs alongside it for 24 hours. */
const rotate = (api: GraphQLApi<WebhookService>) => (resolver: ClassType) => {
  const d = method(resolver, 'rotateSecret', async (id: string, ctx: GraphQLContext) => {
    const caller = callerOf(ctx);
    const service = api.service(ctx);
    requirePermission(caller, service.permissions.rotateSecret);
    return service.rotateSecret(caller, ctx.sql, parseId(id));
  });
  params(
    resolver,
    'rotateSecret',
    Arg('id', () => ID),
    Ctx(),
  );
  Mutation(() => webhookTypes().webhook.Type, {
    name: 'rotateWebhookSecret',
    description: 'Gives the webhook a new secret, answered in `secret` this once; the previous one still signs deliveries for 24 hours.',
  })(resolver.prototype, 'rotateSecret', d);
};

/** `replayWebhook(id, after)`: the events after `after` delivered again. */
const replay = (api: GraphQLApi<WebhookService>) => (resolver: ClassType) => {
  const d = method(resolver, 'replay', async (id: string, after: string, ctx: GraphQLContext) => {
    const caller = callerOf(ctx);
    const service = api.service(ctx);
    requirePermission(caller, service.permissions.replay);
    const webhookId = parseId(id);
    return service.replay(caller, ctx.sql, webhookId, parseAfter(after));
  });
  params(
    resolver,
    'replay',
    Arg('id', () => ID),
    Arg('after', () => ID, { description: 'The event id to deliver after (0: from the start of the log), at most 100,000 events back.' }),
    Ctx(),
  );
  Mutation(() => webhookTypes().webhook.Type, {
    name: 'replayWebhook',
    description: 'Delivers again, in order, every event after `after` that the webhook matches.',
  })(resolver.prototype, 'replay', d);
};

/** Webhooks over GraphQL: the record operations, the secret's rotation, replay, and `Webhook.deliveries`. */
export function webhookResolvers(api: GraphQLApi<WebhookService>): ClassType[] {
  const { webhook, delivery } = webhookTypes();
  const WebhookResolver = recordResolver(webhooks, api.service, webhook, {
    cacheable: false,
    mutations: ['create', 'update', 'patch', 'destroy', 'restore', rotate(api), replay(api)],
    descriptions: {
      create: 'Creates a webhook; its secret (generated when the input has none) is answered in `secret` this once.',
      update: 'Replaces every writable field (a secret left out is kept).',
      restore: 'Brings a deleted webhook back; its deliveries resume where they stood.',
    },
  });

  @Resolver(() => webhook.Type)
  class WebhookDeliveriesResolver {
    @FieldResolver(() => delivery.Page, { description: 'Its delivery attempts (kept WEBHOOK_LOG_DAYS), through the list language.' })
    @PlainResolver()
    async deliveries(
      @Root() hook: WebhookRecord & { id: number },
      @Args(() => delivery.ListArgs) args: object,
      @Ctx() ctx: GraphQLContext,
      @Info() info: GraphQLResolveInfo,
    ) {
      return ctx.loaders
        .byField(info, () => {
          const service = api.service(ctx);
          requirePermission(callerOf(ctx), service.permissions.deliveries);
          const list = compileList(listInput(args), service.deliveryListFields);
          const count = selects(info, 'total');
          return (caller, sql, ids) => service.deliveriesOf(caller, sql, ids, list, count);
        })
        .load(hook.id);
    }
  }
  return [WebhookResolver, WebhookDeliveriesResolver];
}
