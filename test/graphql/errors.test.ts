import { svc, Json, expectNoLeak, fail, changesNothing, GET_USER, useService } from '../support/graphql-operations.js';

/** GraphQL errors never expose SQL or a stack: malformed ids in every argument position, values the database refuses. */
useService();

describe('errors never expose SQL or a stack', () => {
  test('malformed ids in every argument position are BAD_USER_INPUT naming the field', async () => {
    const cases: [string, Json, string][] = [
      ['query($id: ID!) { token(id: $id) { id } }', { id: '-1' }, 'id'],
      ['query($id: ID!) { application(id: $id) { id } }', { id: '1.5' }, 'id'],
      ['query($id: ID!) { role(id: $id) { id } }', { id: "1'; drop table users; --" }, 'id'],
      ['mutation($id: ID!) { destroyUser(id: $id) }', { id: 'abc' }, 'id'],
      ['mutation($id: ID!) { destroyToken(id: $id) }', { id: '' }, 'id'],
      ['mutation($id: ID!) { updateUserStatus(id: $id, status: 1) { id } }', { id: 'x' }, 'id'],
      ['mutation($id: ID!) { linkUserRoles(id: $id, roleIDs: []) }', { id: '99999999999999999999' }, 'id'],
    ];
    for (const [query, variables, field] of cases) {
      await changesNothing(() => fail(query, variables, 'BAD_USER_INPUT', field));
    }
    expect((await svc.request('GET', '/user/')).status).toBe(200);
  });

  test('a GraphQL-level mistake (unknown field, wrong variable type) answers without internals', async () => {
    const unknown = await svc.graphql('{ users { data { password } } }');
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expectNoLeak(unknown);
    const wrongType = await svc.graphql(GET_USER, { id: { nested: true } });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expectNoLeak(wrongType);
  });
});
