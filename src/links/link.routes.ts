import { applications } from '../applications/application.resource.js';
import {
  errors,
  json,
  linkedSchema,
  listOperation,
  param,
  READ_ERRORS,
  ref,
  scalar,
  WRITE_ERRORS,
  writeOperation,
  writeSchema,
  type Schema,
} from '../http/openapi-schemas.js';
import { listQuery, sendCount, sendList, sendUpdated } from '../http/presenter.js';
import type { ApiTag, RouteSpec } from '../http/routes.js';
import { compileList, type Page } from '../list/list.js';
import { field } from '../resource/field.js';
import { parseId, parseWrite } from '../resource/input.js';
import { defineBody } from '../resource/resource.js';
import { roles } from '../roles/role.resource.js';
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

const TAG: ApiTag = {
  name: 'links',
  description: 'A user’s links to applications (each with a numeric `right`) and to roles: list, link, unlink, and an application link’s `right`.',
};

const APPLICATION_LINK: Schema = {
  type: 'object',
  required: ['userID', 'applicationID', 'right', 'createdAt', 'updatedAt'],
  properties: { userID: scalar('id'), applicationID: scalar('id'), right: scalar('safeInt'), createdAt: scalar('date'), updatedAt: scalar('date') },
};

/** A link or unlink: a list of ids, answered by how many links changed. */
const changeOperation = (status: number): Schema => ({
  parameters: [param('id')],
  requestBody: { required: true, content: json(ref('IdList')) },
  responses: { [status]: { description: 'How many links changed', content: json(ref('Count')) }, ...errors(...WRITE_ERRORS) },
});

/** What the routes of one kind of link (applications, roles) call, and how a listed item looks. */
interface LinkKind<T> {
  /** `application` in /user/{id}/application and in the body's `applicationIDs`. */
  target: 'application' | 'role';
  listFields: Parameters<typeof compileList>[1];
  list: (...args: Parameters<LinkService['listRoles']>) => Promise<Page<T>>;
  link: LinkService['linkRoles'];
  unlink: LinkService['unlinkRoles'];
  present?: (item: T) => unknown;
  /** The OpenAPI schema of a listed item, and its name. */
  item: { name: string; schema: Schema };
}

/** GET (list), POST (link) and DELETE (unlink) /user/{id}/<target>: the same three routes for each kind of link. */
function linkListRoutes<T>(kind: LinkKind<T>): RouteSpec[] {
  const path = `/user/:id/${kind.target}`;
  const idsField = `${kind.target}IDs`;
  const { target } = kind;
  const ids = (unknown: string) =>
    `The body is a JSON array of at most 1000 ${target} ids; duplicates count once. ${unknown} 404 when no live user has the path's id. ` +
    'Needs `user:write`.';
  return [
    {
      method: 'GET',
      path,
      permission: 'user:read',
      cacheable: true,
      docs: {
        tag: TAG,
        trailingSlash: true,
        summary: `List a user’s ${target}s`,
        description:
          `A page of the live ${target}s linked to the user${target === 'application' ? ', each with the link’s `right`' : ''}, as a bare JSON ` +
          'array with `X-Total-Count` and `Link`; the list language of docs/rest.md over the linked record’s fields' +
          `${target === 'application' ? ' and `right`' : ''}. 404 when no live user has this id. Needs \`user:read\`.`,
        operation: listOperation(ref(kind.item.name), true),
        schemas: { [kind.item.name]: kind.item.schema },
      },
      async handle(ctx, caller, sql) {
        sendList(ctx, await kind.list(caller, sql, parseId(ctx.params.id), compileList(listQuery(ctx), kind.listFields)), kind.present);
      },
    },
    {
      method: 'POST',
      path,
      permission: 'user:write',
      docs: {
        tag: TAG,
        trailingSlash: true,
        summary: `Link ${target}s to a user`,
        description:
          `Links the user to the ${target}s of the body; ids already linked are left alone${target === 'application' ? ', a new link starts with `right` 0' : ''}. ` +
          `Answers 201 with how many links were made. ${ids(`If any id names no live ${target}, nothing is linked and the 400 lists the unknown ids;`)}`,
        operation: changeOperation(201),
      },
      async handle(ctx, caller, sql) {
        sendCount(ctx, await kind.link(caller, sql, parseId(ctx.params.id), parseIdList(ctx.request.body, idsField)), 201);
      },
    },
    {
      method: 'DELETE',
      path,
      permission: 'user:write',
      docs: {
        tag: TAG,
        trailingSlash: true,
        summary: `Unlink ${target}s from a user`,
        description: `Removes the user's links to the ${target}s of the body; an id not linked (or of no ${target}) is left alone. Answers how many links were removed. ${ids('')}`,
        operation: changeOperation(200),
      },
      async handle(ctx, caller, sql) {
        sendCount(ctx, await kind.unlink(caller, sql, parseId(ctx.params.id), parseIdList(ctx.request.body, idsField)));
      },
    },
  ];
}

