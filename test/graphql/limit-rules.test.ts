import { buildSchema, parse, validate, specifiedRules } from 'graphql';
import { costProblem, documentNesting, GRAPHQL_LIMITS, sizeLimitRule, valueNesting } from '../../src/graphql/limits.js';

/**
 * The GraphQL abuse limits as rules (src/graphql/limits.ts), on a small schema of their own and
 * without a service: nesting of the text and of values, depth, aliases, fields and repeats with
 * fragments expanded, and cost. test/graphql/limits.test.ts checks the answers over HTTP.
 */

const schema = buildSchema(`
  type Query { viewer: User, users(pageSize: Int, first: Int): UserPage, name: String }
  type User { id: ID, name: String, friends(pageSize: Int): UserPage, best: User }
  type UserPage { total: Int, data: [User] }
`);

/** The messages sizeLimitRule reports for a document. */
const sizeErrors = (query: string) => validate(schema, parse(query), [...specifiedRules, sizeLimitRule]).map((e) => e.message);

/** A selection `levels` deep through `best`. */
const deep = (levels: number) => `{ viewer ${'{ best '.repeat(levels - 2)}{ id }${' }'.repeat(levels - 2)} }`;

describe('nesting', () => {
  test('the text: brackets, braces and parentheses, not in strings, block strings or comments', () => {
    expect(documentNesting('{ a { b(x: [1, [2]]) } }')).toBe(5);
    expect(documentNesting('{ a(x: "{{{{ [[[") }')).toBe(2);
    expect(documentNesting('{ a(x: """ {{{ \\""" {{{ """) }')).toBe(2);
    expect(documentNesting('# {{{{{{\n{ a }')).toBe(1);
    expect(documentNesting('}}}} { a }')).toBe(1); // closing ones never go below zero
    expect(documentNesting('['.repeat(10_000))).toBe(10_000);
  });

  test('a value: objects and arrays, counted only as far as the limit', () => {
    expect(valueNesting('text', 64)).toBe(0);
    expect(valueNesting({ a: [1, { b: null }] }, 64)).toBe(3);
    let value: unknown = 1;
    for (let i = 0; i < 100_000; i++) value = [value];
    expect(valueNesting(value, 64)).toBe(65);
  });
});

