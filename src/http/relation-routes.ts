import { compileList } from '../list/list.js';
import { defaultOf, parseId, parseIdList, parseWrite } from '../resource/input.js';
import type { Relation } from '../resource/relation.js';
import type { RelationItem, RelationService } from '../resource/relation-service.js';
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
} from './openapi-schemas.js';
import { listQuery, sendCount, sendList, sendUpdated } from './presenter.js';
import type { ApiTag, RouteSpec } from './routes.js';

/**
 * A relation over REST (src/resource/relation.ts), below its parent's path: GET (list), POST
 * (link) and DELETE (unlink) /user/{id}/application/, and for a relation with link fields GET and
 * PUT of one link, /user/{id}/application/{applicationID}; each with its OpenAPI docs. The wire
 * shapes are the original service's: a listed item is the child's record with the link's fields
 * (`{id, name, …, right}`), a link `{userID, applicationID, right, createdAt, updatedAt}`.
 */
export interface RelationRouteOptions {
  tag: ApiTag;
  /** What the description of a change of a link's fields says of them (`(any safe integer: …)`). */
  linkFieldsNote?: string;
}

const a = (label: string) => (/^[aeio]/.test(label) ? `an ${label}` : `a ${label}`);
const code = (names: readonly string[]) => names.map((name) => `\`${name}\``).join(' and ');

/** REST's shapes of a relation's items. */
function presenters(relation: Relation) {
  const names = relation.linkEntries.map(([name]) => name);
  const linkValues = (item: RelationItem) => Object.fromEntries(names.map((name) => [name, item[name]]));
  return {
    /** An item of a parent's list: the child, with the link's fields. */
    listed: names.length ? (item: RelationItem) => ({ ...(item[relation.child.name] as object), ...linkValues(item) }) : undefined,
    /** One link. */
    link: (item: RelationItem) => ({
      [relation.parentIdField]: item[relation.parentIdField],
      [relation.childIdField]: item[relation.childIdField],
      ...linkValues(item),
      createdAt: item.createdAt,
      updatedAt: item.updatedAt,
    }),
  };
}

/** The OpenAPI schemas of a relation: its listed items, its link and a link's body. */
function schemasOf(relation: Relation) {
  const { child } = relation;
  const linked = linkedSchema(relation.listFields, child, relation.linkEntries.length ? [relation.childIdField] : []);
  const link: Schema = {
    type: 'object',
    required: [relation.parentIdField, relation.childIdField, ...relation.linkEntries.map(([name]) => name), 'createdAt', 'updatedAt'],
    properties: {
      [relation.parentIdField]: scalar('id'),
      [relation.childIdField]: scalar('id'),
      ...Object.fromEntries(relation.linkEntries.map(([name, field]) => [name, scalar(field.kind)])),
      createdAt: scalar('date'),
      updatedAt: scalar('date'),
    },
  };
  const bodyName = `Link${relation.linkEntries.map(([name]) => name[0].toUpperCase() + name.slice(1)).join('')}`;
  return {
    listed: { name: `Linked${child.type}`, schema: linked },
    link: { name: `${child.type}Link`, schema: link },
    body: { name: bodyName, schema: relation.linkBody ? writeSchema(relation.linkBody, 'create') : null },
  };
}

/** A link or unlink: a list of ids, answered by how many links changed. */
const changeOperation = (status: number): Schema => ({
  parameters: [param('id')],
  requestBody: { required: true, content: json(ref('IdList')) },
  responses: { [status]: { description: 'How many links changed', content: json(ref('Count')) }, ...errors(...WRITE_ERRORS) },
});