/** /user/{id}/application/… and /user/{id}/role/. */
export function linkRoutes(links: LinkService): RouteSpec[] {
  return [
    ...linkListRoutes({
      target: 'application',
      listFields: USER_APPLICATION_LIST_FIELDS,
      list: links.listApplications,
      link: links.linkApplications,
      unlink: links.unlinkApplications,
      present: presentLinkedApplication,
      item: { name: 'LinkedApplication', schema: linkedSchema(USER_APPLICATION_LIST_FIELDS, applications, ['applicationID']) },
    }),
    {
      method: 'GET',
      path: '/user/:id/application/:applicationID',
      permission: 'user:read',
      cacheable: true,
      docs: {
        tag: TAG,
        summary: 'Get a user’s link to an application',
        description: 'The link, with its `right`; 404 when the user is not linked to the application (or either is not live). Needs `user:read`.',
        operation: {
          parameters: [param('id'), param('applicationID')],
          responses: { 200: { description: 'The link', content: json(ref('ApplicationLink')) }, ...errors(...READ_ERRORS) },
        },
        schemas: { ApplicationLink: APPLICATION_LINK },
      },
      async handle(ctx, caller, sql) {
        const id = parseId(ctx.params.id);
        ctx.body = presentLink(await links.getApplicationLink(caller, sql, id, parseId(ctx.params.applicationID, 'applicationID')));
      },
    },
    {
      method: 'PUT',
      path: '/user/:id/application/:applicationID',
      permission: 'user:write',
      docs: {
        tag: TAG,
        summary: 'Set the right of a user’s link to an application',
        description:
          'Sets the link’s `right` (any safe integer: the original service’s RBAC bit mask). Never creates a link: 404 when the user is ' +
          'not linked to the application. Answers `1`, or the link with `Prefer: return=representation`. Needs `user:write`.',
        operation: writeOperation(ref('LinkRight'), ref('ApplicationLink'), [param('applicationID')]),
        schemas: { LinkRight: writeSchema(LINK_RIGHT_BODY, 'create'), ApplicationLink: APPLICATION_LINK },
      },
      async handle(ctx, caller, sql) {
        const id = parseId(ctx.params.id);
        const applicationId = parseId(ctx.params.applicationID, 'applicationID');
        const { right } = parseWrite(LINK_RIGHT_BODY, ctx.request.body, 'create') as { right: number };
        sendUpdated(ctx, await links.updateApplicationLink(caller, sql, id, applicationId, right), presentLink);
      },
    },
    ...linkListRoutes({
      target: 'role',
      listFields: USER_ROLE_LIST_FIELDS,
      list: links.listRoles,
      link: links.linkRoles,
      unlink: links.unlinkRoles,
      item: { name: 'LinkedRole', schema: linkedSchema(USER_ROLE_LIST_FIELDS, roles) },
    }),
  ];
}
