import { jest } from '@jest/globals';
import { printSchema } from 'graphql';
import { AppError } from '../../src/errors.js';
import { liveTokenGate } from '../../src/auth/authenticate.js';
import { compileList } from '../../src/list/list.js';
import { entitySchemaOf } from '../../src/resource/entity.js';
import { field } from '../../src/resource/field.js';
import { parseAttrs, parseId, parseWrite } from '../../src/resource/input.js';
import { defineResource } from '../../src/resource/resource.js';
import { applyStatement, deleteStatement, insertStatement, updateStatement } from '../../src/resource/writes.js';
import * as realUsers from '../../src/users/user.resource.js';
import { fieldsOf, writableOf } from '../support/contracts.js';
import { refusal } from '../support/refusal.js';

/**
 * The resource definitions and what is derived from them, without a database: the read's select
 * list, the list language's fields, write input parsing, the ORM's entity metadata, the OpenAPI
 * schemas and the GraphQL types. The last test adds a made-up field to the users' definition (and
 * nothing else) and finds it everywhere.
 */
const { users } = realUsers;

describe('a resource definition', () => {
  test('reads its output fields under their wire names, never a hidden one', () => {
    expect(users.columns).toContain('t.first_name as "firstName"');
    expect(users.columns).toContain('t.created_at as "createdAt"');
    expect(users.columns).not.toContain('password');
    expect(users.columns).not.toContain('remember_token');
    expect(users.columns).not.toContain('deleted_at');
    expect(users.columnsWithDeletedAt.endsWith('t.deleted_at as "deletedAt"')).toBe(true);
    expect(users.output.map(([name]) => name)).toEqual(fieldsOf('user'));
    expect(users.writable.map(([name]) => name)).toEqual(writableOf('user'));
    expect(users.permissions).toEqual({ read: 'user:read', write: 'user:write' });
  });

  test('reads only the fields asked for, the id always, nothing it does not know', () => {
    expect(users.columnsOf(new Set(['lastName', 'firstName']))).toBe('t.id as "id", t.first_name as "firstName", t.last_name as "lastName"');
    expect(users.columnsOf(new Set(['__typename', 'applications', 'password']))).toBe('t.id as "id"');
    expect(users.columnsOf(new Set(['status']), true)).toBe('t.id as "id", t.status as "status", t.deleted_at as "deletedAt"');
  });

  test('lists on its listed fields by column and kind; hidden ones are not in the list language', () => {
    expect(users.listFields.firstName).toEqual({ column: 't.first_name', kind: 'string' });
    expect(users.listFields.outKey).toEqual({ column: 't.out_key', kind: 'string', nullable: true });
    expect(users.listFields.password).toBeUndefined();
    const list = compileList({ filter: { lastName: { eq: 'Ng' }, status: { gte: 1 } }, orderBy: 'lastName desc' }, users.listFields);
    expect(list.where?.sql).toContain('t.last_name');
    expect(list.where?.params).toEqual(expect.arrayContaining(['Ng', 1]));
    expect(list.order[0]).toMatchObject({ column: 't.last_name', direction: 'desc' });
    expect(() => compileList({ filter: { password: { eq: 'x' } } }, users.listFields)).toThrow(AppError);
  });
});

