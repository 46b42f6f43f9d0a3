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

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A header's text as the client meant it. Node reads header bytes as latin1; a client that sends
 * UTF-8 (as browsers and curl do) means the characters those bytes encode. Bytes that are not
 * UTF-8 stay as read, or, with `escape` (text echoed in an error message), each byte above 0x7F
 * shows as `\xHH`, never as a latin1 character the client did not send.
 */
export function headerText(raw: string, options: { escape?: boolean } = {}): string {
  if (!/[\u0080-\u00ff]/.test(raw)) return raw;
  try {
    return utf8.decode(Buffer.from(raw, 'latin1'));
  } catch {
    return options.escape ? raw.replace(/[\u0080-\u00ff]/g, (c) => `\\x${c.charCodeAt(0).toString(16).toUpperCase()}`) : raw;
  }
}
