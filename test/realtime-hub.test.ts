import { Hub, MAX_BEHIND, MAX_REPLAY } from '../src/realtime/hub.js';
import type { ChangeEvent, EventListener, EventSource } from '../src/realtime/events.js';
import type { Sql } from '../src/db/sql.js';
import { createLogger } from '../src/observability/log.js';

/**
 * The hub's streams without a database: a source that is told what to emit, and a replay that
 * answers from a list. What a slow consumer, a resume and a stop do to a stream.
 */
function fakeSource() {
  const listeners = new Set<EventListener>();
  const source: EventSource = {
    listen(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    reading: async () => {},
    close: async () => {},
  };
  return {
    source,
    listeners,
    emit(events: ChangeEvent[]) {
      for (const listener of listeners) listener(events);
    },
  };
}
const event = (eventID: number, resource = 'role'): ChangeEvent => ({ eventID, action: 'create', resource, recordID: eventID, at: '', actorTokenID: null, changes: {} });
const roles = { matches: (e: ChangeEvent) => e.resource === 'role', sql: { where: "a.resource = 'role'", params: [] } };
/** A Sql whose every statement answers `rows` (the replay's read), after `wait`. */
const sqlAnswering = (rows: () => ChangeEvent[], wait: Promise<void> = Promise.resolve()) => ({ rows: async () => (await wait, rows()) }) as unknown as Sql;
const log = createLogger('silent');

test(`a stream ${MAX_BEHIND} events behind is ended and its connection told (4408), not grown`, async () => {
  const { source, listeners } = fakeSource();
  const hub = new Hub(source, sqlAnswering(() => []), log, 10, null);
  let overflowed = 0;
  const stream = await hub.stream('roleEvents', roles, null, () => overflowed++);
  for (const listener of listeners) listener(Array.from({ length: MAX_BEHIND }, (_, i) => event(i + 1)));
  expect(overflowed).toBe(0);
  for (const listener of listeners) listener([event(MAX_BEHIND + 1)]);
  expect(overflowed).toBe(1);
  expect(await stream.next()).toEqual({ value: undefined, done: true });
  // Its listener is gone: the source no longer holds it.
  expect(listeners.size).toBe(0);
});

test('a resume replays, holds the live events meanwhile, and drops those the replay had, even when they come late', async () => {
  const { source, emit } = fakeSource();
  let release!: () => void;
  const replayRead = new Promise<void>((resolve) => (release = resolve));
  const hub = new Hub(source, sqlAnswering(() => [event(5), event(6), event(7)], replayRead), log, 10, null);
  const streaming = hub.stream('roleEvents', roles, 4, () => {});
  emit([event(7), event(8)]); // live while the replay is read: 7 is in the replay too
  release();
  const stream = await streaming;
  emit([event(6)]); // the source hands over 6 only now: the replay had it
  emit([event(9), event(3)]); // 3 is before `after`
  const ids: number[] = [];
  for (let i = 0; i < 5; i++) ids.push((await stream.next()).value!.eventID);
  expect(ids).toEqual([5, 6, 7, 8, 9]);
  await stream.return!();
});

test(`a resume of more than ${MAX_REPLAY} events is refused with BAD_USER_INPUT naming after`, async () => {
  const { source, listeners } = fakeSource();
  const hub = new Hub(source, sqlAnswering(() => Array.from({ length: MAX_REPLAY + 1 }, (_, i) => event(i + 1))), log, 10, null);
  await expect(hub.stream('roleEvents', roles, 0, () => {})).rejects.toMatchObject({ code: 'BAD_REQUEST', details: [{ field: 'after' }] });
  expect(listeners.size).toBe(0); // the refused stream left nothing behind
});

test('SUBSCRIPTIONS_MAX: connections past it are refused until one is released', () => {
  const { source } = fakeSource();
  const hub = new Hub(source, sqlAnswering(() => []), log, 2, null);
  expect([hub.admit('ws'), hub.admit('sse'), hub.admit('ws')]).toEqual([true, true, false]);
  hub.release('ws', 'client');
  expect(hub.admit('sse')).toBe(true);
});
