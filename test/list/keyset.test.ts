import { compileKeyset, connectionOf, cursorOf, sortColumns, type CompiledKeyset } from '../../src/list/keyset.js';
import { compileList, LIST_LIMITS, parseDeleted, type ListFields, type OrderKey } from '../../src/list/list.js';
import { refusal } from '../support/refusal.js';

/**
 * Keyset cursors and the list limits (src/list/keyset.ts, src/list/list.ts), without a database:
 * what a cursor holds, that a cursor tampered with, made for another order or of the wrong kind is a
 * 400 naming its argument, the conditions a cursor becomes, and the limits of pages.
 * test/list/read-path.test.ts runs the same pages against PostgreSQL.
 */

const fields: ListFields = {
  id: { column: 't.id', kind: 'id' },
  lastName: { column: 't.last_name', kind: 'string' },
  outKey: { column: 't.out_key', kind: 'string', nullable: true },
  status: { column: 't.status', kind: 'int32' },
  createdAt: { column: 't.created_at', kind: 'date' },
  active: { column: 't.active', kind: 'boolean' },
};

const byName: OrderKey[] = [{ field: 'lastName', direction: 'desc' }];

/** A cursor's decoded JSON (what a client could read, were it to look). */
const decoded = (cursor: string) => JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
const encoded = (json: unknown) => Buffer.from(JSON.stringify(json)).toString('base64url');

/** The 400 a keyset input is refused with: its fields and messages. */
const problems = (input: Parameters<typeof compileKeyset>[0]) => {
  const err = refusal(() => compileKeyset(input, fields));
  expect(err.code).toBe('BAD_REQUEST');
  return err.details;
};

describe('a cursor', () => {
  const keyset = compileKeyset({ orderBy: byName, first: 2 }, fields);

  test('is base64url of the order signature and the row sort values, the id last', () => {
    expect(keyset.order.map((k) => `${k.field} ${k.direction}`)).toEqual(['lastName desc', 'id asc']);
    expect(sortColumns(keyset.order)).toBe('t.last_name as k0, t.id as k1');
    const cursor = cursorOf(keyset.order, { k0: 'Ng', k1: '42' });
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decoded(cursor)).toEqual(['lastName:desc,id:asc', 'Ng', 42]);
  });

  test('round-trips: the next page starts strictly past the cursor row, in one row comparison when it can', () => {
    const after = cursorOf(keyset.order, { k0: 'Ng', k1: 42 });
    const next = compileKeyset({ orderBy: byName, first: 2, after }, fields);
    expect(next.bound).toEqual({ sql: '(t.last_name < ?) or ((t.last_name = ?) and (t.id > ?))', params: ['Ng', 'Ng', 42] });
    expect(next).toMatchObject({ after: true, before: false, backward: false, limit: 2 });

    const byId = compileKeyset({ first: 5, after: cursorOf(compileKeyset({}, fields).order, { k0: 7 }) }, fields);
    expect(byId.bound).toEqual({ sql: 't.id > ?', params: [7] });
  });

  test('of a date, a boolean and a null value carries each as JSON, and reads back as the same condition', () => {
    const order: OrderKey[] = [
      { field: 'createdAt', direction: 'asc' },
      { field: 'active', direction: 'asc' },
      { field: 'outKey', direction: 'asc' },
    ];
    const { order: keys } = compileKeyset({ orderBy: order }, fields);
    const cursor = cursorOf(keys, { k0: '2026-11-21T09:30:00.000Z', k1: 1, k2: null, k3: 5 });
    expect(decoded(cursor)).toEqual(['createdAt:asc,active:asc,outKey:asc,id:asc', '2026-11-21T09:30:00.000Z', true, null, 5]);
    const next = compileKeyset({ orderBy: order, after: cursor }, fields);
    // Nulls sort last ascending: past a null outKey only greater ids with a null outKey remain.
    expect(next.bound?.sql).toBe(
      '(t.created_at > ?) or ((t.created_at = ?) and (t.active > ?)) or ((t.created_at = ?) and (t.active = ?) and (t.out_key is null) and (t.id > ?))',
    );
    expect(next.bound?.params[0]).toEqual(new Date('2026-11-21T09:30:00.000Z'));
  });

  test('a backward page (last/before) runs reversed: before is the bound, past the cursor the other way', () => {
    const before = cursorOf(keyset.order, { k0: 'Ng', k1: 42 });
    const page = compileKeyset({ orderBy: byName, last: 3, before }, fields);
    expect(page).toMatchObject({ backward: true, limit: 3, before: true, after: false });
    expect(page.bound).toEqual({ sql: '(t.last_name > ?) or ((t.last_name = ?) and (t.id < ?))', params: ['Ng', 'Ng', 42] });
    expect(compileKeyset({ orderBy: byName, before }, fields).backward).toBe(true);
  });
});

