/**
 * The user record shared by the REST and GraphQL user tests (test/users/users and graphql.test.ts):
 * what a user created from only a first and a last name reads as.
 */
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A user created with only these names: every other field at its default, the timestamps ISO (UTC, ms). */
export function defaultUser(id: unknown, firstName: string, lastName: string): Record<string, unknown> {
  return {
    id,
    ref: 0,
    outKey: null,
    firstName,
    lastName,
    avatarUrl: null,
    photoUrl: null,
    status: 0,
    createdAt: expect.stringMatching(ISO),
    updatedAt: expect.stringMatching(ISO),
  };
}
