import Router from '@koa/router';
import type { AppState } from '../http/context.js';
import { listQuery, sendList } from '../http/respond.js';
import type { AuditService } from './audit.service.js';

/** GET /audit/: the audit log, with the list language (permission audit:read). */
export function auditRoutes(audit: AuditService): Router<AppState> {
  const router = new Router<AppState>();
  router.get('/audit', async (ctx) => {
    sendList(ctx, await audit.list(ctx.state.caller, listQuery(ctx)));
  });
  return router;
}
