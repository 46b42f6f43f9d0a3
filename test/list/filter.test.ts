import { randomBytes } from 'node:crypto';
import { svc, expectCleanReplies, call, list, G, inGroup, id, ids, dataIds, total, liveUserCount, expectBadRequest, useService } from '../support/lists.js';

/** REST lists: the filter (every operator, both forms), and values that are plain values (no SQL injection). */
useService();

describe('filter', () => {
  test('the SPEC §5 example', async () => {
    const res = await call('GET', `/user/?filter=${encodeURIComponent('{"status":{"in":[1,2]},"lastName":{"ilike":"sm%"}}')}&orderBy=-createdAt`);
    expect(res.status).toBe(200);
    const expected = await svc.sql<{ id: string }>(
      "select id from users where deleted_at is null and status in (1, 2) and last_name ilike 'sm%' order by created_at desc, id asc",
    );
    expect(total(res)).toBe(expected.length);
    expect(dataIds(res)).toEqual(expected.map((r) => Number(r.id)).slice(0, 20));
    // Within the group: anna (Smith, 1), bob (smithers, 2), dana (SMALL, 1), newest first; zed is deleted.
    const group = await list('user', { filter: inGroup({ status: { in: [1, 2] }, lastName: { ilike: 'sm%' } }), orderBy: '-createdAt' });
    expect(dataIds(group)).toEqual(ids('dana', 'bob', 'anna'));
    expect(total(group)).toBe(3);
  });

  test('the SPEC §5 examples in the expression form', async () => {
    const group = `id ge ${id.anna} and id le ${id.eve}`;
    const first = await list('user', { filter: `${group} and status ge 1 and lastName ne 'x'`, orderBy: 'createdAt desc' });
    expect(first.status).toBe(200);
    expect(dataIds(first)).toEqual(ids('dana', 'carl', 'bob', 'anna'));
    expect(total(first)).toBe(4);
    const second = await list('user', { filter: `${group} and status eq 1 and (lastName eq 'Smith' or not firstName eq "Ann")` });
    expect(dataIds(second)).toEqual(ids('anna', 'dana'));
    // Over the whole table, the expression and the JSON form find the same rows.
    const expression = await list('user', { filter: "status ge 1 and lastName ne 'x'", orderBy: 'createdAt desc' });
    const json = await list('user', { filter: { status: { gte: 1 }, lastName: { ne: 'x' } }, orderBy: '-createdAt' });
    expect(dataIds(expression)).toEqual(dataIds(json));
    expect(total(expression)).toBe(total(json));
  });

  test.each<[string, string, Record<string, unknown>, string[]]>([
    ['eq', 'status eq 1', { status: 1 }, ['anna', 'dana']],
    ['keywords and field names in any case', 'STATUS EQ 1 AND LastName Ne "x"', { status: 1 }, ['anna', 'dana']],
    ['an unquoted word is a string', 'lastName eq Smith', { lastName: 'Smith' }, ['anna']],
    ['single and double quotes', `lastName eq 'Jones' or lastName eq "Brown"`, { lastName: { in: ['Jones', 'Brown'] } }, ['carl', 'eve']],
    ['eq null is "is null"', 'outKey eq null', { outKey: null }, ['bob', 'dana']],
    ['ne null is "is not null"', 'outKey ne null', { outKey: { isNull: false } }, ['anna', 'carl', 'eve']],
    ['gt and le', 'ref gt 10 and ref le 20', { ref: { gt: 10, lte: 20 } }, ['bob', 'dana']],
    ['ge and lt, negative numbers', 'ref ge -5 and ref lt 10', { ref: { gte: -5, lt: 10 } }, ['eve']],
    ['not binds tightest', 'not status eq 1 and ref ge 0', { not: { status: 1 }, ref: { gte: 0 } }, ['bob', 'carl']],
    ['and binds tighter than or', 'status eq 1 or status eq 2 and ref eq 30', { or: [{ status: 1 }, { status: 2, ref: 30 }] }, ['anna', 'dana']],
    ['parentheses', '(status eq 1 or status eq 2) and ref eq 20', { status: { in: [1, 2] }, ref: 20 }, ['bob', 'dana']],
    ['a date with an offset', "createdAt ge '2020-01-03T05:00:00+05:00'", { createdAt: { gte: '2020-01-03T00:00:00Z' } }, ['carl', 'dana', 'eve']],
    ['a doubled quote inside quotes', "lastName eq 'O''Brien'", { lastName: "O'Brien" }, []],
  ])('expression form: %s', async (_name, expression, json, expected) => {
    const group = `id ge ${id.anna} and id le ${id.eve}`;
    const res = await list('user', { filter: `${group} and (${expression})` });
    expect(res.status).toBe(200);
    expect(dataIds(res)).toEqual(ids(...expected));
    expect(total(res)).toBe(expected.length);
    // The JSON form of the same condition finds the same rows.
    expect(dataIds(await list('user', { filter: inGroup(json) }))).toEqual(ids(...expected));
  });

  test.each<[string, string, string]>([
    ['an unknown field', 'nosuch eq 1', 'filter.nosuch'],
    ['password', "password eq ''", 'filter.password'],
  ])('expression form: %s is a 400 naming the field', async (_name, expression, field) => {
    expectBadRequest(await list('user', { filter: expression }), field, 'unknown field');
  });

  test.each<[string, string, string, string]>([
    ['a date that is no date', "createdAt ge 'yesterday'", 'filter.createdAt.ge', 'ISO 8601'],
    ['a bare date (no time, no offset)', 'createdAt Lt 2020-01-03', 'filter.createdAt.Lt', 'ISO 8601'],
    ['a text for a number, inside and', "status eq 1 and ref ne 'x'", 'filter.and[1].ref.ne', 'integer'],
  ])('expression form: %s is a 400 naming the operator as written', async (_name, expression, field, message) => {
    expectBadRequest(await list('user', { filter: expression }), field, message);
  });

  test('field names in the JSON form and in orderBy match in any case', async () => {
    expect(dataIds(await list('user', { filter: inGroup({ LASTNAME: 'Smith' }) }))).toEqual(ids('anna'));
    expect(dataIds(await list('user', { filter: inGroup({ Status: { in: [1, 2] }, outkey: null }) }))).toEqual(ids('bob', 'dana'));
    const ordered = await list('user', { filter: inGroup(), orderBy: 'LastName DESC' });
    expect(ordered.status).toBe(200);
    expect(dataIds(ordered)).toEqual(ids('bob', 'anna', 'dana', 'carl', 'eve'));
    expect(dataIds(await list('user', { filter: inGroup(), orderBy: '-CreatedAt' }))).toEqual(ids('eve', 'dana', 'carl', 'bob', 'anna'));
    expect(dataIds(await list('user', { filter: inGroup(), orderBy: 'STATUS desc, lastname' }))).toEqual(ids('carl', 'bob', 'dana', 'anna', 'eve'));
    const tokens = await list('token', { filter: { USERID: { gte: 1 }, TokenType: { ne: 'no-such-type' } }, orderBy: 'ID desc' });
    expect(tokens.status).toBe(200);
    const allTokens = (await svc.sql<{ id: string }>('select id from tokens where deleted_at is null order by id desc limit 20')).map((r) => Number(r.id));
    expect(allTokens.length).toBeGreaterThan(0);
    expect(dataIds(tokens)).toEqual(allTokens);
  });

  test.each<[string, Record<string, unknown>, string[]]>([
    ['equality shorthand', { status: 1 }, ['anna', 'dana']],
    ['string equality shorthand', { lastName: 'Smith' }, ['anna']],
    ['null shorthand is "is null"', { outKey: null }, ['bob', 'dana']],
    ['eq', { status: { eq: 2 } }, ['bob']],
    ['ne', { status: { ne: 1 } }, ['bob', 'carl', 'eve']],
    ['gt', { ref: { gt: 10 } }, ['bob', 'carl', 'dana']],
    ['gte', { ref: { gte: 20 } }, ['bob', 'carl', 'dana']],
    ['lt', { ref: { lt: 20 } }, ['anna', 'eve']],
    ['lte', { ref: { lte: 10 } }, ['anna', 'eve']],
    ['gt and lt on one field', { ref: { gt: 0, lt: 25 } }, ['anna', 'bob', 'dana']],
    ['in', { status: { in: [1, 2] } }, ['anna', 'bob', 'dana']],
    ['in with an empty array', { status: { in: [] } }, []],
    ['nin', { status: { nin: [1, 2] } }, ['carl', 'eve']],
    ['in on a string field', { lastName: { in: ['Jones', 'Brown', 'nobody'] } }, ['carl', 'eve']],
    ['like is case-sensitive', { lastName: { like: 'Sm%' } }, ['anna']],
    ['like with _', { lastName: { like: '_ones' } }, ['carl']],
    ['ilike ignores case', { lastName: { ilike: 'sm%' } }, ['anna', 'bob', 'dana']],
    ['isNull true', { outKey: { isNull: true } }, ['bob', 'dana']],
    ['isNull false', { outKey: { isNull: false } }, ['anna', 'carl', 'eve']],
    ['sibling keys are and-ed', { status: 1, lastName: 'Smith' }, ['anna']],
    ['and', { and: [{ ref: { gte: 10 } }, { ref: { lte: 20 } }] }, ['anna', 'bob', 'dana']],
    ['or', { or: [{ status: 3 }, { ref: -5 }] }, ['carl', 'eve']],
    ['not', { not: { status: 1 } }, ['bob', 'carl', 'eve']],
    ['not null shorthand', { not: { outKey: null } }, ['anna', 'carl', 'eve']],
    ['nested and/or/not', { or: [{ and: [{ status: 1 }, { not: { lastName: 'Smith' } }] }, { lastName: { like: 'Br%' } }] }, ['dana', 'eve']],
    ['or and a sibling key', { or: [{ status: 1 }, { status: 2 }], outKey: null }, ['bob', 'dana']],
    // Several operators on one field all hold, whatever their order, isNull included.
    ['eq and isNull true (never both)', { outKey: { eq: 'k1', isNull: true } }, []],
    ['isNull true and eq, other order', { outKey: { isNull: true, eq: 'k1' } }, []],
    ['ne and isNull false', { outKey: { ne: 'k1', isNull: false } }, ['carl', 'eve']],
    ['isNull false and ne, other order', { outKey: { isNull: false, ne: 'k1' } }, ['carl', 'eve']],
    ['ne with null and gt', { ref: { ne: null, gt: 10 } }, ['bob', 'carl', 'dana']],
    ['two backslashes match one', { lastName: { like: 'Jone\\%' } }, []],
    // An empty filter matches every row: neutral in and, true in or; not {} matches none.
    ['an empty filter inside or', { or: [{}, { status: 3 }] }, ['anna', 'bob', 'carl', 'dana', 'eve']],
    ['an empty and inside or', { or: [{ and: [{}] }, { status: 3 }] }, ['anna', 'bob', 'carl', 'dana', 'eve']],
    ['an empty filter inside and', { and: [{}, { status: 3 }] }, ['carl']],
    ['not of an empty filter', { not: {} }, []],
  ])('%s', async (_name, filter, expected) => {
    const res = await list('user', { filter: inGroup(filter) });
    expect(res.status).toBe(200);
    expect(dataIds(res)).toEqual(ids(...expected));
    expect(total(res)).toBe(expected.length);
  });

  test('id filters', async () => {
    const res = await list('user', { filter: { id: { in: ids('bob', 'eve', 'zed') } } });
    expect(dataIds(res)).toEqual(ids('bob', 'eve'));
    const gt = await list('user', { filter: inGroup({ id: { gt: id.carl } }) });
    expect(dataIds(gt)).toEqual(ids('dana', 'eve'));
  });

  test('dates are compared as instants, whatever the offset they are written with', async () => {
    // 2020-01-03T05:00:00+05:00 is 2020-01-03T00:00:00Z: carl's createdAt.
    const gte = await list('user', { filter: inGroup({ createdAt: { gte: '2020-01-03T05:00:00+05:00' } }) });
    expect(gte.status).toBe(200);
    expect(dataIds(gte)).toEqual(ids('carl', 'dana', 'eve'));
    const gt = await list('user', { filter: inGroup({ createdAt: { gt: '2020-01-03T00:00:00.000Z' } }) });
    expect(dataIds(gt)).toEqual(ids('dana', 'eve'));
    // As text "2020-01-02T20:00:00-05:00" sorts before "2020-01-03…"; as an instant it is after it.
    const lt = await list('user', { filter: inGroup({ createdAt: { lt: '2020-01-02T20:00:00-05:00' } }) });
    expect(dataIds(lt)).toEqual(ids('anna', 'bob', 'carl'));
    const eq = await list('user', { filter: inGroup({ createdAt: '2020-01-04T00:00:00Z' }) });
    expect(dataIds(eq)).toEqual(ids('dana'));
  });

  test.each<[string, unknown, string, string | RegExp | undefined]>([
    ['unknown field', { nosuch: 1 }, 'filter.nosuch', 'unknown field'],
    ['password is not filterable', { password: '' }, 'filter.password', 'unknown field'],
    ['rememberToken is not filterable', { rememberToken: null }, 'filter.rememberToken', 'unknown field'],
    ['unknown field inside or', { or: [{ status: 1 }, { nosuch: 1 }] }, 'filter.or[1].nosuch', 'unknown field'],
    ['unknown operator', { status: { regex: '.*' } }, 'filter.status.regex', 'unknown operator'],
    ['SQL operator name', { status: { $gt: 1 } }, 'filter.status.$gt', 'unknown operator'],
    ['string for status', { status: '1' }, 'filter.status.eq', 'must be an integer'],
    ['string for status in gt', { status: { gt: 'a' } }, 'filter.status.gt', 'must be an integer'],
    ['string in an in list of a number field', { status: { in: [1, 'two'] } }, 'filter.status.in', 'integer'],
    ['number for a text field', { lastName: 5 }, 'filter.lastName.eq', 'must be a string'],
    ['status beyond 32 bits', { status: 2 ** 31 }, 'filter.status.eq', 'between'],
    ['invalid date', { createdAt: { gte: 'yesterday' } }, 'filter.createdAt.gte', 'ISO 8601'],
    ['date without an offset', { createdAt: { gte: '2020-01-03T00:00:00' } }, 'filter.createdAt.gte', 'ISO 8601'],
    ['like on a number field', { status: { like: '1%' } }, 'filter.status.like', 'text'],
    ['ilike on a date field', { createdAt: { ilike: '2020%' } }, 'filter.createdAt.ilike', 'text'],
    ['in with a non-array', { status: { in: 1 } }, 'filter.status.in', 'array'],
    ['isNull with a non-boolean', { outKey: { isNull: 'yes' } }, 'filter.outKey.isNull', 'true or false'],
    ['empty operator object', { status: {} }, 'filter.status', undefined],
    ['and with a non-array', { and: { status: 1 } }, 'filter.and', 'array'],
    ['or with an empty array', { or: [] }, 'filter.or', 'array'],
    ['not with a non-object', { not: 1 }, 'filter.not', 'object'],
    // Text not starting with "{" is the expression form: these do not parse as one.
    ['filter is an array (not the JSON form: it does not start with "{")', [1, 2], 'filter', 'position'],
    ['filter is a JSON string', 'status', 'filter', 'position'],
  ])('%s → 400 naming the problem', async (_name, filter, field, message) => {
    const res = await list('user', { filter: typeof filter === 'string' ? JSON.stringify(filter) : filter });
    expectBadRequest(res, field, message);
  });

  test.each<[string, unknown, string, string]>([
    ['a like pattern ending in a lone backslash', { lastName: { like: 'Sm\\' } }, 'filter.lastName.like', 'backslash'],
    ['an ilike pattern ending in three backslashes', { lastName: { ilike: '%\\\\\\' } }, 'filter.lastName.ilike', 'backslash'],
    ['a date before year 1 in UTC', { createdAt: { lt: '0001-01-01T00:00:00+01:00' } }, 'filter.createdAt.lt', '0001-01-01'],
    ['year 0', { createdAt: { gt: '0000-01-01T00:00:00Z' } }, 'filter.createdAt.gt', '0001-01-01'],
    ['a date after year 9999 in UTC', { createdAt: { in: ['9999-12-31T23:59:59-12:00'] } }, 'filter.createdAt.in', '9999-12-31'],
  ])('%s → 400 naming it (the database never sees it)', async (_name, filter, field, message) => {
    expectBadRequest(await list('user', { filter }), field, message);
  });

  test('dates in any ISO 8601 form: basic, ordinal, week, comma fractions, reduced precision', async () => {
    // All of these are carl's createdAt, 2020-01-03T00:00:00Z.
    for (const date of ['20200103T000000Z', '2020-003T00:00:00Z', '2020-W01-5T00Z', '2020-01-02T24:00:00,000Z', '2020-01-03T01+01', '2020-01-02T19:00-0500']) {
      const res = await list('user', { filter: inGroup({ createdAt: date }) });
      expect({ date, status: res.status, ids: dataIds(res) }).toEqual({ date, status: 200, ids: ids('carl') });
    }
    for (const date of ['2020-01-03 00:00:00Z', '2020-01-03T00:00:00z', '2020-01-03T00:00:00']) {
      expectBadRequest(await list('user', { filter: inGroup({ createdAt: date }) }), 'filter.createdAt.eq', 'ISO 8601');
    }
  });

  test.each(['constructor', 'toString', 'hasOwnProperty', 'valueOf', '__proto__'])(
    'a field named %s (an Object.prototype name) is an unknown field: 400, in filter and orderBy, on every list',
    async (name) => {
      const filter = `{"${name}":1}`; // as text: an object literal would not make "__proto__" a key
      for (const path of ['/user/', '/token/', '/application/', `/user/${id.anna}/application/`, `/user/${id.anna}/role/`]) {
        const res = await call('GET', `${path}?filter=${encodeURIComponent(filter)}`);
        expectBadRequest(res, `filter.${name}`, 'unknown field');
        if (name !== '__proto__') expectBadRequest(await call('GET', `${path}?orderBy=${name}`), 'orderBy', 'unknown field');
      }
    },
  );

  test('a filter at its limits fits in a URL: 1000 token values in an in list', async () => {
    const values = Array.from({ length: 1000 }, (_, i) => `not-a-token-${String(i).padStart(12, '0')}`);
    const res = await list('token', { filter: { accessToken: { in: values } } });
    expect(res.status).toBe(200);
    expect(total(res)).toBe(0);
  });

  test('invalid JSON (a text starting with "{") → 400 naming filter', async () => {
    for (const text of ['{status:1}', '{"status":1', "{'status':1}", '  {"status":1}}', '{status eq 1}']) {
      expectBadRequest(await list('user', { filter: text }), 'filter', 'JSON');
    }
    // Anything else is the expression form, and a 400 naming the position when it does not parse.
    for (const text of ['null,', 'status eq', 'status eq 1 and', '(status eq 1', 'status like 1', "lastName eq 'x"]) {
      expectBadRequest(await list('user', { filter: text }), 'filter', 'position');
    }
  });

  test('in/nin take at most 1000 values', async () => {
    const thousand = Array.from({ length: 1000 }, (_, i) => 10_000_000 + i);
    const ok = await list('user', { filter: inGroup({ id: { in: [...thousand.slice(0, 999), id.carl] } }) });
    expect(ok.status).toBe(200);
    expect(dataIds(ok)).toEqual(ids('carl'));
    const okNin = await list('user', { filter: inGroup({ status: { nin: thousand } }) });
    expect(okNin.status).toBe(200);
    expect(total(okNin)).toBe(5);
    expectBadRequest(await list('user', { filter: { id: { in: [...thousand, 1] } } }), 'filter.id.in', 'at most 1000');
    expectBadRequest(await list('user', { filter: { status: { nin: [...thousand, 1] } } }), 'filter.status.nin', 'at most 1000');
  });

  test('nesting deeper than 8 → 400; 8 levels are fine', async () => {
    const nested = (nots: number) => {
      let node: Record<string, unknown> = { status: 1 };
      for (let i = 0; i < nots; i++) node = { not: node };
      return node;
    };
    // The top object is level 1; seven "not"s make eight levels (an even count of nots: status 1).
    const eight = await list('user', { filter: inGroup({ and: [nested(6)] }) });
    expect(eight.status).toBe(200);
    expect(dataIds(eight)).toEqual(ids('anna', 'dana'));
    const eightNots = await list('user', { filter: nested(7) });
    expect(eightNots.status).toBe(200);
    const nine = await list('user', { filter: nested(8) });
    expect(nine.status).toBe(400);
    expect(nine.body.error).toBe('BAD_REQUEST');
    expect(nine.body.details.some((d: { message: string }) => /deeper than 8/.test(d.message))).toBe(true);
    const deep = await list('user', { filter: nested(200) });
    expect(deep.status).toBe(400);
  });

  test('more than 100 conditions → 400; 100 are fine', async () => {
    const conditions = (n: number) => ({ or: Array.from({ length: n }, (_, i) => ({ ref: i === 0 ? 30 : 100000 + i })) });
    const hundred = await list('user', { filter: { and: [conditions(100)] } });
    expect(hundred.status).toBe(200);
    expect(dataIds(hundred)).toEqual(ids('carl'));
    const tooMany = await list('user', { filter: conditions(101) });
    expectBadRequest(tooMany, 'filter', /at most 100/);
    // Each operator counts as one condition: 50 × (gt, lt) is 100, 51 × is 102.
    const pairs = (n: number) => ({ or: Array.from({ length: n }, (_, i) => ({ ref: { gt: 29 - i, lt: 31 + i } })) });
    const fifty = await list('user', { filter: inGroup({ and: [{ status: 3 }, pairs(49)] }) });
    expect(fifty.status).toBe(200);
    expect(dataIds(fifty)).toEqual(ids('carl'));
    expectBadRequest(await list('user', { filter: pairs(51) }), 'filter', /at most 100/);
  });

  test('several problems are all reported', async () => {
    const res = await list('user', { filter: { nosuch: 1, status: 'x' }, orderBy: 'bogus', page: 'x' });
    expect(res.status).toBe(400);
    const fields = res.body.details.map((d: { field: string }) => d.field);
    expect(fields).toEqual(expect.arrayContaining(['filter.nosuch', 'filter.status.eq', 'orderBy', 'page']));
  });
});

