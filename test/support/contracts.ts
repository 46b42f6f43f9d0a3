/**
 * The golden wire contracts: each seed resource's record as REST answers it (SPEC §3–§4,
 * /work/shared/seed/interface.md), written out once, in the wire's order, each field with what a
 * record created with only its required fields shows. GraphQL's object types have the same fields
 * (ids as `ID` strings), plus `deletedAt` and their relations.
 *
 * The tests that need a record's fields derive them from here: GraphQL selection sets, the records
 * REST and GraphQL answer, OpenAPI's property lists, the writable fields. test/resource/resource.test.ts
 * compares these contracts with what src/ derives (the OpenAPI schemas and the GraphQL types), so a
 * new field is one edit in src/, a migration, `npm run schema`, and a deliberate edit here.
 */

/** Dates on the wire: ISO 8601 in UTC with milliseconds. */
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A field whose value the creator gives (or the service takes from the request: `client`): `recordOf` needs it. */
export const GIVEN = Symbol('given');
/** The record's id: `recordOf` takes it if given, else any positive id. */
export const ID = Symbol('id');
/** A date the service sets (`createdAt`, `updatedAt`). */
export const DATE = Symbol('date');

type Contract = Readonly<Record<string, unknown>>;

export const CONTRACTS = {
  user: {
    id: ID,
    ref: 0,
    outKey: null,
    firstName: GIVEN,
    lastName: GIVEN,
    avatarUrl: null,
    photoUrl: null,
    status: 0,
    createdAt: DATE,
    updatedAt: DATE,
  },
  token: {
    id: ID,
    userID: GIVEN,
    accessToken: GIVEN,
    refreshToken: '',
    scope: '',
    code: '',
    codeChallenge: null,
    tokenType: '',
    expireAt: null,
    client: GIVEN,
    version: '1',
    createdAt: DATE,
    updatedAt: DATE,
  },
  application: { id: ID, name: GIVEN, createdAt: DATE, updatedAt: DATE },
  role: { id: ID, name: GIVEN, createdAt: DATE, updatedAt: DATE },
  /** A user's link to an application (GET /user/{id}/application/{applicationID}). */
  applicationLink: { userID: GIVEN, applicationID: GIVEN, right: 0, createdAt: DATE, updatedAt: DATE },
} as const satisfies Record<string, Contract>;

export type ContractName = keyof typeof CONTRACTS;

/** The OpenAPI schema (and GraphQL type) of each contract's record. */
export const TYPE_NAMES: Readonly<Record<ContractName, string>> = {
  user: 'User',
  token: 'Token',
  application: 'Application',
  role: 'Role',
  applicationLink: 'ApplicationLink',
};

/** Names no write sets (SPEC §4: Attrs skips them): the service's. */
const SET_BY_THE_SERVICE = new Set(['id', 'createdAt', 'updatedAt', 'client', 'version']);

/** A record's fields, in the wire's order. */
export const fieldsOf = (name: ContractName): string[] => Object.keys(CONTRACTS[name]);

/** The fields a create, replace or patch writes, in the wire's order. */
export const writableOf = (name: ContractName): string[] => fieldsOf(name).filter((field) => !SET_BY_THE_SERVICE.has(field));

/** A GraphQL selection of every field of a record (`id ref outKey …`). */
export const selectionOf = (name: ContractName): string => fieldsOf(name).join(' ');

/**
 * What a record created with only `given` reads as, for `toEqual`: every other field at the value
 * the contract gives it, dates as ISO, the id as given (GraphQL: a string) or any number. A field the
 * contract marks GIVEN must be in `given`.
 */
export function recordOf(name: ContractName, given: Record<string, unknown>): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(CONTRACTS[name])) {
    if (Object.hasOwn(given, field)) record[field] = given[field];
    else if (value === GIVEN) throw new Error(`recordOf(${name}): ${field} has no default and must be given`);
    else if (value === ID) record[field] = expect.any(Number);
    else if (value === DATE) record[field] = expect.stringMatching(ISO);
    else record[field] = value;
  }
  for (const field of Object.keys(given)) if (!(field in record)) throw new Error(`recordOf(${name}): ${field} is not in the contract`);
  return record;
}
