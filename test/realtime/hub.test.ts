import { Hub, MAX_BEHIND, MAX_REPLAY } from '../../src/realtime/hub.js';
import type { ChangeEvent, EventListener, EventSource } from '../../src/realtime/events.js';
import type { Sql } from '../../src/db/sql.js';
import { createLogger } from '../../src/observability/log.js';

/**
 * The hub's streams without a database: a source that is told what to emit, and a replay that
 * answers from a list. What a slow consumer, a resume and a stop do to a stream.
 */
function fakeSource() {
  const listeners = new Set<EventListener>();
  let handed = 0;
  const source: EventSource = {
    handedOver: () => handed,
    horizon: () => handed,
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
      handed = Math.max(handed, ...events.map((e) => e.eventID));
      for (const listener of listeners) listener(events);
    },
  };
}
const event = (eventID: number, resource = 'role'): ChangeEvent => ({
  eventID,
  action: 'create',
  resource,
  recordID: eventID,
  at: '',
  actorTokenID: null,
  changes: {},
});
const roles = { matches: (e: ChangeEvent) => e.resource === 'role', sql: { where: "a.resource = 'role'", params: [] } };
/** A Sql whose replay read answers `rows` after `wait` (and whose newest event is ahead of all of them, within the replay's span). */
const sqlAnswering = (rows: () => ChangeEvent[], wait: Promise<void> = Promise.resolve()) =>
  ({ rows: async (text: string) => (text.includes('max(id)') ? [{ newest: 10_000 }] : (await wait, rows())) }) as unknown as Sql;
const log = createLogger('silent');

test(`a stream ${MAX_BEHIND} events behind is ended and its connection told (4408), not grown`, async () => {
  const { source, listeners } = fakeSource();
  const hub = new Hub(
    source,
    sqlAnswering(() => []),
    log,
    10,
    null,
  );
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

test('a resume replays up to where the source stands, holds the live events meanwhile, then goes on live, nothing twice', async () => {
  const { source, emit } = fakeSource();
  emit([event(5), event(6), event(7)]); // handed over before the subscription: the replay's part
  let release!: () => void;
  const replayRead = new Promise<void>((resolve) => (release = resolve));
  const hub = new Hub(
    source,
    sqlAnswering(() => [event(5), event(6), event(7)], replayRead),
    log,
    10,
    null,
  );
  const streaming = hub.stream('roleEvents', roles, 4, () => {});
  await new Promise((resolve) => setTimeout(resolve, 10));
  emit([event(8)]); // live while the replay is read
  release();
  const stream = await streaming;
  emit([event(9)]);
  const ids: number[] = [];
  for (let i = 0; i < 5; i++) ids.push((await stream.next()).value!.eventID);
  expect(ids).toEqual([5, 6, 7, 8, 9]);
  await stream.return!();
});

test(`a replay of up to ${MAX_REPLAY} events does not count as falling behind`, async () => {
  const { source, emit } = fakeSource();
  emit([event(MAX_REPLAY)]);
  const hub = new Hub(
    source,
    sqlAnswering(() => Array.from({ length: MAX_REPLAY }, (_, i) => event(i + 1))),
    log,
    10,
    null,
  );
  let overflowed = 0;
  const stream = await hub.stream('roleEvents', roles, 0, () => overflowed++);
  emit([event(MAX_REPLAY + 1)]);
  expect(overflowed).toBe(0);
  expect((await stream.next()).value!.eventID).toBe(1);
  await stream.return!();
});

test(`a resume of more than ${MAX_REPLAY} events is refused with BAD_USER_INPUT naming after`, async () => {
  const { source, listeners } = fakeSource();
  const hub = new Hub(
    source,
    sqlAnswering(() => Array.from({ length: MAX_REPLAY + 1 }, (_, i) => event(i + 1))),
    log,
    10,
    null,
  );
  await expect(hub.stream('roleEvents', roles, 0, () => {})).rejects.toMatchObject({ code: 'BAD_REQUEST', details: [{ field: 'after' }] });
  expect(listeners.size).toBe(0); // the refused stream left nothing behind
});

test('SUBSCRIPTIONS_MAX: connections past it are refused until one is released', () => {
  const { source } = fakeSource();
  const hub = new Hub(
    source,
    sqlAnswering(() => []),
    log,
    2,
    null,
  );
  expect([hub.admit('ws'), hub.admit('sse'), hub.admit('ws')]).toEqual([true, true, false]);
  hub.release('ws', 'client');
  expect(hub.admit('sse')).toBe(true);
});
