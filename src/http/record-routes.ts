import { parseAttrs, parseId, parseWrite, requireObject } from '../resource/input.js';
import type { Resource } from '../resource/resource.js';
import type { RecordService } from '../resource/service.js';
import {
  errors,
  header,
  json,
  listOperation,
  param,
  PREFERENCE,
  preferred,
  READ_ERRORS,
  recordSchema,
  ref,
  WRITE_ERRORS,
  writeOperation,
  writeSchema,
  type Schema,
} from './openapi-schemas.js';
import { answeredFields, listQuery, sendCount, sendCreated, sendList, sendUpdated } from './presenter.js';
import type { ApiTag, RouteSpec } from './routes.js';

/** What the routes of one record type are built from. */
export interface RecordRouteOptions<R extends Resource> {
  path: string;
  basePath: string;
  service: RecordService<R>;
  applyPath?: string;
  /** Reads of this resource may be served from the read cache. */
  cacheable?: boolean;
  /** The OpenAPI tag of its routes. */
  tag: ApiTag;
  /** What the OpenAPI descriptions add about this resource: its writes' rules, what a delete takes with it, when a restore is refused. */
  notes?: { write?: string; destroy?: string; restore?: string };
  /**
   * The schema of what a create answers with `Prefer: return=representation`, when it is not the
   * record (a webhook with its secret, answered this once): its name and schema.
   */
  created?: { name: string; schema: Schema };
}

/** What every route of one record type says and uses: its service, paths, labels, rules and schemas. */
function kitOf<R extends Resource>(options: RecordRouteOptions<R>) {
  const { path, basePath, service, tag, notes = {} } = options;
  const { resource } = service;
  const { permissions } = service;
  const { label } = resource;
  // "an application", "a user" (its u is said "you").
  const a = /^[aeio]/.test(label) ? `an ${label}` : `a ${label}`;
  const locationOf = (id: number) => `${basePath}${path}/${id}`;
  const writable = resource.writable.map(([name]) => `\`${name}\``).join(', ');
  const required = resource.writable.filter(([, f]) => f.required).map(([name]) => `\`${name}\``);
  const rules = (withRequired: boolean) =>
    [`Writable fields: ${writable}${withRequired && required.length ? `; ${required.join(' and ')} required` : ''}.`, notes.write].filter(Boolean).join(' ');
  const needs = (permission: string) => `Needs \`${permission}\`.`;
  const reserved = options.applyPath ? ` an id reserved by \`POST ${options.applyPath}/\` and not used yet (0 or null: the next id)` : '';
  const { type } = resource;
  const record = ref(type);
  const schemas = (...names: ('Create' | 'Replace' | 'Patch')[]): Record<string, Schema> => ({
    [type]: recordSchema(resource),
    ...Object.fromEntries(names.map((name) => [`${type}${name}`, writeSchema(resource, name === 'Patch' ? 'patch' : 'create', name === 'Create')])),
  });
  return { options, path, service, tag, notes, resource, permissions, label, a, locationOf, rules, needs, reserved, type, record, schemas };
}

type Kit<R extends Resource> = ReturnType<typeof kitOf<R>>;

/** GET /user/: a page of live (or with `deleted`, deleted) records. */
function listRoute<R extends Resource>({ options, path, service, tag, permissions, label, needs, record, schemas }: Kit<R>): RouteSpec {
  return {
    method: 'GET',
    path,
    permission: permissions.list,
    cacheable: options.cacheable,
    docs: {
      tag,
      trailingSlash: true,
      summary: `List ${label}s`,
      description:
        `A page of live ${label}s as a bare JSON array; \`X-Total-Count\` has the number of matches and \`Link\` the first, prev, ` +
        'next and last pages. `filter` (the expression or the JSON form), `orderBy`, `page` and `pageSize` are the list language ' +
        `of docs/rest.md; \`deleted=only|include\` lists soft-deleted ${label}s too, each with \`deletedAt\`. ${needs(permissions.list)}`,
      operation: listOperation(record, false),
      schemas: schemas(),
    },
    handle: async (ctx, caller, sql) => sendList(ctx, await service.list(caller, sql, service.parseList({ ...listQuery(ctx), deleted: ctx.query.deleted }))),
  };
}

