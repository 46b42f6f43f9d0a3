import { getNamedType, isLeafType, isObjectType } from 'graphql';
import { serviceDocument } from '../../src/app.js';
import { Keyring } from '../../src/db/keyring.js';
import { createServices, serviceSchema } from '../../src/services.js';
import { CONTRACTS, fieldsOf, recordOf, TYPE_NAMES, writableOf, type ContractName } from '../support/contracts.js';

/**
 * The golden wire contracts (test/support/contracts.ts) against what src/ derives from its
 * definitions, without a database: OpenAPI's record and write schemas, GraphQL's object types. A
 * field added to or removed from a definition fails here until the contract is changed on purpose;
 * the tests that derive their selections and expected records from the contracts then follow.
 */

const names = Object.keys(CONTRACTS) as ContractName[];

type Schema = { properties: Record<string, unknown>; required?: string[] };
const schemas = (
  serviceDocument({ basePath: '', metrics: false }, createServices(Keyring.of(Buffer.alloc(32, 1)))) as { components: { schemas: Record<string, Schema> } }
).components.schemas;

test.each(names)("the OpenAPI record of %s is the contract's fields, in order, each always present", (name) => {
  const schema = schemas[TYPE_NAMES[name]];
  expect(Object.keys(schema.properties)).toEqual(fieldsOf(name));
  expect(schema.required).toEqual(fieldsOf(name));
});

test.each(names.filter((name) => name !== 'applicationLink'))(
  "the OpenAPI write bodies of %s are the contract's writable fields (a create may also reserve its id)",
  (name) => {
    const type = TYPE_NAMES[name];
    expect(Object.keys(schemas[`${type}Replace`].properties)).toEqual(writableOf(name));
    expect(Object.keys(schemas[`${type}Patch`].properties)).toEqual(writableOf(name));
    expect(Object.keys(schemas[`${type}Create`].properties)).toEqual([...writableOf(name), 'id']);
  },
);

test.each(names)("the GraphQL type of %s has the contract's fields, and besides them only deletedAt and its relations", async (name) => {
  const type = (await serviceSchema()).getType(TYPE_NAMES[name]);
  if (!isObjectType(type)) throw new Error(`${TYPE_NAMES[name]} is not an object type`);
  const leaves = Object.values(type.getFields())
    .filter((field) => isLeafType(getNamedType(field.type)) && field.name !== 'deletedAt')
    .map((field) => field.name);
  expect(leaves.sort()).toEqual(fieldsOf(name).sort());
});

test('recordOf: the defaults of the contract, what is given, and no field outside it', () => {
  const at = '2026-11-21T09:30:00.000Z';
  expect({ id: 3, name: 'r', createdAt: at, updatedAt: at }).toEqual(recordOf('role', { id: 3, name: 'r' }));
  expect({ id: 3, name: 'r', createdAt: '2026-11-21T09:30:00Z', updatedAt: at }).not.toEqual(recordOf('role', { name: 'r' }));
  expect({ id: 3, name: 'r', createdAt: at, updatedAt: at, deletedAt: null }).not.toEqual(recordOf('role', { name: 'r' }));
  expect(() => recordOf('role', {})).toThrow('recordOf(role): name has no default and must be given');
  expect(() => recordOf('role', { name: 'r', nickname: 'x' })).toThrow('recordOf(role): nickname is not in the contract');
});
