import type { ApolloServerPlugin } from '@apollo/server';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Kind } from 'graphql';
import { beginShared, endShared } from '../db/transaction.js';
import { AppError, asAppError } from '../shared/errors.js';
import type { Logger } from '../shared/log.js';
import type { GraphQLContext } from './context.js';
import { toGraphQLError } from './errors.js';

/**
 * The root fields of one mutation operation succeed or fail together (SPEC §6: a request that
 * fails changes nothing), as in Hasura: they run in one transaction, committed before the answer
 * is sent only when every root field succeeded; otherwise rolled back, and the answer's `data` is
 * null (every mutation field is non-null), so it never reports a write that did not happen.
 * Errors in nested fields of a result (say, a FORBIDDEN `tokens` of a created user) do not undo it.
 * The Koa side opens the scope (withSharedScope) around each /graphql request.
 */
export function mutationTransactionPlugin(orm: MikroORM, log: Logger): ApolloServerPlugin<GraphQLContext> {
  return {
    async requestDidStart() {
      return {
        async executionDidStart({ operation }) {
          // One root field is atomic already (its service call is one transaction, committed
          // before its nested fields read anything): the shared transaction is for several.
          const [first, ...more] = operation.selectionSet.selections;
          const single = more.length === 0 && first?.kind === Kind.FIELD;
          if (operation.operation === 'mutation' && !single) await beginShared(orm);
        },
        async willSendResponse({ response, contextValue }) {
          if (response.body.kind !== 'single') return;
          const result = response.body.singleResult;
          const failed = !result.data || (result.errors ?? []).some((e) => (e.path?.length ?? 0) <= 1);
          try {
            await endShared(!failed);
          } catch (err) {
            // The commit itself failed (the connection was lost, say): nothing was written.
            const known = asAppError(err) ?? new AppError('INTERNAL', 'an internal error occurred');
            if (!asAppError(err)) log.error('graphql commit failed', { requestId: contextValue.requestId, error: (err as Error)?.name });
            const { message, extensions } = toGraphQLError(known);
            response.body.singleResult = { data: null, errors: [{ message, extensions: { ...extensions, requestId: contextValue.requestId } }] };
            response.http.status = known.status;
          }
        },
      };
    },
  };
}
