import { AppError } from '../errors.js';
import type { RouteSpec } from '../http/routes.js';
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
      async handle(ctx, caller, sql) {
        ctx.set('Cache-Control', 'no-store');
        ctx.body = await tokens.introspect(caller, sql, tokenOf(ctx.request.body));
      },
    },
    {
      method: 'POST',
      path: '/oauth/revoke',
      body: 'form',
      async handle(ctx, caller, sql) {
        ctx.body = { revoked: await tokens.revokeByValue(caller, sql, tokenOf(ctx.request.body)) };
      },
    },
    {
      method: 'GET',
      path: '/authorize/:applicationID',
      handle: async (ctx, caller, sql) => {
        ctx.body = await links.authorize(caller, sql, parseId(ctx.params.applicationID, 'applicationID'));
      },
    },
  ];
}
