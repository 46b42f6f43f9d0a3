import { restartWithNodeFlags } from './node-flags.js';

// The entry point (`npm start`, `node dist/src/main.js`). The Node flags come first (node-flags.ts):
// V8 sizes its heap when the process starts, so the service's modules load only after them.
restartWithNodeFlags(import.meta.url);
await import('./run.js');
