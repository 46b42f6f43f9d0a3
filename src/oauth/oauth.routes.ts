import Router from '@koa/router';
import type { AppState } from '../http/context.js';
import { formOrJsonBody } from '../http/middleware.js';
import type { LinkService } from '../links/link.service.js';
import { AppError } from '../shared/errors.js';
import type { TokenService } from '../tokens/token.service.js';

/**
 * The calls other services make (SPEC §9): RFC 7662 introspection and RFC 7009 revocation at
 * /oauth/…, which take a form body (`token=…`, as the RFCs have it) or JSON, and the original
 * family's GET /authorize/{applicationID}/. Authenticated like every API route.
 */
export function oauthRoutes(tokens: TokenService, links: LinkService): Router<AppState> {
  const router = new Router<AppState>();
  /** The `token` parameter of an RFC 7662/7009 request. */
  const tokenOf = (body: unknown): string => {
    const value = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).token : undefined;
    if (typeof value !== 'string' || value === '') {
      throw AppError.invalid([{ field: 'token', message: 'is required: the access token value, as token=… (form) or {"token": …} (JSON)' }]);
    }
    return value;
  };
  router.post('/oauth/introspect', formOrJsonBody, async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = await tokens.introspect(ctx.state.caller, tokenOf(ctx.request.body));
  });
  router.post('/oauth/revoke', formOrJsonBody, async (ctx) => {
    ctx.body = { revoked: await tokens.revokeByValue(ctx.state.caller, tokenOf(ctx.request.body)) };
  });
  router.get('/authorize/:applicationID', async (ctx) => {
    ctx.body = await links.authorize(ctx.state.caller, ctx.params.applicationID);
  });
  return router;
}
