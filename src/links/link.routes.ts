import Router from '@koa/router';
import type { AppState } from '../http/context.js';
import { listQuery, sendPage } from '../http/respond.js';
import { presentApplicationLink, presentLinkedApplication } from './link.presenter.js';
import type { LinkService } from './link.service.js';

/** /user/{id}/application/… and /user/{id}/role/. */
export function linkRoutes(links: LinkService): Router<AppState> {
  const router = new Router<AppState>();

  router.get('/user/:id/application', async (ctx) => {
    sendPage(ctx, await links.listApplications(ctx.state.caller, ctx.params.id, listQuery(ctx)), presentLinkedApplication);
  });
  router.post('/user/:id/application', async (ctx) => {
    ctx.body = { affected: await links.linkApplications(ctx.state.caller, ctx.params.id, ctx.request.body) };
  });
  router.delete('/user/:id/application', async (ctx) => {
    ctx.body = { affected: await links.unlinkApplications(ctx.state.caller, ctx.params.id, ctx.request.body) };
  });
  router.get('/user/:id/application/:applicationID', async (ctx) => {
    ctx.body = presentApplicationLink(await links.getApplicationLink(ctx.state.caller, ctx.params.id, ctx.params.applicationID));
  });
  router.put('/user/:id/application/:applicationID', async (ctx) => {
    const { id, applicationID } = ctx.params;
    ctx.body = presentApplicationLink(await links.updateApplicationLink(ctx.state.caller, id, applicationID, ctx.request.body));
  });

  router.get('/user/:id/role', async (ctx) => {
    sendPage(ctx, await links.listRoles(ctx.state.caller, ctx.params.id, listQuery(ctx)));
  });
  router.post('/user/:id/role', async (ctx) => {
    ctx.body = { affected: await links.linkRoles(ctx.state.caller, ctx.params.id, ctx.request.body) };
  });
  router.delete('/user/:id/role', async (ctx) => {
    ctx.body = { affected: await links.unlinkRoles(ctx.state.caller, ctx.params.id, ctx.request.body) };
  });
  return router;
}
