import { errors, json, param, READ_ERRORS, ref } from '../http/openapi-schemas.js';
import { recordRoutes } from '../http/record-routes.js';
import { compileQuery } from '../list/list.js';
import type { ApiTag, RouteSpec } from '../http/routes.js';
import type { TokenService } from './token.service.js';

const TAG: ApiTag = {
  name: 'tokens',
  description:
    'Access token records (the seed’s Token). A caller can grant only scopes it holds, and change, delete or restore only tokens whose scope it could have granted.',
};

/** /token/… and /apply/token/id/, and DELETE /token/?filter=… (bulk revoke). Token reads are never cached (they expire by the clock). */
export function tokenRoutes(tokens: TokenService, basePath: string): RouteSpec[] {
  return [
    ...recordRoutes({
      path: '/token',
      basePath,
      service: tokens,
      applyPath: '/apply/token/id',
      tag: TAG,
      notes: {
        write:
          '`userID` must name a live user; `accessToken` (visible ASCII, no spaces) must be unique among live tokens (409); `scope` may hold ' +
          'only the words the caller could grant (403). The service sets `client` (from `X-Client` or `User-Agent`) and `version`.',
        destroy: 'The token stops authenticating on the next request.',
        restore: 'Also 409 when its user is deleted (restore the user first) or a live token holds its `accessToken`.',
      },
    }),
    {
      method: 'DELETE',
      path: '/token',
      permission: tokens.permissions.destroyMatching,
      docs: {
        tag: TAG,
        trailingSlash: true,
        summary: 'Revoke every token matching a filter',
        description:
          'Soft-deletes every live token matching `filter` (either form of the list language). Tokens whose scope the caller could not ' +
          'have granted are left alone and counted in `skipped`. An absent, blank or empty filter is a 400: it never means every token. ' +
          'Needs `token:write`.',
        operation: {
          parameters: [{ ...param('filter'), required: true }],
          responses: {
            200: {
              description: 'Tokens revoked, and matching tokens skipped (scopes this token could not have granted)',
              content: json(ref('BulkRevocation')),
            },
            ...errors(...READ_ERRORS),
          },
        },
        schemas: {
          BulkRevocation: { type: 'object', required: ['revoked', 'skipped'], properties: { revoked: { type: 'integer' }, skipped: { type: 'integer' } } },
        },
      },
      handle: async (ctx, caller, sql) => {
        // Absent or blank: no condition, which the service refuses (never every token).
        const { filter } = ctx.query;
        const blank = filter === undefined || (typeof filter === 'string' && filter.trim() === '');
        ctx.body = await tokens.destroyMatching(caller, sql, blank ? null : compileQuery({ filter }, tokens.listFields).where);
      },
    },
  ];
}