/** POST /user/: a create, on the next id or a reserved one. */
function createRoute<R extends Resource>({
  options: { created },
  path,
  service,
  tag,
  resource,
  permissions,
  a,
  locationOf,
  rules,
  needs,
  reserved,
  type,
  record,
  schemas,
}: Kit<R>): RouteSpec {
  return {
    method: 'POST',
    path,
    permission: permissions.create,
    docs: {
      tag,
      trailingSlash: true,
      summary: `Create ${a}`,
      description:
        `Creates ${a} from the writable fields of the body (others are ignored; a writable field left out takes its default). ` +
        `${rules(true)} ${reserved ? `The body may carry \`id\`:${reserved}; any other id is a 400, an existing one a 409. ` : ''}` +
        `Answers 201 with \`Location\` and the new id, or the record with \`Prefer: return=representation\`. ${needs(permissions.create)}`,
      operation: {
        parameters: [param('Prefer')],
        requestBody: { required: true, content: json(ref(`${type}Create`)) },
        responses: {
          201: {
            description: 'The new id, or the record with Prefer: return=representation',
            headers: { Location: header('Location'), ...PREFERENCE },
            content: preferred(ref('Id'), created ? ref(created.name) : record),
          },
          ...errors(...WRITE_ERRORS),
        },
      },
      schemas: { ...schemas('Create'), ...(created ? { [created.name]: created.schema } : {}) },
    },
    async handle(ctx, caller, sql) {
      const values = parseWrite(resource, ctx.request.body, 'create');
      // Ids in bodies are JSON numbers (docs/rest.md#conventions); `0` and `null` mean no id (Go's zero value,
      // which the original's clients send for a record without one).
      const given = requireObject(ctx.request.body).id;
      const id = given === undefined || given === null || given === 0 ? undefined : parseId(typeof given === 'number' ? given : NaN);
      const record = await service.create(caller, sql, values, id, { fields: answeredFields(ctx) });
      sendCreated(ctx, locationOf(record.id), record);
    },
  };
}

/** GET /user/{id}: the live record. */
function getRoute<R extends Resource>({ options, path, service, tag, permissions, label, a, needs, record, schemas }: Kit<R>): RouteSpec {
  return {
    method: 'GET',
    path: `${path}/:id`,
    permission: permissions.get,
    cacheable: options.cacheable,
    docs: {
      tag,
      summary: `Get ${a}`,
      description: `The live ${label} with this id; 404 when there is none or it is deleted. ${needs(permissions.get)}`,
      operation: { parameters: [param('id')], responses: { 200: { description: `The ${label}`, content: json(record) }, ...errors(...READ_ERRORS) } },
      schemas: schemas(),
    },
    handle: async (ctx, caller, sql) => {
      ctx.body = await service.get(caller, sql, parseId(ctx.params.id));
    },
  };
}

/** PUT /user/{id}: every writable field; a create on a reserved id. */
function replaceRoute<R extends Resource>({
  path,
  service,
  tag,
  resource,
  permissions,
  label,
  a,
  locationOf,
  rules,
  needs,
  reserved,
  type,
  record,
  schemas,
}: Kit<R>): RouteSpec {
  return {
    method: 'PUT',
    path: `${path}/:id`,
    permission: permissions.replace,
    docs: {
      tag,
      summary: `Replace ${a}`,
      description:
        `Writes every writable field from the body (a field left out takes its default). ${rules(true)} ` +
        `${reserved ? `On${reserved.replace(/ \(0 or null: the next id\)$/, '')}, creates the ${label} (201 with \`Location\`). ` : ''}` +
        `Answers \`1\`, or the record with \`Prefer: return=representation\`; 404 when no live ${label} has this id. ${needs(permissions.replace)}`,
      operation: replaceOperation(ref(`${type}Replace`), record),
      schemas: schemas('Replace'),
    },
    async handle(ctx, caller, sql) {
      const id = parseId(ctx.params.id);
      const { record, created } = await service.replace(caller, sql, id, parseWrite(resource, ctx.request.body, 'replace'), { fields: answeredFields(ctx) });
      if (created) sendCreated(ctx, locationOf(id), record, { byUpdate: true });
      else sendUpdated(ctx, record);
    },
  };
}

/** PATCH /user/{id}: the fields given (or named by Attrs). */
function patchRoute<R extends Resource>({ path, service, tag, resource, permissions, a, rules, needs, type, record, schemas }: Kit<R>): RouteSpec {
  return {
    method: 'PATCH',
    path: `${path}/:id`,
    permission: permissions.patch,
    docs: {
      tag,
      summary: `Change some fields of ${a}`,
      description:
        'Writes the writable fields present in the body. With `Attrs`, exactly the fields it names, from the body: a named field ' +
        'missing from the body takes its default, read-only names are skipped, any other name is a 400. ' +
        `${rules(false)} Answers \`1\` (also when nothing changed), or the record with \`Prefer: return=representation\`. ${needs(permissions.patch)}`,
      operation: writeOperation(ref(`${type}Patch`), record, [param('Attrs')]),
      schemas: schemas('Patch'),
    },
    async handle(ctx, caller, sql) {
      const id = parseId(ctx.params.id);
      const values = parseWrite(resource, ctx.request.body, 'patch', parseAttrs(ctx.get('Attrs') || undefined, resource));
      sendUpdated(ctx, await service.patch(caller, sql, id, values, 'patch', { fields: answeredFields(ctx) }));
    },
  };
}

