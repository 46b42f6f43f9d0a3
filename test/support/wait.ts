/**
 * Waiting in tests: on an observable condition, or for a promise, always with a bound and a
 * failure that names what did not happen (never a fixed pause standing in for "the server got
 * there"). The bounds are generous: they only turn a hang into a clear failure, and a passing run
 * never waits them out.
 */

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `condition` holds (polled; a throw counts as not yet), or fails naming what it waited for. */
export async function waitFor(what: string, condition: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (let pause = 10; ; pause = Math.min(pause * 2, 100)) {
    try {
      if (await condition()) return;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(pause);
  }
}

/** The promise's value, or a failure naming what did not happen within `ms`. */
export async function within<T>(what: string, promise: Promise<T>, ms = 15_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The first of a service's JSON log lines that `match` accepts, once there is one. */
export async function untilLogged(
  service: { logLines: readonly string[] },
  what: string,
  match: (line: Record<string, any>) => boolean,
  ms = 15_000,
): Promise<Record<string, any>> {
  let found: Record<string, any> | undefined;
  await waitFor(`the log line of ${what}`, () => (found = service.logLines.map((line) => JSON.parse(line)).find(match)) !== undefined, ms);
  return found!;
}
