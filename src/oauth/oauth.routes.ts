import { AppError } from '../errors.js';
import type { ApiTag, RouteSpec } from '../http/routes.js';
import type { LinkService } from '../links/link.service.js';
import { parseId } from '../resource/input.js';
import type { TokenService } from '../tokens/token.service.js';

/** The `token` parameter of an RFC 7662/7009 request. */
function tokenOf(body: unknown): string {
  const value = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).token : undefined;
  if (typeof value !== 'string' || value === '') {
    throw AppError.invalid([{ field: 'token', message: 'is required: the access token value, as token=… (form) or {"token": …} (JSON)' }]);
  }
  return value;
}

const TAG: ApiTag = {
  name: 'token platform',
  description: 'Calls other services make with tokens: RFC 7662 introspection, RFC 7009 revocation, and the original family’s authorize.',
};

/**
 * The calls other services make (docs/rest.md#token-platform-introspection-revocation-authorize-bulk-revoke): RFC 7662 introspection and RFC 7009 revocation at
 * /oauth/…, which take a form body (`token=…`, as the RFCs have it) or JSON, and the original
 * family's GET /authorize/{applicationID}/. Authenticated like every API route.
 */
export function oauthRoutes(tokens: TokenService, links: LinkService): RouteSpec[] {
  return [
    {
      method: 'POST',
      path: '/oauth/introspect',
      body: 'form',
      docs: {
        tag: TAG,
        summary: 'Introspect a token (RFC 7662)',
        description:
          'Says whether the token of the body (`token=…` as a form, or `{"token": …}`) is live: `{"active": true, …}` with its scope, ' +
          'client, user and times, or `{"active": false}` for anything else (unknown, expired, deleted, its user deleted), never a 404. ' +
          'Answers carry `Cache-Control: no-store`. Needs `token:read`.',
      },
      async handle(ctx, caller, sql) {
        ctx.set('Cache-Control', 'no-store');
        ctx.body = await tokens.introspect(caller, sql, tokenOf(ctx.request.body));
      },
    },
    {
      method: 'POST',
      path: '/oauth/revoke',
      body: 'form',
      docs: {
        tag: TAG,
        summary: 'Revoke a token by its value (RFC 7009)',
        description:
          'Soft-deletes the token of the body (`token=…` as a form, or `{"token": …}`): the next request with it is a 401. An unknown or ' +
          'already dead token is no error (`{"revoked": 0}`). A caller may always revoke its own token; another needs `token:write` and ' +
          'the right to grant its scope (403 otherwise).',
      },
      async handle(ctx, caller, sql) {
        ctx.body = { revoked: await tokens.revokeByValue(caller, sql, tokenOf(ctx.request.body)) };
      },
    },
    {
      method: 'GET',
      path: '/authorize/:applicationID',
      docs: {
        tag: TAG,
        trailingSlash: true,
        summary: 'Authorize the bearer’s user for an application',
        description:
          'The original family’s call: other services send the end user’s token and read the user it belongs to and the `right` of that ' +
          'user’s link to the application (0 when not linked). 404 when the application is not live. Needs any valid token.',
      },
      handle: async (ctx, caller, sql) => {
        ctx.body = await links.authorize(caller, sql, parseId(ctx.params.applicationID, 'applicationID'));
      },
    },
  ];
}
