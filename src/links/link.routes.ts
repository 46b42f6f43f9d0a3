import { listQuery, sendCount, sendList, sendUpdated } from '../http/presenter.js';
import type { RouteSpec } from '../http/routes.js';
import { compileList } from '../list/list.js';
import { field } from '../resource/field.js';
import { parseId, parseWrite } from '../resource/input.js';
import { defineBody } from '../resource/resource.js';
import { parseIdList, USER_APPLICATION_LIST_FIELDS, USER_ROLE_LIST_FIELDS, type ApplicationLinkRecord, type LinkService } from './link.service.js';

/** The body of PUT /user/{id}/application/{applicationID}. */
export const LINK_RIGHT_BODY = defineBody({ right: field.safeInt({ required: true }) });

/** GET /user/{id}/application/{applicationID}: the link itself. */
const presentLink = (link: ApplicationLinkRecord) => ({
  userID: link.userID,
  applicationID: link.applicationID,
  right: link.right,
  createdAt: link.createdAt,
  updatedAt: link.updatedAt,
});

/** An item of GET /user/{id}/application/: the application, with the link's right. */
const presentLinkedApplication = (link: ApplicationLinkRecord) => ({ ...link.application, right: link.right });

/** /user/{id}/application/… and /user/{id}/role/. */
export function linkRoutes(links: LinkService): RouteSpec[] {
  return [
    {
      method: 'GET',
      path: '/user/:id/application',
      permission: 'user:read',
      cacheable: true,
      async handle(ctx, caller, sql) {
        const id = parseId(ctx.params.id);
        sendList(ctx, await links.listApplications(caller, sql, id, compileList(listQuery(ctx), USER_APPLICATION_LIST_FIELDS)), presentLinkedApplication);
      },
    },
    {
      method: 'POST',
      path: '/user/:id/application',
      permission: 'user:write',
      async handle(ctx, caller, sql) {
        const id = parseId(ctx.params.id);
        sendCount(ctx, await links.linkApplications(caller, sql, id, parseIdList(ctx.request.body, 'applicationIDs')), 201);
      },
    },
    {
      method: 'DELETE',
      path: '/user/:id/application',
      permission: 'user:write',
      async handle(ctx, caller, sql) {
        const id = parseId(ctx.params.id);
        sendCount(ctx, await links.unlinkApplications(caller, sql, id, parseIdList(ctx.request.body, 'applicationIDs')));
      },
    },
    {
      method: 'GET',
      path: '/user/:id/application/:applicationID',
      permission: 'user:read',
      cacheable: true,
      async handle(ctx, caller, sql) {
        const id = parseId(ctx.params.id);
        ctx.body = presentLink(await links.getApplicationLink(caller, sql, id, parseId(ctx.params.applicationID, 'applicationID')));
      },
    },
    {
      method: 'PUT',
      path: '/user/:id/application/:applicationID',
      permission: 'user:write',
      async handle(ctx, caller, sql) {
        const id = parseId(ctx.params.id);
        const applicationId = parseId(ctx.params.applicationID, 'applicationID');
        const { right } = parseWrite(LINK_RIGHT_BODY, ctx.request.body, 'create') as { right: number };
        sendUpdated(ctx, await links.updateApplicationLink(caller, sql, id, applicationId, right), presentLink);
      },
    },
    {
      method: 'GET',
      path: '/user/:id/role',
      permission: 'user:read',
      cacheable: true,
      async handle(ctx, caller, sql) {
        const id = parseId(ctx.params.id);
        sendList(ctx, await links.listRoles(caller, sql, id, compileList(listQuery(ctx), USER_ROLE_LIST_FIELDS)));
      },
    },
    {
      method: 'POST',
      path: '/user/:id/role',
      permission: 'user:write',
      async handle(ctx, caller, sql) {
        const id = parseId(ctx.params.id);
        sendCount(ctx, await links.linkRoles(caller, sql, id, parseIdList(ctx.request.body, 'roleIDs')), 201);
      },
    },
    {
      method: 'DELETE',
      path: '/user/:id/role',
      permission: 'user:write',
      async handle(ctx, caller, sql) {
        const id = parseId(ctx.params.id);
        sendCount(ctx, await links.unlinkRoles(caller, sql, id, parseIdList(ctx.request.body, 'roleIDs')));
      },
    },
  ];
}
