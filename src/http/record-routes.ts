import { parseAttrs, parseId, parseWrite, requireObject } from '../resource/input.js';
import type { Resource } from '../resource/resource.js';
import type { RecordService } from '../resource/service.js';
import { listQuery, sendCount, sendCreated, sendList, sendUpdated } from './presenter.js';
import type { RouteSpec } from './routes.js';

/**
 * The REST routes every record type shares (docs/rest.md#conventions): list, create (with a reserved id or not),
 * get, update (PUT, which creates on a reserved id), patch (with Attrs), destroy, restore (
 * docs/rest.md#deleted-records-restore-and-deletedonlyinclude), and, where the seed has it, apply id. Each parses its input, calls the record's service and
 * answers in the original service's dialect (presenter.ts).
 */
export function recordRoutes<R extends Resource>(options: {
  path: string;
  basePath: string;
  service: RecordService<R>;
  applyPath?: string;
  /** Reads of this resource may be served from the read cache. */
  cacheable?: boolean;
}): RouteSpec[] {
  const { path, basePath, service } = options;
  const { resource } = service;
  const { read, write } = resource.permissions;
  const locationOf = (id: number) => `${basePath}${path}/${id}`;
  const routes: RouteSpec[] = [
    {
      method: 'GET',
      path,
      permission: read,
      cacheable: options.cacheable,
      handle: async (ctx, caller, sql) => sendList(ctx, await service.list(caller, sql, service.parseList({ ...listQuery(ctx), deleted: ctx.query.deleted }))),
    },
    {
      method: 'POST',
      path,
      permission: write,
      async handle(ctx, caller, sql) {
        const values = parseWrite(resource, ctx.request.body, 'create');
        // Ids in bodies are JSON numbers (docs/rest.md#conventions); `0` and `null` mean no id (Go's zero value,
        // which the original's clients send for a record without one).
        const given = requireObject(ctx.request.body).id;
        const id = given === undefined || given === null || given === 0 ? undefined : parseId(typeof given === 'number' ? given : NaN);
        const record = await service.create(caller, sql, values, id);
        sendCreated(ctx, locationOf(record.id), record);
      },
    },
    {
      method: 'GET',
      path: `${path}/:id`,
      permission: read,
      cacheable: options.cacheable,
      handle: async (ctx, caller, sql) => {
        ctx.body = await service.get(caller, sql, parseId(ctx.params.id));
      },
    },
    {
      method: 'PUT',
      path: `${path}/:id`,
      permission: write,
      async handle(ctx, caller, sql) {
        const id = parseId(ctx.params.id);
        const { record, created } = await service.replace(caller, sql, id, parseWrite(resource, ctx.request.body, 'replace'));
        if (created) sendCreated(ctx, locationOf(id), record, { byUpdate: true });
        else sendUpdated(ctx, record);
      },
    },
    {
      method: 'PATCH',
      path: `${path}/:id`,
      permission: write,
      async handle(ctx, caller, sql) {
        const id = parseId(ctx.params.id);
        const values = parseWrite(resource, ctx.request.body, 'patch', parseAttrs(ctx.get('Attrs') || undefined, resource));
        sendUpdated(ctx, await service.patch(caller, sql, id, values));
      },
    },
    {
      method: 'DELETE',
      path: `${path}/:id`,
      permission: write,
      async handle(ctx, caller, sql) {
        await service.destroy(caller, sql, parseId(ctx.params.id));
        sendCount(ctx, 1);
      },
    },
    // Answers as an update does: `1`, or the restored record with Prefer: return=representation.
    {
      method: 'POST',
      path: `${path}/:id/restore`,
      permission: write,
      handle: async (ctx, caller, sql) => sendUpdated(ctx, await service.restore(caller, sql, parseId(ctx.params.id))),
    },
  ];
  if (options.applyPath) {
    routes.push({
      method: 'POST',
      path: options.applyPath,
      permission: write,
      handle: async (ctx, caller, sql) => sendCount(ctx, await service.applyId(caller, sql), 201),
    });
  }
  return routes;
}
