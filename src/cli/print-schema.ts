import { writeFile } from 'node:fs/promises';
import { schemaText, subgraphSchemaText } from '../graphql/schema.js';
import { serviceSchema, serviceSubgraphSchema } from '../services.js';

/** `npm run schema`: writes schema.graphql and schema.subgraph.graphql (a test fails when a checked-in file is stale). */
await writeFile(new URL('../../../schema.graphql', import.meta.url), schemaText(await serviceSchema()));
await writeFile(new URL('../../../schema.subgraph.graphql', import.meta.url), await subgraphSchemaText(await serviceSubgraphSchema()));
process.stdout.write('schema.graphql and schema.subgraph.graphql written\n');
