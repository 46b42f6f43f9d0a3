import { buildSchema, GraphQLError, parse, type ExecutionResult } from 'graphql';
import type { Sql } from '../../src/db/sql.js';
import { executionPlugin, responseOf } from '../../src/graphql/executor.js';
import { createLogger } from '../../src/observability/log.js';
import { AppError } from '../../src/errors.js';

/**
 * What the execution plugin (src/graphql/executor.ts) answers Apollo for a result it ran: Apollo
 * answers a plugin's response as it is, so the plugin does what Apollo does after it executes
 * itself. Without a service; the wire of these answers is checked over HTTP in
 * test/graphql/errors.test.ts, http.test.ts and test/http/database.test.ts.
 */

const REQUEST_ID = 'req-1';

function answer(result: ExecutionResult) {
  const reported: (readonly GraphQLError[])[] = [];
  const response = responseOf(result, REQUEST_ID, (errors, requestId) => {
    expect(requestId).toBe(REQUEST_ID);
    reported.push(errors);
  });
  if (response.body.kind !== 'single') throw new Error('a single result was expected');
  return { status: response.http.status, headers: [...response.http.headers], body: response.body.singleResult, reported };
}

test('a result without errors is answered as it is, with no status of its own and nothing reported', () => {
  const result = { data: { user: { id: '1' } } };
  expect(answer(result)).toEqual({ status: undefined, headers: [], body: result, reported: [] });
});

test('errors beside data: reported once, formatted with their code and the request id; the status stays 200', () => {
  const forbidden = new GraphQLError('you may not read tokens', { path: ['user', 'tokens'], extensions: { code: 'FORBIDDEN' } });
  const { status, body, reported } = answer({ data: { user: { id: '1', tokens: null } }, errors: [forbidden] });
  expect(status).toBeUndefined();
  expect(reported).toEqual([[forbidden]]);
  expect(body).toEqual({
    data: { user: { id: '1', tokens: null } },
    errors: [{ message: 'you may not read tokens', path: ['user', 'tokens'], extensions: { code: 'FORBIDDEN', requestId: REQUEST_ID } }],
  });
});

test('an error that asks for an HTTP status and headers (extensions.http) sets them, and the http extension is not on the wire', () => {
  const unavailable = new GraphQLError('the database is unavailable', {
    // Apollo's convention is a Map of headers (graphql's own typing says a record).
    extensions: { code: 'UNAVAILABLE', http: { status: 503, headers: new Map([['retry-after', '1']]) as unknown as Record<string, string> } },
  });
  const { status, headers, body } = answer({ data: null, errors: [unavailable] });
  expect(status).toBe(503);
  expect(headers).toEqual([['retry-after', '1']]);
  expect(body.errors).toEqual([{ message: 'the database is unavailable', extensions: { code: 'UNAVAILABLE', requestId: REQUEST_ID } }]);
});

test('a result without data holds request errors: 400; those with a code are said as they are, one without a code is masked as internal', () => {
  const refused = new GraphQLError('the variables are nested more than 10 levels deep', { extensions: { code: 'BAD_USER_INPUT' } });
  expect(answer({ errors: [refused] })).toMatchObject({
    status: 400,
    body: { errors: [{ message: 'the variables are nested more than 10 levels deep', extensions: { code: 'BAD_USER_INPUT', requestId: REQUEST_ID } }] },
  });
  // As Apollo has it: an error without a code is internal (its message may quote a value sent); it is reported, and the gate logs it.
  const document = parse('query ($id: ID!) { user(id: $id) { id } }');
  const uncoded = new GraphQLError('Variable "$id" got invalid value "secret-value"', { source: document.loc!.source, positions: [7] });
  const { status, body, reported } = answer({ errors: [uncoded] });
  expect(status).toBe(400);
  expect(reported).toEqual([[uncoded]]);
  expect(body).toEqual({
    errors: [
      { message: 'an internal error occurred', locations: [{ line: 1, column: 8 }], extensions: { code: 'INTERNAL_SERVER_ERROR', requestId: REQUEST_ID } },
    ],
  });
});

test('an http extension Apollo would not take (a status that is no number, headers that are no Map) is ignored', () => {
  const odd = new GraphQLError('odd', { extensions: { code: 'BAD_REQUEST', http: { status: '418' as unknown as number } } });
  expect(answer({ data: null, errors: [odd] }).status).toBeUndefined();
});

test('an error that cannot be formatted is said as an internal one; the others as they are', () => {
  const broken = new GraphQLError('broken', { path: ['a'] });
  broken.toJSON = () => {
    throw new Error('cannot format');
  };
  const fine = new GraphQLError('no user 7', { path: ['b'], extensions: { code: 'NOT_FOUND' } });
  expect(answer({ data: { a: null, b: null }, errors: [broken, fine] }).body.errors).toEqual([
    { message: 'an internal error occurred', path: ['a'], extensions: { code: 'INTERNAL_SERVER_ERROR', requestId: REQUEST_ID } },
    { message: 'no user 7', path: ['b'], extensions: { code: 'NOT_FOUND', requestId: REQUEST_ID } },
  ]);
});

test('an operation that throws is answered as Apollo answers one: 500, masked, reported', async () => {
  const reported: (readonly GraphQLError[])[] = [];
  const plugin = executionPlugin({
    schema: buildSchema('type Query { a: Int }'),
    sql: {} as Sql,
    log: createLogger('error', () => {}),
    admit: () => {
      throw new Error('the gate fell over');
    },
    onErrors: (errors) => reported.push(errors),
  });
  const listener = await plugin.requestDidStart!({} as never);
  const response = await listener!.responseForOperation!({ contextValue: { requestId: REQUEST_ID }, request: {}, source: '{ a }' } as never);
  expect(response!.http.status).toBe(500);
  expect(response!.body).toEqual({
    kind: 'single',
    singleResult: { errors: [{ message: 'an internal error occurred', extensions: { code: 'INTERNAL_SERVER_ERROR', requestId: REQUEST_ID } }] },
  });
  expect(reported.map((errors) => errors.map((e) => e.message))).toEqual([['the gate fell over']]);
});

test('an internal error is masked on the wire and reported as it was (the gate logs it with the request id)', () => {
  const crash = new GraphQLError('connection terminated unexpectedly', { path: ['user'], originalError: new Error('connection terminated unexpectedly') });
  const { status, body, reported } = answer({ data: { user: null }, errors: [crash] });
  expect(status).toBeUndefined();
  expect(reported).toEqual([[crash]]);
  expect(body.errors).toEqual([
    { message: 'an internal error occurred', path: ['user'], extensions: { code: 'INTERNAL_SERVER_ERROR', requestId: REQUEST_ID } },
  ]);
});

test("a service error thrown by a resolver is said in the service's words", () => {
  const notFound = new GraphQLError('no user 7', { path: ['user'], originalError: AppError.notFound('no user 7') });
  const { body } = answer({ data: { user: null }, errors: [notFound] });
  expect(body.errors).toEqual([{ message: 'no user 7', path: ['user'], extensions: expect.objectContaining({ code: 'NOT_FOUND', requestId: REQUEST_ID }) }]);
});