/** DELETE /user/{id}: a soft delete. */
function destroyRoute<R extends Resource>({ path, service, tag, notes, permissions, label, a, needs }: Kit<R>): RouteSpec {
  return {
    method: 'DELETE',
    path: `${path}/:id`,
    permission: permissions.destroy,
    docs: {
      tag,
      summary: `Delete ${a}`,
      description:
        `Soft-deletes the ${label}: it leaves every read, list and count, and \`POST ${path}/{id}/restore\` brings it back. ` +
        `${notes.destroy ? `${notes.destroy} ` : ''}Answers \`1\`; 404 when no live ${label} has this id. ${needs(permissions.destroy)}`,
      operation: { parameters: [param('id')], responses: { 200: { description: '`1`', content: json(ref('One')) }, ...errors(...READ_ERRORS) } },
    },
    async handle(ctx, caller, sql) {
      await service.destroy(caller, sql, parseId(ctx.params.id));
      sendCount(ctx, 1);
    },
  };
}

/** POST /user/{id}/restore: a soft-deleted record back; answers as an update does (`1`, or the record with Prefer: return=representation). */
function restoreRoute<R extends Resource>({ path, service, tag, notes, permissions, label, needs, record, schemas }: Kit<R>): RouteSpec {
  return {
    method: 'POST',
    path: `${path}/:id/restore`,
    permission: permissions.restore,
    docs: {
      tag,
      summary: `Restore a deleted ${label}`,
      description:
        `Brings a soft-deleted ${label} back; what its delete took with it stays deleted. 409 when it is not deleted. ` +
        `${notes.restore ? `${notes.restore} ` : ''}Answers \`1\`, or the record with \`Prefer: return=representation\`. ${needs(permissions.restore)}`,
      operation: {
        parameters: [param('id'), param('Prefer')],
        responses: {
          200: { description: '`1`, or the restored record with Prefer: return=representation', headers: PREFERENCE, content: preferred(ref('One'), record) },
          ...errors(400, 401, 403, 404, 409, 503),
        },
      },
      schemas: schemas(),
    },
    handle: async (ctx, caller, sql) => sendUpdated(ctx, await service.restore(caller, sql, parseId(ctx.params.id))),
  };
}

/** POST /apply/user/id/: the next id reserved (where the seed has it). */
function applyRoute<R extends Resource>({ path, service, tag, permissions, label, a, needs }: Kit<R>, applyPath: string): RouteSpec {
  return {
    method: 'POST',
    path: applyPath,
    permission: permissions.applyId,
    docs: {
      tag,
      trailingSlash: true,
      summary: `Reserve the next ${label} id`,
      description:
        `Takes the next id from the sequence that creating ${a} uses; no id is handed out twice. Create the ${label} with it by ` +
        `\`POST ${path}/\` with the \`id\` or by \`PUT ${path}/{id}\`: a create a client can safely retry. A body is optional and ` +
        `ignored. Answers 201 with the id, a bare number. ${needs(permissions.applyId)}`,
      operation: {
        requestBody: { required: false, content: json({ description: 'ignored' }) },
        responses: { 201: { description: 'The reserved id', content: json(ref('Id')) }, ...errors(400, 401, 403, 405, 413, 415, 503) },
      },
    },
    handle: async (ctx, caller, sql) => sendCount(ctx, await service.applyId(caller, sql), 201),
  };
}

/**
 * The REST routes every record type shares (docs/rest.md#conventions): list, create (with a reserved id or not),
 * get, update (PUT, which creates on a reserved id), patch (with Attrs), destroy, restore (
 * docs/rest.md#deleted-records-restore-and-deletedonlyinclude), and, where the seed has it, apply id. Each parses its input, calls the record's service and
 * answers in the original service's dialect (presenter.ts).
 */
export function recordRoutes<R extends Resource>(options: RecordRouteOptions<R>): RouteSpec[] {
  const kit = kitOf(options);
  const routes = [listRoute(kit), createRoute(kit), getRoute(kit), replaceRoute(kit), patchRoute(kit), destroyRoute(kit), restoreRoute(kit)];
  return options.applyPath ? [...routes, applyRoute(kit, options.applyPath)] : routes;
}

/** PUT of a record: a write, which creates the record on an id reserved by "apply id" (201). */
function replaceOperation(body: Schema, record: Schema): Schema {
  const operation = writeOperation(body, record);
  (operation.responses as Schema)[201] = {
    description: 'Created on a reserved id: `1`, or the record',
    headers: { Location: header('Location'), ...PREFERENCE },
    content: preferred(ref('One'), record),
  };
  return operation;
}
