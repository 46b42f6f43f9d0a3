import { parse, type OperationDefinitionNode } from 'graphql';
import { mayOmitInLiteral } from '../../src/graphql/selection.js';
import { svc, uniq, gql, useService } from '../support/graphql-platform.js';

/**
 * A document runs compiled by graphql-jit from its third request on (src/graphql/executor.ts):
 * every run must answer, and change, exactly what the first did.
 */
useService();

describe('compiled runs answer as the first runs', () => {
  test('a variable inside an input literal, not sent, is absent on every run, compiled or not: a patch leaves the field as it is', async () => {
    const { createUser } = await gql(
      `mutation { createUser(input: { firstName: "Kept", lastName: "${uniq('ra-patch')}", avatarUrl: "https://a.example/k.png" }) { id } }`,
    );
    const patch = `mutation($first: String, $avatar: String) { patchUser(id: ${createUser.id}, input: { firstName: $first, avatarUrl: $avatar }) { firstName avatarUrl } }`;
    for (const first of ['One', 'Two', 'Three', 'Four']) {
      const res = await svc.graphql(patch, { first });
      expect(res.body).toEqual({ data: { patchUser: { firstName: first, avatarUrl: 'https://a.example/k.png' } } });
    }
  });

  test('which documents run on graphql-js for it: a variable that may be left out, inside a literal', () => {
    const omits = (text: string) => {
      const document = parse(text);
      return mayOmitInLiteral(document, document.definitions[0] as OperationDefinitionNode);
    };
    expect(omits('query($f: SafeIntFilter) { users { data { applications(filter: { right: $f }) { total } } } }')).toBe(true);
    expect(omits('mutation($a: String) { patchUser(id: 1, input: { avatarUrl: $a }) { id } }')).toBe(true);
    expect(omits('query($ids: [ID!]) { users(filter: { id: { in: [$ids] } }) { total } }')).toBe(true);
    // Always there: non-null, or with a default; or the argument's whole value (left out alike).
    expect(omits('mutation($a: String!) { patchUser(id: 1, input: { avatarUrl: $a }) { id } }')).toBe(false);
    expect(omits('mutation($a: String = "x") { patchUser(id: 1, input: { avatarUrl: $a }) { id } }')).toBe(false);
    expect(omits('query($f: UserFilter) { users(filter: $f) { total } }')).toBe(false);
  });
});
