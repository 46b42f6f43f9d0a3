// `npm start`: builds if a source changed, then runs the service in this very process (npm runs
// `exec node scripts/start.mjs`), so the SIGTERM or SIGINT a process manager sends to npm reaches
// the service, which stops gracefully and exits 0. A signal during the build stops tsc and exits 0:
// nothing was started, nothing is left behind.
import { build, isStale } from './build-if-stale.mjs';

if (isStale() && !(await build().catch(() => process.exit(1)))) process.exit(0);
await import('../dist/src/main.js');
