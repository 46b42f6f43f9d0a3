import { Slots } from '../../src/shared/slots.js';

/** src/shared/slots.ts: what the server holds for the answers under way, in place of a Set. */
test('holds what was added until its slot is released, and reuses freed slots', () => {
  const slots = new Slots<string>();
  const a = slots.add('a');
  const b = slots.add('b');
  const c = slots.add('c');
  expect([slots.size, slots.values()]).toEqual([3, ['a', 'b', 'c']]);
  slots.release(b);
  expect([slots.size, slots.values()]).toEqual([2, ['a', 'c']]);
  // The freed slot is taken again before the array grows.
  expect(slots.add('d')).toBe(b);
  expect(slots.values()).toEqual(['a', 'd', 'c']);
  slots.release(a);
  slots.release(c);
  slots.release(b);
  expect([slots.size, slots.values()]).toEqual([0, []]);
});

test('adding and releasing one value at a time, however often, keeps one slot', () => {
  const slots = new Slots<object>();
  const seen = new Set<number>();
  for (let i = 0; i < 10_000; i++) {
    const slot = slots.add({ i });
    seen.add(slot);
    slots.release(slot);
  }
  expect([...seen]).toEqual([0]);
  expect(slots.size).toBe(0);
});

test('a second release of a slot changes nothing', () => {
  const slots = new Slots<string>();
  const a = slots.add('a');
  slots.release(a);
  slots.release(a);
  const b = slots.add('b');
  const c = slots.add('c');
  expect(b).not.toBe(c);
  expect([slots.size, slots.values()]).toEqual([2, ['b', 'c']]);
});
