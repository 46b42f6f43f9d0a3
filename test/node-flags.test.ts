import { ConfigError, loadConfig } from '../src/config.js';
import { missingNodeFlags, NODE_FLAGS } from '../src/node-flags.js';

/** Which of the service's Node flags the entry point adds (the restart itself: process.test.ts). */
describe('missingNodeFlags', () => {
  test('a process started without them lacks all', () => {
    expect(missingNodeFlags([], '')).toEqual([...NODE_FLAGS]);
    expect(missingNodeFlags(['--enable-source-maps'])).toEqual([...NODE_FLAGS]);
  });

  test('a process started with them (the restarted one) lacks none: no second restart', () => {
    expect(missingNodeFlags([...NODE_FLAGS], '')).toEqual([]);
  });

  test("an operator's own value of a flag is kept, on the command line or in NODE_OPTIONS, in either spelling", () => {
    expect(missingNodeFlags(['--max-semi-space-size=32'])).toEqual(['--heap-growing-percent=30', '--experimental-async-context-frame']);
    expect(missingNodeFlags([], '--max_semi_space_size=2  --inspect')).toEqual(['--heap-growing-percent=30', '--experimental-async-context-frame']);
    expect(missingNodeFlags(['--heap-growing-percent=100', '--experimental-async-context-frame'], '--max-semi-space-size=16')).toEqual([]);
  });

  test('a flag the operator turned off stays off', () => {
    expect(missingNodeFlags(['--no-experimental-async-context-frame'])).toEqual(['--max-semi-space-size=8', '--heap-growing-percent=30']);
    expect(missingNodeFlags([], '--no-async-context-frame')).toEqual(['--max-semi-space-size=8', '--heap-growing-percent=30']);
  });

  test('a flag this Node does not know is not added', () => {
    expect(missingNodeFlags([], '', (flag) => !flag.startsWith('--experimental-'))).toEqual(['--max-semi-space-size=8', '--heap-growing-percent=30']);
  });

  test('other flags that merely start alike are not taken for them', () => {
    expect(missingNodeFlags(['--max-semi-space-size-extra=1', '--min-semi-space-size=1'])).toEqual([...NODE_FLAGS]);
  });
});

test('NODE_TUNING is true or false: another value stops the start with a message naming it', () => {
  expect(loadConfig({}).nodeTuning).toBe(true);
  expect(loadConfig({ NODE_TUNING: 'false' }).nodeTuning).toBe(false);
  expect(() => loadConfig({ NODE_TUNING: 'off' })).toThrow(new ConfigError('NODE_TUNING must be true or false, got "off"'));
});

test('a quoted flag in NODE_OPTIONS is the same flag (Node reads it so)', () => {
  expect(missingNodeFlags([], '"--max-semi-space-size=16"')).toEqual(['--heap-growing-percent=30', '--experimental-async-context-frame']);
});
