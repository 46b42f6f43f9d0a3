import { HEAP_FLAGS, missingHeapFlags } from '../src/heap.js';

/** Which of the service's V8 heap flags the entry point adds (the restart itself: process.test.ts). */
describe('missingHeapFlags', () => {
  test('a process started without heap flags lacks both', () => {
    expect(missingHeapFlags([], '')).toEqual([...HEAP_FLAGS]);
    expect(missingHeapFlags(['--enable-source-maps'])).toEqual([...HEAP_FLAGS]);
  });

  test('a process started with them (the restarted one) lacks none: no second restart', () => {
    expect(missingHeapFlags([...HEAP_FLAGS], '')).toEqual([]);
  });

  test("an operator's own value of a flag is kept, on the command line or in NODE_OPTIONS, in either spelling", () => {
    expect(missingHeapFlags(['--max-semi-space-size=32'])).toEqual(['--heap-growing-percent=30']);
    expect(missingHeapFlags([], '--max_semi_space_size=2  --inspect')).toEqual(['--heap-growing-percent=30']);
    expect(missingHeapFlags(['--heap-growing-percent=100'], '--max-semi-space-size=16')).toEqual([]);
  });

  test('other flags that merely start alike are not taken for them', () => {
    expect(missingHeapFlags(['--max-semi-space-size-extra=1', '--min-semi-space-size=1'])).toEqual([...HEAP_FLAGS]);
  });
});
