import { createLogger } from '../../src/observability/log.js';

/** The service log's line format (src/observability/log.ts), without a service. */

test('each line is one JSON object: the level by name, the time in ISO 8601 (UTC, milliseconds) when it was written, the message and the fields', async () => {
  const lines: string[] = [];
  const log = createLogger('info', (line) => lines.push(line));
  const before = Date.now();
  log.info('request', { requestId: 'r1', status: 200 });
  await new Promise((resolve) => setTimeout(resolve, 5));
  log.warn('slow', { ms: 1.5 });
  const after = Date.now();
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
  const times = [first.time, second.time].map((time) => Date.parse(time as string));
  // The time is made once per millisecond: each line's is its own millisecond's, not an earlier line's.
  expect(times[0]).toBeGreaterThanOrEqual(before);
  expect(times[1]).toBeGreaterThan(times[0]);
  expect(times[1]).toBeLessThanOrEqual(after);
});