describe('a write statement', () => {
  const caller = { tokenId: 7, userId: 3, scopes: new Set(['*']), client: '', requestId: 'r-1' };
  test("a PATCH's text follows from its shape alone: the same for other values and for the fields in another order, another for other fields", () => {
    const ada = updateStatement(users, 1, { firstName: 'Ada' }, 'patch', { caller });
    const bea = updateStatement(users, 2, { firstName: 'Bea' }, 'patch', { caller: { ...caller, requestId: 'r-2' } });
    expect(bea.text).toBe(ada.text);
    expect(ada.params).toEqual([1, 'Ada', 'Ada', 7, 3, 'r-1']);
    expect(bea.params).toEqual([2, 'Bea', 'Bea', 7, 3, 'r-2']);
    // Every value is a parameter: none is in the text.
    expect(ada.text).not.toMatch(/Ada|r-1/);
    expect(ada.text.match(/\?/g)).toHaveLength(ada.params.length);
    const both = updateStatement(users, 1, { firstName: 'Ada', lastName: 'Lovelace' }, 'patch', { caller });
    expect(both.text).not.toBe(ada.text);
    // The body's order does not make another statement: the resource's order is the text's.
    const reversed = updateStatement(users, 1, { lastName: 'Lovelace', firstName: 'Ada' }, 'patch', { caller });
    expect([reversed.text, reversed.params]).toEqual([both.text, both.params]);
    expect(reversed.gated!(liveTokenGate(1))).toBe(both.gated!(liveTokenGate(1)));
    expect(both.text).toContain('last_name = ?::text');
    expect(both.params).toEqual([1, 'Ada', 'Lovelace', 'Ada', 'Lovelace', 7, 3, 'r-1']);
    // The action is part of the shape (it is written into the audit row).
    expect(updateStatement(users, 1, { firstName: 'Ada' }, 'status', { caller }).text).toContain("'status', 'user'");
    // Service-set columns too.
    const sealed = updateStatement(users, 1, { firstName: 'Ada' }, 'patch', { caller, alsoSet: [{ column: 'remember_token', type: 'text', value: 'x' }] });
    expect(sealed.text).toContain('remember_token = ?::text');
    expect(sealed.params).toEqual([1, 'Ada', 'x', 'Ada', 7, 3, 'r-1']);
  });
});

describe('a write statement with a gate (the token check it carries: src/auth/checked-sql.ts)', () => {
  const caller = { tokenId: 7, userId: 3, scopes: new Set(['*']), client: '', requestId: 'r-1' };
  const statements = {
    create: insertStatement(users, { firstName: 'Ada', lastName: 'Lovelace' }, { caller }),
    'create on a reserved id': insertStatement(users, { firstName: 'Ada', lastName: 'Lovelace' }, { caller, claimId: 12 }),
    patch: updateStatement(users, 1, { firstName: 'Ada' }, 'patch', { caller }),
    'patch, optimistic': updateStatement(users, 1, { firstName: 'Ada' }, 'patch', { caller, optimistic: true }),
    'delete with its cascade': deleteStatement(users, 1, 'delete', { caller }),
    'apply id': applyStatement(users, { caller }),
  };

  test.each(Object.entries(statements))('%s: the gate first, its parameters before the statement’s, and the write’s first step requires it', (_, statement) => {
    for (const keys of [1, 2]) {
      const gate = liveTokenGate(keys);
      const text = statement.gated!(gate);
      expect(text.startsWith(`with ${gate.ctes}, `)).toBe(true);
      // The hashes (one per key), the token's id, user and scope, then the statement's own.
      expect(text.match(/\?/g)).toHaveLength(keys + 3 + statement.params.length);
      // Its first step (the row it reads or locks, the reservation it claims, the row it inserts) is the gated one.
      const firstStep = text.slice(`with ${gate.ctes}, `.length).split(' as (')[1];
      expect(firstStep).toContain(gate.condition);
      expect(text.split(gate.condition)).toHaveLength(2);
      // Without a gate, the plain text.
      expect(statement.text).not.toContain('hinted');
    }
  });
});

