import type { ApolloServerPlugin } from '@apollo/server';
import { GraphQLError } from 'graphql';
import type { GraphQLContext } from './context.js';

/**
 * The operation a request runs, settled before any other plugin looks at it. Apollo calls
 * `didResolveOperation` even when no operation was resolved (several operations and no
 * operationName, or a name the document does not hold) and leaves the error to execution, after
 * the other plugins; and a subscription sent as a plain HTTP request has no stream to run on. Both
 * are the client's mistake: a 400 here.
 */
export function operationPlugin(): ApolloServerPlugin<GraphQLContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, request, document, contextValue }) {
          if (operation && contextValue.http) contextValue.http.graphql = { name: operation.name?.value ?? null, type: operation.operation };
          if (!operation) {
            const named = typeof request.operationName === 'string';
            const count = document.definitions.filter((d) => d.kind === 'OperationDefinition').length;
            const message = named
              ? `the document has no operation named "${request.operationName}"`
              : `the document has ${count} operations: name the one to run in operationName`;
            throw new GraphQLError(message, { extensions: { code: 'OPERATION_RESOLUTION_FAILURE', http: { status: 400 } } });
          }
          if (operation.operation === 'subscription') {
            throw new GraphQLError(
              'subscriptions run over WebSocket (graphql-transport-ws on /graphql) or Server-Sent Events (POST /graphql with Accept: text/event-stream)',
              {
                extensions: { code: 'BAD_REQUEST', http: { status: 400 } },
              },
            );
          }
        },
      };
    },
  };
}