describe('a cursor tampered with, or not of this list, is a 400 naming the argument', () => {
  const order = compileKeyset({ orderBy: byName }, fields).order;
  const good = cursorOf(order, { k0: 'Ng', k1: 42 });
  const notOurs = 'is not a cursor of this list';

  test.each([
    ['not base64url', `${good}=`],
    ['base64 with + and /', '++//'],
    ['not JSON', Buffer.from('{nope').toString('base64url')],
    ['not an array', encoded({ order: 'lastName:desc,id:asc' })],
    ['too few values', encoded(['lastName:desc,id:asc', 'Ng'])],
    ['too many values', encoded(['lastName:desc,id:asc', 'Ng', 42, 43])],
    ['a number where a string sorts', encoded(['lastName:desc,id:asc', 7, 42])],
    ['a string where an id sorts', encoded(['lastName:desc,id:asc', 'Ng', '42'])],
    ['a fractional id', encoded(['lastName:desc,id:asc', 'Ng', 4.2])],
    ['an unsafe integer', encoded(['lastName:desc,id:asc', 'Ng', 2 ** 53])],
    ['null for a column that cannot be null', encoded(['lastName:desc,id:asc', null, 42])],
    ['a NUL character', encoded(['lastName:desc,id:asc', 'N\u0000g', 42])],
    ['a lone surrogate', encoded(['lastName:desc,id:asc', 'N\ud800', 42])],
    ['an over-long value', encoded(['lastName:desc,id:asc', 'x'.repeat(2049), 42])],
    ['over 4096 characters', 'A'.repeat(4097)],
  ])('%s', (_, cursor) => {
    expect(problems({ orderBy: byName, after: cursor })).toEqual([{ field: 'after', message: notOurs }]);
    expect(problems({ orderBy: byName, before: cursor })).toEqual([{ field: 'before', message: notOurs }]);
  });

  test('a value of the wrong kind for a date, a boolean or an int32', () => {
    const keys = compileKeyset({ orderBy: [{ field: 'createdAt', direction: 'asc' }] }, fields).order;
    const signature = keys.map((k) => `${k.field}:${k.direction}`).join(',');
    expect(problems({ orderBy: [{ field: 'createdAt', direction: 'asc' }], after: encoded([signature, 'yesterday', 1]) })).toEqual([
      { field: 'after', message: notOurs },
    ]);
    expect(problems({ orderBy: [{ field: 'active', direction: 'asc' }], after: encoded(['active:asc,id:asc', 'true', 1]) })).toEqual([
      { field: 'after', message: notOurs },
    ]);
    expect(problems({ orderBy: [{ field: 'status', direction: 'asc' }], after: encoded(['status:asc,id:asc', 2 ** 31, 1]) })).toEqual([
      { field: 'after', message: notOurs },
    ]);
  });

  test('a cursor of another order says to pass the same orderBy', () => {
    expect(problems({ orderBy: [{ field: 'lastName', direction: 'asc' }], after: good })).toEqual([
      { field: 'after', message: 'was made for another orderBy; pass the same orderBy as the page it came from' },
    ]);
    expect(problems({ orderBy: [{ field: 'status', direction: 'desc' }], before: good })?.[0]).toMatchObject({
      field: 'before',
      message: expect.stringMatching(/another orderBy/),
    });
  });

  test('a cursor of a row since deleted still marks its place (nothing checks the row exists)', () => {
    expect(compileKeyset({ orderBy: byName, after: cursorOf(order, { k0: 'Zz', k1: 999_999 }) }, fields).bound?.params).toEqual(['Zz', 'Zz', 999_999]);
  });
});

