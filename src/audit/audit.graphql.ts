import type { GraphQLResolveInfo } from 'graphql';
import { Args, Ctx, Info, Query, Resolver } from 'type-graphql';
import { requirePermission } from '../auth/caller.js';
import { callerOf, type GraphQLContext } from '../graphql/context.js';
import { listInput } from '../graphql/filters.js';
import { method, params } from '../graphql/record-resolver.js';
import { recordTypes } from '../graphql/record-types.js';
import { selects } from '../graphql/selection.js';
import { compileList } from '../list/list.js';
import type { GraphQLApi } from '../module/module.js';
import { auditEvents } from './audit.resource.js';
import type { AuditService } from './audit.service.js';

/** `auditEvents(…)`: the audit log (needs audit:read). */
export function auditResolver(api: GraphQLApi<AuditService>) {
  const types = recordTypes(auditEvents, { cacheable: false });
  const AuditResolver = class AuditResolver {};
  const d = method(AuditResolver, 'auditEvents', async (args: never, ctx: GraphQLContext, info: GraphQLResolveInfo) => {
    const caller = callerOf(ctx);
    const service = api.service(ctx);
    requirePermission(caller, service.permissions.list);
    return service.list(caller, ctx.sql, compileList(listInput(args), auditEvents.listFields), { count: selects(info, 'total') });
  });
  params(
    AuditResolver,
    'auditEvents',
    Args(() => types.ListArgs),
    Ctx(),
    Info(),
  );
  Query(() => types.Page, { description: 'The audit log (needs audit:read).' })(AuditResolver.prototype, 'auditEvents', d);
  Resolver()(AuditResolver);
  return AuditResolver;
}
