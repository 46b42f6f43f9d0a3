import links from '../links/index.js';
import { defineModule, serviceOf } from '../module/module.js';
import tokens from '../tokens/index.js';
import { oauthRoutes } from './oauth.routes.js';

/** The calls other services make with tokens: RFC 7662 introspection, RFC 7009 revocation, GET /authorize/{applicationID}/ (routes only). */
export default defineModule({
  key: 'oauth',
  service: ({ services }) => ({ tokens: serviceOf(tokens, services), links: serviceOf(links, services) }),
  routes: (service) => oauthRoutes(service.tokens, service.links),
});
