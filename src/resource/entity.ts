import { ArrayType, BigIntType, EntitySchema } from '@mikro-orm/core';
import type { Field } from './field.js';
import type { Resource } from './resource.js';

/**
 * The ORM's entity metadata of a resource, derived from its fields: MikroORM knows every table and
 * column the definitions describe (a test compares them with what the migrations made, so that a
 * field added to a definition without its migration, or the other way round, fails CI).
 */
function propertiesOf(name: string, field: Field): Record<string, Record<string, unknown>> {
  const common = { nullable: field.nullable };
  switch (field.kind) {
    case 'secret':
      return {
        [`${name}Hmac`]: { type: 'blob', fieldName: field.secretColumns!.hmac, nullable: false },
        [`${name}Cipher`]: { type: 'blob', fieldName: field.secretColumns!.cipher, nullable: false },
      };
    case 'id':
      return { [name]: { type: new BigIntType('number'), fieldName: field.column, primary: true, autoincrement: true } };
    case 'reference':
    case 'safeInt':
      return { [name]: { type: new BigIntType('number'), fieldName: field.column, ...common } };
    case 'int32':
    case 'revision':
      return { [name]: { type: 'integer', fieldName: field.column, ...common } };
    case 'date':
      return { [name]: { type: 'datetime', columnType: 'timestamptz(3)', fieldName: field.column, ...common } };
    case 'json':
      return { [name]: { type: 'json', fieldName: field.column, ...common } };
    case 'boolean':
      return { [name]: { type: 'boolean', fieldName: field.column, ...common } };
    case 'textList':
      return { [name]: { type: new ArrayType(), columnType: 'text[]', fieldName: field.column, ...common } };
    default:
      return { [name]: { type: 'string', length: field.max, fieldName: field.column, ...common } };
  }
}

export function entitySchemaOf(resource: Resource): EntitySchema {
  const properties = Object.assign({}, ...resource.entries.map(([name, field]) => propertiesOf(name, field)));
  return new EntitySchema({ name: resource.type, tableName: resource.table, properties });
}
