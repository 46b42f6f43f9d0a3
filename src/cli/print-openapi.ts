import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { serviceDocument } from '../app.js';
import { Keyring } from '../db/keyring.js';
import { createServices } from '../services.js';

/**
 * Writes the OpenAPI document of a service with the default settings (no BASE_PATH, metrics on) to
 * the file given, or to stdout, without a database: the route tables only hold their services'
 * functions, and the token key only seals what a request writes (a throw-away one does). `npm run
 * lint` runs Spectral on it; `npm run openapi` also regenerates the typed client's types from it. A
 * running service's `/openapi.json` is the same document for its own settings.
 */
const document = serviceDocument({ basePath: '', metrics: true }, createServices(Keyring.of(randomBytes(32))));
const text = `${JSON.stringify(document, null, 2)}\n`;
const file = process.argv[2];
if (file) await writeFile(file, text);
else process.stdout.write(text);
