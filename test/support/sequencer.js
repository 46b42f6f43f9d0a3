import TestSequencer from '@jest/test-sequencer';

/**
 * The files that take longest (real processes, a browser, many services), slowest first. Jest
 * orders a run by the durations its cache kept from the run before; a fresh clone has none, and
 * jest then runs the largest files first, which leaves these short-but-slow files to the end, one
 * worker busy and the other idle. Without durations, they go first.
 */
const SLOW = [
  'process.test.ts',
  'db/embedded.test.ts',
  'auth/authorization.test.ts',
  'auth/granted.test.ts',
  'tokens/keys.test.ts',
  'http/browser.test.ts',
  'realtime/realtime.test.ts',
  'tokens/secrets.test.ts',
  'deploy/image.test.ts',
];

export default class SlowFirstSequencer extends TestSequencer {
  sort(tests) {
    const sorted = super.sort(tests);
    if (sorted.some((test) => test.duration != null)) return sorted;
    const rank = (test) => {
      const at = SLOW.findIndex((path) => test.path.endsWith(`/test/${path}`));
      return at === -1 ? SLOW.length : at;
    };
    return [...sorted].sort((a, b) => rank(a) - rank(b));
  }
}
