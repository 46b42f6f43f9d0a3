import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The Node version the service declares and the ones it is run with: package.json's engines, the
 * `node` devDependency that npm puts first on PATH for every npm script, the lock file, the
 * Dockerfile's images, and what the dependencies themselves require (MikroORM 7 needs 22.17).
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const pkg = JSON.parse(read('package.json')) as {
  engines: { node: string };
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
/** A dependency's package.json as installed (read as a file: not every package exports it). */
const manifest = (name: string) => JSON.parse(read(`node_modules/${name}/package.json`)) as { engines?: { node?: string } };

type Version = [number, number, number];
const parse = (text: string): Version => {
  const [major, minor = 0, patch = 0] = text.split('.').map(Number);
  return [major, minor, patch];
};
const atLeast = (a: Version, b: Version) => (a[0] !== b[0] ? a[0] > b[0] : a[1] !== b[1] ? a[1] > b[1] : a[2] >= b[2]);
/** The lower bound of a range written `>=X.Y.Z` (the only form engines.node takes here). */
const lowerBound = (range: string): Version | null => {
  const match = /^\s*>=\s*(\d+(?:\.\d+){0,2})\s*$/.exec(range);
  return match ? parse(match[1]) : null;
};
const minimum = lowerBound(pkg.engines.node);

test('engines.node is a lower bound', () => {
  expect(minimum).not.toBeNull();
});

test('the Node the npm scripts run on (the node devDependency, as locked) satisfies engines.node', () => {
  const pinned = pkg.devDependencies.node;
  expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
  expect(atLeast(parse(pinned), minimum!)).toBe(true);
  const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { version: string }> };
  expect(lock.packages['node_modules/node'].version).toBe(pinned);
});

test('engines.node asks at least what every dependency asks for', () => {
  const asked: Array<[string, string]> = [];
  for (const name of Object.keys(pkg.dependencies)) {
    const range = manifest(name).engines?.node;
    const bound = range ? lowerBound(range) : null;
    if (bound && !atLeast(minimum!, bound)) asked.push([name, range!]);
  }
  expect(asked).toEqual([]);
  expect(lowerBound(manifest('@mikro-orm/core').engines!.node!)).not.toBeNull();
});

test("the Dockerfile's images are of the major version engines.node names (their newest release)", () => {
  const images = [...read('Dockerfile').matchAll(/^FROM node:(\d+)(\S*)/gm)].map((m) => Number(m[1]));
  expect(images.length).toBeGreaterThan(0);
  for (const major of images) expect(major).toBe(minimum![0]);
});
