import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createLogger, isoTimeByMillisecond, LinePages } from '../../src/observability/log.js';

/** The service log's line format (src/observability/log.ts), without a service. */

test('each line is one JSON object: the level by name, the time in ISO 8601 (UTC, milliseconds), the message and the fields', () => {
  const lines: string[] = [];
  const log = createLogger('info', (line) => lines.push(line));
  log.info('request', { requestId: 'r1', status: 200 });
  log.warn('slow', { ms: 1.5 });
  log.debug('not at info', {});
  expect(lines).toHaveLength(2);
  const [first, second] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  expect(first).toEqual({
    level: 'info',
    time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    msg: 'request',
    requestId: 'r1',
    status: 200,
  });
  expect(second).toMatchObject({ level: 'warn', msg: 'slow', ms: 1.5 });
});

test('the time field is the clock’s millisecond when the line is written, made once per millisecond and never an earlier one', () => {
  let now = Date.UTC(2026, 10, 27, 6, 0, 0, 123);
  const time = isoTimeByMillisecond(() => now);
  const first = time();
  expect(first).toBe(',"time":"2026-11-27T06:00:00.123Z"');
  expect(time()).toBe(first); // the same millisecond: the same text
  now += 1;
  expect(time()).toBe(',"time":"2026-11-27T06:00:00.124Z"');
  now += 5_000;
  expect(time()).toBe(',"time":"2026-11-27T06:00:05.124Z"');
});

test('lines are handed on in pages: whole lines, in order, once a page is full, the rest at a flush', () => {
  const writes: string[] = [];
  const pages = new LinePages({ write: (text) => writes.push(text) }, 30);
  const lines = Array.from({ length: 7 }, (_, i) => `{"n":${i},"msg":"x"}\n`); // 18 characters each
  for (const line of lines) pages.write(line);
  expect(writes).toEqual([lines[0] + lines[1], lines[2] + lines[3], lines[4] + lines[5]]);
  pages.flush();
  expect(writes).toEqual([lines[0] + lines[1], lines[2] + lines[3], lines[4] + lines[5], lines[6]]);
  pages.flush(); // nothing gathered: nothing written
  expect(writes).toHaveLength(4);
  expect(writes.join('')).toBe(lines.join(''));
});

test('every line logged before the process ends is on stderr, in order: process.exit, an uncaught error, a stop, the end of work', () => {
  // A real process with the service's own logger (the built one: the test needs stderr as the service has it).
  const root = fileURLToPath(new URL('../..', import.meta.url));
  execFileSync(process.execPath, ['scripts/build-if-stale.mjs'], { cwd: root });
  const logger = new URL('dist/src/observability/log.js', `file://${root}`).href;
  for (const ending of ['process.exit(1)', 'throw new Error("boom")', 'log.flush(); process.exit(0)', '']) {
    // 300 lines of ~150 bytes: pages go out while it runs, and the last one when it ends.
    const script = `import { createLogger } from '${logger}';
      const log = createLogger('info', undefined, 'json');
      for (let i = 0; i < 300; i++) log.info('line', { i, pad: 'x'.repeat(100) });
      ${ending}`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    const numbers = run.stderr
      .split('\n')
      .filter((line) => line.startsWith('{"level"'))
      .map((line) => (JSON.parse(line) as { i: number }).i);
    expect({ ending, numbers }).toEqual({ ending, numbers: Array.from({ length: 300 }, (_, i) => i) });
  }
});