describe('size', () => {
  test(`depth ${GRAPHQL_LIMITS.maxDepth} passes; one more is refused with its depth`, () => {
    expect(sizeErrors(deep(GRAPHQL_LIMITS.maxDepth))).toEqual([]);
    expect(sizeErrors(deep(GRAPHQL_LIMITS.maxDepth + 1))).toEqual([`the query is 11 levels deep; at most ${GRAPHQL_LIMITS.maxDepth} are allowed`]);
  });

  test('fragments and inline fragments do not hide depth; introspection meta-fields add none', () => {
    const bests = (n: number) => `${'best { '.repeat(n)}id${' }'.repeat(n)}`;
    // viewer, then 8 or 9 levels of best, then id: 10 or 11 levels.
    expect(sizeErrors(`{ viewer { ...F } } fragment F on User { ${bests(8)} }`)).toEqual([]);
    expect(sizeErrors(`{ viewer { ...F } } fragment F on User { ${bests(9)} }`)).toEqual([expect.stringMatching(/11 levels deep/)]);
    expect(sizeErrors(`{ viewer { ... on User { best { ...F } } } } fragment F on User { ${bests(8)} }`)).toEqual([expect.stringMatching(/11 levels deep/)]);
    expect(sizeErrors(`{ __schema { types { fields { type { ofType { ofType { ofType { ofType { ofType { ofType { name } } } } } } } } } } }`)).toEqual([]);
  });

  test('aliases and fields are counted at every use of a fragment', () => {
    const aliases = (n: number) => Array.from({ length: n }, (_, i) => `a${i}: id`).join(' ');
    expect(sizeErrors(`{ viewer { ${aliases(GRAPHQL_LIMITS.maxAliases)} } }`)).toEqual([]);
    expect(sizeErrors(`{ viewer { ...A best { ...A } } } fragment A on User { ${aliases(60)} }`)).toEqual([
      `the query has 120 aliases (fragments counted at every use); at most ${GRAPHQL_LIMITS.maxAliases} are allowed`,
    ]);
    // Each fragment spreads the next twice: F0 selects 4095 fields, the document 4096.
    const chain = Array.from({ length: 11 }, (_, i) => `fragment F${i} on User { ...F${i + 1} best { ...F${i + 1} } }`).join(' ');
    const errors = sizeErrors(`{ viewer { ...F0 } } ${chain} fragment F11 on User { id }`);
    expect(errors).toContain(`the query selects 4096 fields (fragments counted at every use); at most ${GRAPHQL_LIMITS.maxFields} are allowed`);
  });

  test('one response name repeated too often in one selection set is refused before the merge check', () => {
    const repeated = (n: number) => `{ viewer { ${'id '.repeat(n)}} }`;
    expect(sizeErrors(repeated(GRAPHQL_LIMITS.maxRepeats))).toEqual([]);
    expect(sizeErrors(repeated(GRAPHQL_LIMITS.maxRepeats + 1))).toEqual([
      'the query repeats the same fields too often to be checked (51 times); select each field once',
    ]);
  });

  test('a fragment cycle counts nothing here (graphql-js reports it)', () => {
    const errors = sizeErrors('{ viewer { ...A } } fragment A on User { best { ...B } } fragment B on User { best { ...A } }');
    expect(errors).toEqual([expect.stringMatching(/Cannot spread fragment "A" within itself/)]);
  });
});

describe('cost', () => {
  const cost = (query: string, variables: Record<string, unknown> = {}, operationName: string | null = null) =>
    costProblem(schema, parse(query), variables, operationName);

  test('a page costs 1 plus its size times what one record selects; scalars cost nothing', () => {
    // 1 + 1000 × (1 + 1 + 19 × 1) = 21 001 > 20 000: nested pages of the default 20.
    const problem = cost('{ users(pageSize: 1000) { data { friends(pageSize: 19) { data { id } } } } }');
    expect(problem?.message).toBe(`the query costs 21001; at most ${GRAPHQL_LIMITS.maxCost} is allowed (ask for smaller pages)`);
    expect(problem?.extensions).toEqual({ code: 'GRAPHQL_VALIDATION_FAILED', cost: 21001, maxCost: GRAPHQL_LIMITS.maxCost });
    expect(cost('{ users(pageSize: 1000) { data { friends(pageSize: 18) { data { id } } } } }')?.extensions.cost).toBe(20001);
    expect(cost('{ users(pageSize: 1000) { data { friends(pageSize: 17) { data { id } } } } }')).toBeNull();
    expect(cost('{ name viewer { id name } }')).toBeNull();
  });

  test('a page size above the largest page costs the largest page', () => {
    expect(cost('{ users(first: 5000) { data { friends(pageSize: 19) { data { id } } } } }')?.extensions.cost).toBe(21001);
  });

  test('a page size given as a variable is priced per request, not remembered from the first', () => {
    const document = parse('query Q($n: Int) { users(pageSize: $n) { data { friends(pageSize: 19) { data { id } } } } }');
    expect(costProblem(schema, document, { n: 10 }, 'Q')).toBeNull();
    expect(costProblem(schema, document, { n: 1000 }, 'Q')?.extensions.cost).toBe(21001);
    expect(costProblem(schema, document, { n: 10 }, 'Q')).toBeNull();
  });

  test('variables that do not coerce cost nothing here (execution answers BAD_USER_INPUT)', () => {
    expect(cost('query Q($n: Int) { users(pageSize: $n) { total } }', { n: 'many' }, 'Q')).toBeNull();
  });
});
