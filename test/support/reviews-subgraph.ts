/**
 * A small subgraph for the router tests (test/graphql/routers.test.ts), built as Apollo documents
 * a subgraph (`@apollo/subgraph`'s buildSubgraphSchema, Apollo Server's standalone HTTP server):
 * reviews, written by users and about applications that live in this service. It adds
 * `User.reviews` by the User entity's key and answers User and Application references.
 */
import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginInlineTraceDisabled } from '@apollo/server/plugin/disabled';
import { startStandaloneServer } from '@apollo/server/standalone';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { parse } from 'graphql';

export const REVIEWS_SDL = `
extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key"])

type Query {
  topReviews: [Review!]!
}

type Review {
  id: ID!
  body: String!
  author: User
  application: Application
}

type User @key(fields: "id") {
  id: ID!
  reviews: [Review!]!
}

type Application @key(fields: "id", resolvable: false) {
  id: ID!
}
`;

export interface Review {
  id: string;
  body: string;
  authorID: string;
  applicationID: string;
}

export interface ReviewsSubgraph {
  url: string;
  stop(): Promise<void>;
}

export async function startReviewsSubgraph(reviews: readonly Review[]): Promise<ReviewsSubgraph> {
  const resolvers = {
    Query: { topReviews: () => reviews },
    Review: {
      author: (review: Review) => ({ __typename: 'User', id: review.authorID }),
      application: (review: Review) => ({ __typename: 'Application', id: review.applicationID }),
    },
    User: {
      __resolveReference: (user: { id: string }) => ({ id: user.id }),
      reviews: (user: { id: string }) => reviews.filter((review) => review.authorID === user.id),
    },
  };
  const server = new ApolloServer({
    schema: buildSubgraphSchema([{ typeDefs: parse(REVIEWS_SDL), resolvers: resolvers as never }]),
    plugins: [ApolloServerPluginInlineTraceDisabled()], // not asked for here (and it logs that it is on)
  });
  const { url } = await startStandaloneServer(server, { listen: { host: '127.0.0.1', port: 0 } });
  return { url, stop: () => server.stop() };
}
