import Router from '@koa/router';
import type { AppState } from '../http/context.js';
import { listQuery, sendCount, sendList, sendUpdated } from '../http/respond.js';
import { presentApplicationLink, presentLinkedApplication } from './link.presenter.js';
import type { LinkService } from './link.service.js';

/** /user/{id}/application/… and /user/{id}/role/. */
export function linkRoutes(links: LinkService): Router<AppState> {
  const router = new Router<AppState>();

  router.get('/user/:id/application', async (ctx) => {
    sendList(ctx, await links.listApplications(ctx.state.caller, ctx.params.id, listQuery(ctx)), presentLinkedApplication);
  });
  router.post('/user/:id/application', async (ctx) => {
    sendCount(ctx, await links.linkApplications(ctx.state.caller, ctx.params.id, ctx.request.body), 201);
  });
  router.delete('/user/:id/application', async (ctx) => {
    sendCount(ctx, await links.unlinkApplications(ctx.state.caller, ctx.params.id, ctx.request.body));
  });
  router.get('/user/:id/application/:applicationID', async (ctx) => {
    ctx.body = presentApplicationLink(await links.getApplicationLink(ctx.state.caller, ctx.params.id, ctx.params.applicationID));
  });
  router.put('/user/:id/application/:applicationID', async (ctx) => {
    const { id, applicationID } = ctx.params;
    sendUpdated(ctx, await links.updateApplicationLink(ctx.state.caller, id, applicationID, ctx.request.body), presentApplicationLink);
  });

  router.get('/user/:id/role', async (ctx) => {
    sendList(ctx, await links.listRoles(ctx.state.caller, ctx.params.id, listQuery(ctx)));
  });
  router.post('/user/:id/role', async (ctx) => {
    sendCount(ctx, await links.linkRoles(ctx.state.caller, ctx.params.id, ctx.request.body), 201);
  });
  router.delete('/user/:id/role', async (ctx) => {
    sendCount(ctx, await links.unlinkRoles(ctx.state.caller, ctx.params.id, ctx.request.body));
  });
  return router;
}