describe('page sizes', () => {
  test('first and last are integers from 0 to the largest page, one direction at a time; all problems at once', () => {
    const max = LIST_LIMITS.maxPageSize;
    expect(compileKeyset({}, fields).limit).toBe(LIST_LIMITS.defaultPageSize);
    expect(compileKeyset({ first: 0 }, fields).limit).toBe(0);
    expect(compileKeyset({ last: max }, fields).limit).toBe(max);
    expect(problems({ first: max + 1, last: -1 })).toEqual([
      { field: 'first', message: `must be an integer from 0 to ${max}` },
      { field: 'last', message: `must be an integer from 0 to ${max}` },
    ]);
    expect(problems({ first: 1.5 })).toEqual([{ field: 'first', message: `must be an integer from 0 to ${max}` }]);
    expect(problems({ first: 1, last: 1 })).toEqual([{ field: 'last', message: 'cannot be given with first: ask for one direction at a time' }]);
  });

  test("REST's page and pageSize read as the original did: below the least is the default, above the most is the most", () => {
    const page = (input: { page?: unknown; pageSize?: unknown }) => {
      const { page: p, pageSize, offset } = compileList(input, fields);
      return { page: p, pageSize, offset };
    };
    expect(page({})).toEqual({ page: 1, pageSize: 20, offset: 0 });
    expect(page({ page: '3', pageSize: '10' })).toEqual({ page: 3, pageSize: 10, offset: 20 });
    expect(page({ page: '0', pageSize: '-5' })).toEqual({ page: 1, pageSize: 20, offset: 0 });
    expect(page({ page: ' 2 ', pageSize: '5000' })).toEqual({ page: 2, pageSize: LIST_LIMITS.maxPageSize, offset: LIST_LIMITS.maxPageSize });
    expect(page({ page: '9'.repeat(400) }).offset).toBe(Number.MAX_SAFE_INTEGER);
    expect(page({ page: '', pageSize: '' })).toEqual({ page: 1, pageSize: 20, offset: 0 });
  });

  test('what is not an integer, or a parameter given twice, is a 400 naming it', () => {
    expect(refusal(() => compileList({ page: 'two', pageSize: '1.5' }, fields)).details).toEqual([
      { field: 'page', message: 'must be an integer' },
      { field: 'pageSize', message: 'must be an integer' },
    ]);
    expect(refusal(() => compileList({ page: ['1', '2'] }, fields)).details).toEqual([{ field: 'page', message: 'must be given once' }]);
    expect(refusal(() => compileList({ orderBy: 'nickname' }, fields)).details).toEqual([
      { field: 'orderBy', message: 'unknown field "nickname"; sortable: id, lastName, outKey, status, createdAt, active' },
    ]);
  });

  test('deleted is live by default, only or include in any case, else a 400', () => {
    expect(parseDeleted(undefined)).toBe('live');
    expect(parseDeleted('')).toBe('live');
    expect(parseDeleted(' ONLY ')).toBe('only');
    expect(parseDeleted('include')).toBe('include');
    expect(refusal(() => parseDeleted('all')).details).toEqual([{ field: 'deleted', message: 'must be "only" or "include"' }]);
    expect(refusal(() => parseDeleted(['only', 'only'])).details).toEqual([{ field: 'deleted', message: 'must be given once' }]);
  });
});

describe('a connection from the rows a keyset query answered', () => {
  const rows = (...ids: number[]) => ids.map((id) => ({ id, k0: id }));
  const toNode = (row: Record<string, unknown>) => row;
  const keyset = (input: Parameters<typeof compileKeyset>[0]): CompiledKeyset => compileKeyset(input, fields);

  test('one row more than asked says a next page follows; the sort values are not in the nodes', () => {
    const page = connectionOf(keyset({ first: 2 }), rows(1, 2, 3), toNode, 7);
    expect(page.edges.map((e) => e.node)).toEqual([{ id: 1 }, { id: 2 }]);
    expect(page.pageInfo).toEqual({ hasNextPage: true, hasPreviousPage: false, startCursor: page.edges[0].cursor, endCursor: page.edges[1].cursor });
    expect(decoded(page.pageInfo.endCursor!)).toEqual(['id:asc', 2]);
    expect(page.totalCount).toBe(7);
  });

  test('after a cursor, a previous page is known to exist; the last page has no next', () => {
    const after = cursorOf(keyset({}).order, { k0: 2 });
    const page = connectionOf(keyset({ first: 2, after }), rows(3, 4), toNode, null);
    expect(page.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
    expect(page.totalCount).toBeNull();
  });

  test('a backward page is reversed back into the order; its extra row says a previous page exists', () => {
    const before = cursorOf(keyset({}).order, { k0: 9 });
    const page = connectionOf(keyset({ last: 2, before }), rows(8, 7, 6), toNode, null);
    expect(page.edges.map((e) => e.node)).toEqual([{ id: 7 }, { id: 8 }]);
    expect(page.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: true });
  });

  test('no rows: no cursors', () => {
    expect(connectionOf(keyset({ first: 2 }), [], toNode, 0).pageInfo).toEqual({
      hasNextPage: false,
      hasPreviousPage: false,
      startCursor: null,
      endCursor: null,
    });
  });
});
