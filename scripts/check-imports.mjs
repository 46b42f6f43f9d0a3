// The folder-level import rules of src/ (docs/architecture.md#layout), checked by `npm run lint`:
// 1. no generic folder imports a resource folder, nor a file that leads to one (only the composition
//    root, the files at the root of src/, and the command-line tools may: they wire the modules together);
// 2. no import cycle between folders (ESLint's import-x/no-cycle sees files, not folders).
// Type-only imports count: a folder that needs another's types depends on it all the same.
// A small script rather than a plugin: it reads the import specifiers of every source file with
// TypeScript's own scanner (no regular expression over code) and walks a graph of a few dozen nodes.
import { readdirSync, readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'src');

/**
 * The folders of one resource each: those whose module src/modules.ts imports (`./users/index.js`),
 * so that a new module's folder is one without another list to keep.
 */
export const RESOURCE_FOLDERS = new Set(
  ts
    .preProcessFile(readFileSync(join(SRC, 'modules.ts'), 'utf8'), true, false)
    .importedFiles.map((f) => /^\.\/([^/]+)\/index\.js$/.exec(f.fileName)?.[1])
    .filter(Boolean),
);

/** The other folders of src/ but the command-line tools: generic code, which imports no resource folder. */
export const GENERIC_FOLDERS = readdirSync(SRC, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && entry.name !== 'cli' && !RESOURCE_FOLDERS.has(entry.name))
  .map((entry) => entry.name);
/** What may import resource folders: the root files of src/ (the composition root) and the command-line tools. */
const COMPOSITION = (node) => (node.startsWith('src/') && !node.slice(4).includes('/') ? true : node === 'cli');

async function sourceFiles(dir) {
  const found = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...(await sourceFiles(path)));
    else if (entry.name.endsWith('.ts')) found.push(path);
  }
  return found;
}

/** The node of a file: its folder under src/ (`graphql`), or for a file at the root of src/ the file itself (`src/app.ts`). */
function nodeOf(file) {
  const path = relative(SRC, file).split(sep);
  if (path[0] === '..') return null; // outside src/ (mikro-orm.config.ts, node_modules)
  return path.length === 1 ? `src/${path[0]}` : path[0];
}

/** The relative module specifiers a file imports or re-exports (static and dynamic). */
function specifiersOf(text, file) {
  const info = ts.preProcessFile(text, true, true);
  return info.importedFiles
    .map((f) => f.fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => resolve(dirname(file), name.replace(/\.js$/, '.ts')));
}

export async function importGraph() {
  const edges = new Map(); // node -> Map(node -> an example "file -> file")
  for (const file of await sourceFiles(SRC)) {
    const from = nodeOf(file);
    for (const target of specifiersOf(await readFile(file, 'utf8'), file)) {
      const to = nodeOf(target);
      if (!to || to === from) continue;
      if (!edges.has(from)) edges.set(from, new Map());
      if (!edges.get(from).has(to)) edges.get(from).set(to, `${relative(ROOT, file)} -> ${relative(ROOT, target).replace(/\.ts$/, '.js')}`);
    }
  }
  return edges;
}

/** Tarjan's strongly connected components: every one with more than one node is a cycle. */
function cycles(edges) {
  const nodes = new Set([...edges.keys(), ...[...edges.values()].flatMap((m) => [...m.keys()])]);
  let index = 0;
  const stack = [];
  const info = new Map();
  const found = [];
  const visit = (v) => {
    info.set(v, { index, low: index, onStack: true });
    index += 1;
    stack.push(v);
    for (const w of edges.get(v)?.keys() ?? []) {
      if (!info.has(w)) {
        visit(w);
        info.get(v).low = Math.min(info.get(v).low, info.get(w).low);
      } else if (info.get(w).onStack) info.get(v).low = Math.min(info.get(v).low, info.get(w).index);
    }
    if (info.get(v).low === info.get(v).index) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        info.get(w).onStack = false;
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of nodes) if (!info.has(v)) visit(v);
  return found;
}

/** The nodes from which a resource folder can be reached (resource folders themselves included). */
function reachingResources(edges) {
  const reaching = new Set(RESOURCE_FOLDERS);
  for (let grew = true; grew;) {
    grew = false;
    for (const [from, targets] of edges) {
      if (!reaching.has(from) && [...targets.keys()].some((to) => reaching.has(to))) {
        reaching.add(from);
        grew = true;
      }
    }
  }
  return reaching;
}

export async function problems() {
  const edges = await importGraph();
  const reaching = reachingResources(edges);
  const found = [];
  for (const [from, targets] of edges) {
    if (RESOURCE_FOLDERS.has(from) || COMPOSITION(from)) continue;
    for (const [to, example] of targets) {
      // A resource folder, or a file of the composition root that leads to one (src/services.ts).
      if (RESOURCE_FOLDERS.has(to) || (COMPOSITION(to) && reaching.has(to))) {
        found.push(
          `the generic folder ${from}/ imports ${to} (${example}), which is or leads to a resource folder: move what it needs behind the module interface (src/module/)`,
        );
      }
    }
  }
  for (const component of cycles(edges)) {
    const links = component.flatMap((from) => component.filter((to) => edges.get(from)?.has(to)).map((to) => `  ${edges.get(from).get(to)}`));
    found.push(`an import cycle between the folders ${component.join(', ')}:\n${links.join('\n')}`);
  }
  return found;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const found = await problems();
  for (const problem of found) process.stderr.write(`check-imports: ${problem}\n`);
  if (found.length) process.exitCode = 1;
}
