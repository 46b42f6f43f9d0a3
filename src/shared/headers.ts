/**
 * How many times a request carries a header (`name` in lower case), counted in Node's raw header
 * list: Node's `headersDistinct` would build an object of every header for the same answer.
 */
export function headerCount(rawHeaders: readonly string[], name: string): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const header = rawHeaders[i];
    if (header.length === name.length && header.toLowerCase() === name) count++;
  }
  return count;
}
