import { restartWithHeapFlags } from './heap.js';

// The entry point (`npm start`, `node dist/src/main.js`). The heap flags come first (heap.ts): V8
// sizes its heap when the process starts, so the service's modules load only after them.
restartWithHeapFlags(import.meta.url);
await import('./run.js');