describe('values are plain values (no SQL injection)', () => {
  // On the embedded database values are escaped into the statement instead (see mikro-orm.config.ts).
  const onPostgreSQL = process.env.DATABASE_URL ? test : test.skip;
  onPostgreSQL('values travel as bind parameters: no statement sent carries a filter value, a written value or the bearer', async () => {
    const marker = `Mark'er-${randomBytes(4).toString('hex')}`;
    svc.queries.length = 0;
    const created = await call('POST', '/user/', { body: { firstName: `${G}-bound`, lastName: marker, outKey: marker } });
    expect(created.status).toBe(201);
    const listed = await list('user', { filter: { lastName: marker, or: [{ outKey: { like: `${marker}%` } }, { status: { in: [7, 8] } }] } });
    expect(dataIds(listed)).toEqual([created.body]);
    const sent = svc.queries.join('\n');
    expect(sent).not.toContain(marker.slice(5)); // neither the value nor its escaped form
    expect(sent).not.toContain(svc.adminToken);
    expect(sent).toMatch(/t\.last_name = \$\d+/);
    expect(sent).toMatch(/in \(\$\d+, \$\d+\)/);
    expect(sent).toMatch(/access_token_hmac = \$1/);
    expect((await call('DELETE', `/user/${created.body}`)).body).toBe(1);
  });

  test('SQL-looking values match nothing and change nothing', async () => {
    const before = await liveUserCount();
    const [{ count: tokensBefore }] = await svc.sql<{ count: string }>('select count(*) from tokens');
    for (const filter of [
      { lastName: "x' or '1'='1" },
      { lastName: { like: "%' or '1'='1' --" } },
      { lastName: { ilike: "'; drop table users; --" } },
      { lastName: { in: ["x') or ('1'='1", "'; delete from users; --"] } },
      { outKey: { ne: "' or 1=1 --" }, lastName: "Smith' --" },
    ]) {
      const res = await list('user', { filter });
      expect({ filter, status: res.status, total: total(res), data: res.body }).toEqual({ filter, status: 200, total: 0, data: [] });
    }
    // The same in the expression form (quotes doubled inside quotes).
    for (const filter of ["lastName eq 'x'' or ''1''=''1'", `lastName eq "'; drop table users; --"`, "lastName eq 'Smith'' --'"]) {
      const res = await list('user', { filter });
      expect({ filter, status: res.status, total: total(res), data: res.body }).toEqual({ filter, status: 200, total: 0, data: [] });
    }
    const tokenRes = await list('token', { filter: { accessToken: "' or ''='" } });
    expect(tokenRes.status).toBe(200);
    expect(tokenRes.body).toEqual([]);
    expect(total(tokenRes)).toBe(0);
    // A field name is never SQL either.
    expectBadRequest(await list('user', { filter: { 'id) or (1=1': 1 } }), 'filter.id) or (1=1', 'unknown field');
    expect(await liveUserCount()).toBe(before);
    const [{ count: tokensAfter }] = await svc.sql<{ count: string }>('select count(*) from tokens');
    expect(tokensAfter).toBe(tokensBefore);
    // The table is intact and still answers.
    expect(total(await list('user', { filter: inGroup() }))).toBe(5);
  });

  test('a stored value with quotes and pattern characters matches itself exactly', async () => {
    const odd = { firstName: `${G}-odd`, lastName: "O'Brien%_\\x" };
    const created = await call('POST', '/user/', { body: odd });
    expect(created.status).toBe(201);
    const eq = await list('user', { filter: { lastName: "O'Brien%_\\x" } });
    expect(dataIds(eq)).toEqual([created.body]);
    const like = await list('user', { filter: inGroup({ lastName: { like: "O'Brien%" } }) });
    expect(dataIds(like)).toEqual([created.body]);
    // "%" in an eq value is a literal, not a wildcard.
    expect(total(await list('user', { filter: { lastName: "O'Brien%" } }))).toBe(0);
    expect((await call('DELETE', `/user/${created.body}`)).body).toBe(1);
  });
});

describe('every reply of this file', () => {
  test('no 500, no password/rememberToken keys, no SQL or stack in error bodies', () => {
    expectCleanReplies();
  });
});