/** GET (list), POST (link) and DELETE (unlink) of a parent's children. */
function listRoutes(relation: Relation, service: RelationService, { tag }: RelationRouteOptions): RouteSpec[] {
  const { parent, child } = relation;
  const target = child.label;
  const path = `/${parent.name}/:id/${child.name}`;
  const idsField = `${relation.childIdField}s`;
  const names = relation.linkEntries.map(([name]) => name);
  const { list: read, change: write } = service.permissions;
  const present = presenters(relation);
  const schemas = schemasOf(relation);
  const ids = (unknown: string) =>
    `The body is a JSON array of at most 1000 ${target} ids; duplicates count once. ${unknown} 404 when no live ${parent.label} has the path's id. ` +
    `Needs \`${write}\`.`;
  const fresh = relation.linkEntries.map(([name, field]) => `\`${name}\` ${String(defaultOf(field))}`).join(' and ');
  return [
    {
      method: 'GET',
      path,
      permission: read,
      cacheable: true,
      docs: {
        tag,
        trailingSlash: true,
        summary: `List ${a(parent.label)}’s ${target}s`,
        description:
          `A page of the live ${target}s linked to the ${parent.label}${names.length ? `, each with the link’s ${code(names)}` : ''}, as a bare JSON ` +
          'array with `X-Total-Count` and `Link`; the list language of docs/rest.md over the linked record’s fields' +
          `${names.length ? ` and ${code(names)}` : ''}. 404 when no live ${parent.label} has this id. Needs \`${read}\`.`,
        operation: listOperation(ref(schemas.listed.name), true),
        schemas: { [schemas.listed.name]: schemas.listed.schema },
      },
      async handle(ctx, caller, sql) {
        sendList(ctx, await service.list(caller, sql, parseId(ctx.params.id), compileList(listQuery(ctx), relation.listFields)), present.listed);
      },
    },
    {
      method: 'POST',
      path,
      permission: write,
      docs: {
        tag,
        trailingSlash: true,
        summary: `Link ${target}s to ${a(parent.label)}`,
        description:
          `Links the ${parent.label} to the ${target}s of the body; ids already linked are left alone${fresh ? `, a new link starts with ${fresh}` : ''}. ` +
          `Answers 201 with how many links were made. ${ids(`If any id names no live ${target}, nothing is linked and the 400 lists the unknown ids;`)}`,
        operation: changeOperation(201),
      },
      async handle(ctx, caller, sql) {
        sendCount(ctx, await service.link(caller, sql, parseId(ctx.params.id), parseIdList(ctx.request.body, idsField)), 201);
      },
    },
    {
      method: 'DELETE',
      path,
      permission: write,
      docs: {
        tag,
        trailingSlash: true,
        summary: `Unlink ${target}s from ${a(parent.label)}`,
        description: `Removes the ${parent.label}'s links to the ${target}s of the body; an id not linked (or of no ${target}) is left alone. Answers how many links were removed. ${ids('')}`,
        operation: changeOperation(200),
      },
      async handle(ctx, caller, sql) {
        sendCount(ctx, await service.unlink(caller, sql, parseId(ctx.params.id), parseIdList(ctx.request.body, idsField)));
      },
    },
  ];
}

/** GET and PUT of one link (a relation with link fields). */
function linkRoutes(relation: Relation, service: RelationService, { tag, linkFieldsNote }: RelationRouteOptions): RouteSpec[] {
  const { parent, child, linkBody } = relation;
  if (!linkBody) return [];
  const path = `/${parent.name}/:id/${child.name}/:${relation.childIdField}`;
  const names = relation.linkEntries.map(([name]) => name);
  const { list: read, change: write } = service.permissions;
  const present = presenters(relation);
  const schemas = schemasOf(relation);
  const childIdOf = (raw: unknown) => parseId(raw, relation.childIdField);
  return [
    {
      method: 'GET',
      path,
      permission: read,
      cacheable: true,
      docs: {
        tag,
        summary: `Get ${a(parent.label)}’s link to ${a(child.label)}`,
        description: `The link, with its ${code(names)}; 404 when the ${parent.label} is not linked to the ${child.label} (or either is not live). Needs \`${read}\`.`,
        operation: {
          parameters: [param('id'), param(relation.childIdField)],
          responses: { 200: { description: 'The link', content: json(ref(schemas.link.name)) }, ...errors(...READ_ERRORS) },
        },
        schemas: { [schemas.link.name]: schemas.link.schema },
      },
      async handle(ctx, caller, sql) {
        const id = parseId(ctx.params.id);
        const childId = childIdOf(ctx.params[relation.childIdField]);
        const lookup = await service.find(caller, sql, id, childId);
        if (!lookup.parent || !lookup.link) throw service.notFound(lookup, id, childId);
        ctx.body = present.link(lookup.link);
      },
    },
    {
      method: 'PUT',
      path,
      permission: write,
      docs: {
        tag,
        summary: `Set the ${names.join(' and ')} of ${a(parent.label)}’s link to ${a(child.label)}`,
        description:
          `Sets the link’s ${code(names)}${linkFieldsNote ? ` ${linkFieldsNote}` : ''}. Never creates a link: 404 when the ${parent.label} is ` +
          `not linked to the ${child.label}. Answers \`1\`, or the link with \`Prefer: return=representation\`. Needs \`${write}\`.`,
        operation: writeOperation(ref(schemas.body.name), ref(schemas.link.name), [param(relation.childIdField)]),
        schemas: { [schemas.body.name]: schemas.body.schema!, [schemas.link.name]: schemas.link.schema },
      },
      async handle(ctx, caller, sql) {
        const id = parseId(ctx.params.id);
        const childId = childIdOf(ctx.params[relation.childIdField]);
        const values = parseWrite(linkBody, ctx.request.body, 'create');
        sendUpdated(ctx, await service.update(caller, sql, id, childId, values), present.link);
      },
    },
  ];
}

/** The REST routes of a relation: its list, link and unlink, then those of one link. */
export const relationRoutes = (relation: Relation, service: RelationService, options: RelationRouteOptions): RouteSpec[] => [
  ...listRoutes(relation, service, options),
  ...linkRoutes(relation, service, options),
];
