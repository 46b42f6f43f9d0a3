import { gql } from '@apollo/client';

/**
 * The operations of a small frontend, as a team writes them with Apollo Client: the documents
 * @apollo/generate-persisted-query-manifest finds here make persisted-query-manifest.json, the
 * trusted documents the tests start the service with (test/graphql/trusted-documents.test.ts).
 */
export const USER_BY_ID = gql`
  query UserById($id: ID!) {
    user(id: $id) {
      id
      firstName
      lastName
    }
  }
`;

export const VIEWER = gql`
  query Viewer {
    viewer {
      id
      scope
    }
  }
`;

export const CREATE_APPLICATION = gql`
  mutation CreateApplication($name: String!) {
    createApplication(input: { name: $name }) {
      id
      name
    }
  }
`;

export const ROLE_EVENTS = gql`
  subscription RoleEvents {
    roleEvents {
      eventID
      action
      id
    }
  }
`;
