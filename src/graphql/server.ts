import { ApolloServer, type ApolloServerPlugin } from '@apollo/server';
import { ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { ApolloServerPluginLandingPageLocalDefault } from '@apollo/server/plugin/landingPage/default';
import { koaMiddleware } from '@as-integrations/koa';
import { Kind, type OperationDefinitionNode } from 'graphql';
import type { Middleware } from 'koa';
import { authenticate, clientOf } from '../auth/authenticate.js';
import type { Database } from '../db/database.js';
import type { AppState } from '../http/context.js';
import type { Services } from '../services.js';
import { AppError } from '../shared/errors.js';
import type { Logger } from '../shared/log.js';
import { Loaders, type GraphQLContext } from './context.js';
import { formatError, toGraphQLError } from './errors.js';
import { aliasLimitRule, costLimitPlugin, depthLimitRule } from './limits.js';
import { graphQLSchema } from './schema.js';

/** True when every top-level field is a meta-field (__schema, __type, __typename). */
function introspectionOnly(operation: OperationDefinitionNode): boolean {
  return operation.selectionSet.selections.every((s) => s.kind === Kind.FIELD && s.name.value.startsWith('__'));
}

/** Operations other than introspection need a valid token: otherwise HTTP 401, UNAUTHENTICATED. */
function requireTokenPlugin(): ApolloServerPlugin<GraphQLContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ contextValue, operation }) {
          if (contextValue.caller || (operation && introspectionOnly(operation))) return;
          throw toGraphQLError(contextValue.authError ?? AppError.unauthorized('an access token is required', 'Bearer'));
        },
      };
    },
  };
}

export interface GraphQLEndpoint {
  middleware: Middleware<AppState>;
  stop(): Promise<void>;
}

/**
 * Apollo Server on the shared services. Sandbox (the landing page of GET /graphql) and
 * introspection go together: on outside production, off in production unless
 * GRAPHQL_INTROSPECTION=true. Batched requests are off; CSRF prevention is on.
 */
export async function createGraphQL(deps: { db: Database; services: Services; log: Logger; introspection: boolean }): Promise<GraphQLEndpoint> {
  const { db, services, log, introspection } = deps;
  const apollo = new ApolloServer<GraphQLContext>({
    schema: await graphQLSchema(),
    introspection,
    allowBatchedHttpRequests: false,
    stopOnTerminationSignals: false, // main.ts owns the graceful stop (server, then Apollo, then the pool)
    csrfPrevention: true,
    includeStacktraceInErrorResponses: false,
    validationRules: [depthLimitRule, aliasLimitRule],
    formatError: formatError(log),
    plugins: [
      introspection ? ApolloServerPluginLandingPageLocalDefault({ embed: true, includeCookies: false }) : ApolloServerPluginLandingPageDisabled(),
      requireTokenPlugin(),
      costLimitPlugin(),
    ],
  });
  await apollo.start();
  const middleware = koaMiddleware(apollo, {
    context: async ({ ctx }): Promise<GraphQLContext> => {
      let caller: GraphQLContext['caller'] = null;
      let authError: AppError | null = null;
      try {
        caller = await authenticate(db.orm.em.fork(), ctx.get('Authorization') || undefined, clientOf(ctx.get('X-Client'), ctx.get('User-Agent')));
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        authError = err;
      }
      return { caller, authError, services, loaders: new Loaders(services, caller) };
    },
  }) as unknown as Middleware<AppState>;
  return { middleware, stop: () => apollo.stop() };
}
