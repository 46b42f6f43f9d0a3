import { writeFile } from 'node:fs/promises';
import { schemaText } from '../graphql/schema.js';
import { serviceSchema } from '../services.js';

/** `npm run schema`: writes schema.graphql (a test fails when the checked-in file is stale). */
await writeFile(new URL('../../../schema.graphql', import.meta.url), schemaText(await serviceSchema()));
process.stdout.write('schema.graphql written\n');
