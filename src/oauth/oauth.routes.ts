import { AppError } from '../errors.js';
import { errors, json, param, ref, scalar, type Schema } from '../http/openapi-schemas.js';
import type { ApiTag, RouteSpec } from '../http/routes.js';
import type { LinkService } from '../links/link.service.js';
import { parseId } from '../resource/input.js';
import type { IntrospectedToken, TokenService } from '../tokens/token.service.js';

/** A wire date in seconds since the epoch (RFC 7662's NumericDate). */
const epochSeconds = (wire: string) => Math.floor(Date.parse(wire) / 1000);

/** RFC 7662 §2.2: what an introspection answers about a token (`{active: false}` for anything not live). */
function introspection(token: IntrospectedToken | null) {
  if (!token) return { active: false };
  return {
    active: true,
    scope: token.scope ?? '',
    client_id: token.client ?? '',
    username: `${token.user.firstName ?? ''} ${token.user.lastName ?? ''}`.trim(),
    sub: String(token.userId),
    ...(token.expireAt ? { exp: epochSeconds(token.expireAt) } : {}),
    iat: epochSeconds(token.createdAt),
    token_type: token.tokenType || 'Bearer',
  };
}

/** The `token` parameter of an RFC 7662/7009 request. */
function tokenOf(body: unknown): string {
  const value = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).token : undefined;
  if (typeof value !== 'string' || value === '') {
    throw AppError.invalid([{ field: 'token', message: 'is required: the access token value, as token=… (form) or {"token": …} (JSON)' }]);
  }
  return value;
}

/** The body of an RFC 7662/7009 request: a form, as the RFCs have it, or JSON. */
const TOKEN_BODY = { required: true, content: { 'application/x-www-form-urlencoded': { schema: ref('TokenParameter') }, ...json(ref('TokenParameter')) } };

const TOKEN_PARAMETER: Schema = {
  type: 'object',
  required: ['token'],
  properties: { token: { type: 'string', description: 'the access token value' }, token_type_hint: { type: 'string' } },
};

const INTROSPECTION: Schema = {
  type: 'object',
  required: ['active'],
  properties: {
    active: { type: 'boolean' },
    scope: { type: 'string' },
    client_id: { type: 'string' },
    username: { type: 'string' },
    sub: { type: 'string', description: 'the user id' },
    exp: { type: 'integer', description: 'seconds since the epoch; absent when the token never expires' },
    iat: { type: 'integer' },
    token_type: { type: 'string' },
  },
};

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
        operation: {
          requestBody: TOKEN_BODY,
          responses: {
            200: { description: '`{"active": false}` for anything not live', content: json(ref('Introspection')) },
            ...errors(400, 401, 403, 415, 503),
          },
        },
        schemas: { TokenParameter: TOKEN_PARAMETER, Introspection: INTROSPECTION },
      },
      async handle(ctx, caller, sql) {
        ctx.set('Cache-Control', 'no-store');
        ctx.body = introspection(await tokens.introspect(caller, sql, tokenOf(ctx.request.body)));
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
        operation: {
          requestBody: TOKEN_BODY,
          responses: {
            200: {
              description: 'Revoked, or nothing to revoke',
              content: json({ type: 'object', properties: { revoked: { type: 'integer', enum: [0, 1] } } }),
            },
            ...errors(400, 401, 403, 415, 503),
          },
        },
        schemas: { TokenParameter: TOKEN_PARAMETER },
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
        operation: {
          parameters: [param('applicationID')],
          responses: {
            200: {
              description: 'The user and its right (0 when not linked)',
              content: json({ type: 'object', required: ['userID', 'userRight'], properties: { userID: ref('Id'), userRight: scalar('safeInt') } }),
            },
            ...errors(400, 401, 404, 503),
          },
        },
      },
      handle: async (ctx, caller, sql) => {
        const { userId, right } = await links.authorize(caller, sql, parseId(ctx.params.applicationID, 'applicationID'));
        // The original family's shape.
        ctx.body = { userID: userId, userRight: right };
      },
    },
  ];
}