describe('write input, parsed at the edge', () => {
  test('a create takes the writable fields, fills defaults and refuses what is missing, naming each field', () => {
    const values = parseWrite(users, { firstName: 'Ada', lastName: 'Lovelace' }, 'create');
    expect(values).toMatchObject({ firstName: 'Ada', lastName: 'Lovelace', status: 0 });
    const missing = refusal(() => parseWrite(users, { firstName: 'Ada' }, 'create'));
    expect(missing.code).toBe('BAD_REQUEST');
    expect(missing.details).toEqual([expect.objectContaining({ field: 'lastName' })]);
  });

  test('a patch takes only what is given; unknown, hidden and service fields are dropped, wrong types refused', () => {
    expect(parseWrite(users, { lastName: 'Byron', password: 'x', id: 9, createdAt: 'now', nonsense: 1 }, 'patch')).toEqual({ lastName: 'Byron' });
    const wrong = refusal(() => parseWrite(users, { status: 'active', firstName: 'x'.repeat(256) }, 'patch'));
    expect(wrong.details?.map((d) => d.field).sort()).toEqual(['firstName', 'status']);
  });

  test('Attrs names writable fields only; ids are positive safe integers', () => {
    expect(parseAttrs('firstName, lastName', users)).toEqual(['firstName', 'lastName']);
    expect(parseAttrs(undefined, users)).toBeUndefined();
    expect(parseAttrs('firstName, createdAt', users)).toEqual(['firstName']); // a read-only name is skipped
    expect(refusal(() => parseAttrs('nickname', users)).details?.[0].field).toBe('Attrs');
    expect(parseId('42')).toBe(42);
    for (const bad of ['0', '-1', '1.5', 'abc', '9007199254740993']) expect(refusal(() => parseId(bad)).code).toBe('BAD_REQUEST');
  });
});

test('the ORM entity of a resource has a property per column, secrets as their two columns', async () => {
  const { tokens } = await import('../../src/tokens/token.resource.js');
  const user = entitySchemaOf(users).meta;
  expect(user.tableName).toBe('users');
  expect(Object.values(user.properties).map((p) => p.fieldNames?.[0] ?? (p as { fieldName?: string }).fieldName)).toEqual(
    expect.arrayContaining(['first_name', 'password', 'remember_token', 'deleted_at']),
  );
  const token = Object.keys(entitySchemaOf(tokens).meta.properties);
  expect(token).toEqual(expect.arrayContaining(['accessTokenHmac', 'accessTokenCipher', 'refreshTokenHmac', 'refreshTokenCipher']));
});

test('a field added to the users definition, and nowhere else, shows up in every derived artifact', async () => {
  const withNickname = defineResource({
    name: users.name,
    label: users.label,
    table: users.table,
    type: users.type,
    inputDescription: users.inputDescription,
    cascade: users.cascade,
    fields: { ...users.fields, nickname: field.string(64, { nullable: true }) },
  });
  jest.unstable_mockModule('../../src/users/user.resource.js', () => ({ ...realUsers, users: withNickname }));
  const { serviceDocument } = await import('../../src/app.js');
  const { createServices, serviceSchema: graphQLSchema } = await import('../../src/services.js');
  const { Keyring } = await import('../../src/db/keyring.js');

  // Reads, lists, writes, the ORM.
  expect(withNickname.columns).toContain('t.nickname as "nickname"');
  expect(withNickname.listFields.nickname).toEqual({ column: 't.nickname', kind: 'string', nullable: true });
  expect(parseWrite(withNickname, { nickname: 'Ada' }, 'patch')).toEqual({ nickname: 'Ada' });
  expect(refusal(() => parseWrite(withNickname, { nickname: 'x'.repeat(65) }, 'patch')).details?.[0].field).toBe('nickname');
  expect(Object.keys(entitySchemaOf(withNickname).meta.properties)).toContain('nickname');

  // OpenAPI: the record, and both write bodies.
  const schemas = (
    serviceDocument({ basePath: '', metrics: false }, createServices(Keyring.of(Buffer.alloc(32, 1)))) as {
      components: { schemas: Record<string, { properties: object }> };
    }
  ).components.schemas;
  const withIt = Object.entries(schemas)
    .filter(([, s]) => s.properties && 'nickname' in s.properties)
    .map(([name]) => name);
  expect(withIt).toEqual(expect.arrayContaining(['User', 'UserCreate', 'UserPatch']));

  // GraphQL: the object type, its inputs, its filter and its order.
  const sdl = printSchema(await graphQLSchema());
  for (const type of ['type User ', 'input UserInput ', 'input UserPatch ', 'input UserFilter ', 'input UserOrderBy ']) {
    const block = sdl.slice(sdl.indexOf(type), sdl.indexOf('}', sdl.indexOf(type)));
    expect(block).toMatch(/\bnickname: /);
  }
});
