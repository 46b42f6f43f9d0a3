import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { createGate } from '../../src/graphql/gate.js';
import { serviceSchema as graphQLSchema } from '../../src/services.js';
import { createLogger } from '../../src/observability/log.js';
import { startService } from '../../src/server.js';
import { newTestDatabase } from '../support/service.js';

/**
 * A list of trusted documents that cannot be read or is not a list of valid operations under their
 * SHA-256 stops the start, saying why (main.ts prints it as `Could not start: <reason>`): read
 * by the gate alone, then once through the whole start.
 */
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'uts-lists-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const VIEWER = 'query Viewer { viewer { id } }';
const manifest = (operations: unknown[], extra: Record<string, unknown> = {}) => ({
  format: 'apollo-persisted-query-manifest',
  version: 1,
  operations,
  ...extra,
});

async function load(content: string | null): Promise<string> {
  const path = join(dir, `list-${Math.random().toString(36).slice(2)}.json`);
  if (content !== null) await writeFile(path, content);
  const gate = createGate({
    schema: await graphQLSchema(),
    introspection: true,
    log: createLogger('silent'),
    metrics: null,
    trustedDocuments: { path, mode: 'enforce' },
  });
  return gate.then(
    () => 'started',
    (err: Error) => `${err.name}: ${err.message}`,
  );
}

test.each([
  ['an unreadable path', null, /the file cannot be read \(ENOENT\)/],
  ['a file that is not JSON', '{"format": ', /the file is not JSON/],
  ['JSON that is not an object', '["query { viewer { id } }"]', /must be a JSON object/],
  ['another manifest format', JSON.stringify(manifest([], { format: 'relay' })), /format "relay" is not apollo-persisted-query-manifest/],
  ['another manifest version', JSON.stringify(manifest([], { version: 2 })), /version 2 of the manifest format is not known/],
  ['a manifest without operations', JSON.stringify({ format: 'apollo-persisted-query-manifest', version: 1 }), /has no "operations" list/],
  [
    'an operation without a body',
    JSON.stringify(manifest([{ id: sha256(VIEWER), name: 'Viewer', type: 'query' }])),
    /operation "Viewer" needs a string "id" and a string "body"/,
  ],
  [
    'an id that is not a SHA-256',
    JSON.stringify(manifest([{ id: 'viewer-1', name: 'Viewer', type: 'query', body: VIEWER }])),
    /operation "Viewer": the id must be the SHA-256/,
  ],
  [
    'an id that is not its body’s',
    JSON.stringify(manifest([{ id: sha256('query Other { viewer { id } }'), name: 'Viewer', type: 'query', body: VIEWER }])),
    /operation "Viewer": the id is not the SHA-256 of its document/,
  ],
  [
    'an operation the schema does not have',
    JSON.stringify(manifest([{ id: sha256('query Old { viewer { gone } }'), name: 'Old', type: 'query', body: 'query Old { viewer { gone } }' }])),
    /operation "Old" is not valid against this service's schema: Cannot query field "gone" on type "Token"/,
  ],
  ['a plain map with a document that is not a string', JSON.stringify({ [sha256(VIEWER)]: { query: VIEWER } }), /is not a string/],
  ['a plain map whose key is not its document’s SHA-256', JSON.stringify({ [sha256('x')]: VIEWER }), /the id is not the SHA-256 of its document/],
])('%s: a ConfigError naming GRAPHQL_TRUSTED_DOCUMENTS and what is wrong', async (_label, content, reason) => {
  const result = await load(content);
  expect(result).toMatch(/^ConfigError: GRAPHQL_TRUSTED_DOCUMENTS \(.*\): /);
  expect(result).toMatch(reason);
});

test('both formats load when they are right', async () => {
  expect(await load(JSON.stringify(manifest([{ id: sha256(VIEWER), name: 'Viewer', type: 'query', body: VIEWER }])))).toBe('started');
  expect(await load(JSON.stringify({ [sha256(VIEWER)]: VIEWER }))).toBe('started');
});

test('the service does not start with a bad list, and says why', async () => {
  const database = await newTestDatabase();
  const path = join(dir, 'bad.json');
  await writeFile(path, '{ not json');
  try {
    const config = loadConfig({ ...database.env, TOKEN_KEY: 'a'.repeat(43) + '=', PORT: '0', GRAPHQL_TRUSTED_DOCUMENTS: path, LOG_LEVEL: 'silent' });
    const started = startService(config, createLogger('silent'));
    await expect(started).rejects.toMatchObject({
      name: 'ConfigError',
      message: expect.stringMatching(/^GRAPHQL_TRUSTED_DOCUMENTS \(.*bad\.json\): the file is not JSON/),
    });
  } finally {
    await database.drop();
  }
});

test('GRAPHQL_TRUSTED_DOCUMENTS_MODE is enforce or log', () => {
  expect(loadConfig({}).graphqlTrustedDocumentsMode).toBe('enforce');
  expect(loadConfig({ GRAPHQL_TRUSTED_DOCUMENTS_MODE: 'LOG' }).graphqlTrustedDocumentsMode).toBe('log');
  expect(() => loadConfig({ GRAPHQL_TRUSTED_DOCUMENTS_MODE: 'warn' })).toThrow('GRAPHQL_TRUSTED_DOCUMENTS_MODE must be enforce or log, got "warn"');
});
