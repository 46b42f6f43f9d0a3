import { ormOptions } from './src/db/orm.js';
import { databaseSchemaOf } from './src/module/registry.js';
import { MODULES } from './src/modules.js';

// For the MikroORM CLI (`npx mikro-orm …`) against DATABASE_URL: the entities and migrations of src/modules.ts.
export default ormOptions(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', databaseSchemaOf(MODULES));
