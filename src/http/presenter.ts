import type { Page } from '../list/list.js';
import type { AppContext } from './context.js';

/**
 * The REST wire dialect (docs/rest.md#conventions), in one place: the original service's answers (bare arrays,
 * bare ids, counts) by default, the records on `Prefer: return=representation`, and the page
 * headers. Routes call these; nothing else decides what a REST answer looks like.
 */

/** The four list inputs of a REST list call (strings, or arrays when a parameter is repeated). */
export const listQuery = (ctx: AppContext) => ({
  filter: ctx.query.filter,
  orderBy: ctx.query.orderBy as string | undefined,
  page: ctx.query.page,
  pageSize: ctx.query.pageSize,
});

/**
 * Whether the request asks for the record instead of a count or an id (RFC 7240 `Prefer`, any
 * number of headers and preferences; names and values case-insensitive, values possibly quoted).
 * Null when it states no `return` preference.
 */
export function returnPreference(header: string | undefined): 'representation' | 'minimal' | null {
  if (!header) return null;
  for (const preference of header.split(',')) {
    const [name, value = ''] = (preference.split(';')[0] ?? '').split('=');
    if (name.trim().toLowerCase() !== 'return') continue;
    // RFC 7240 §2: of a preference given more than once, only the first counts.
    const wanted = value
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase();
    return wanted === 'representation' || wanted === 'minimal' ? wanted : null;
  }
  return null;
}

/** No field but the id (which every answer carries). */
const ID_ONLY: ReadonlySet<string> = new Set();

/**
 * The fields a write's answer needs, for the service to answer only those (as GraphQL's selection
 * does): the id alone for the bare answer (`1`, or the new id), every field (undefined) for
 * `Prefer: return=representation`. The driver then reads one column back, not every one.
 */
export const answeredFields = (ctx: AppContext): ReadonlySet<string> | undefined =>
  returnPreference(ctx.get('Prefer')) === 'representation' ? undefined : ID_ONLY;

/** The body of a write answer: the original's `fallback` (a count or an id), or the record when asked. */
function preferred(ctx: AppContext, fallback: unknown, record: () => unknown): unknown {
  ctx.vary('Prefer');
  const preference = returnPreference(ctx.get('Prefer')); // several Prefer headers arrive joined by ", "
  if (preference) ctx.set('Preference-Applied', `return=${preference}`);
  return preference === 'representation' ? record() : fallback;
}

/**
 * RFC 8288 `Link` of a list answer: first, prev (not on page 1), next (only when rows follow) and
 * last, each the request's own URL (path and query, relative to the service, so no Host header is
 * trusted) with only `page` changed.
 */
function pageLinks(ctx: AppContext, page: number, pageSize: number, total: number): string {
  const url = ctx.originalUrl;
  const mark = url.indexOf('?'); // the first one: a query may hold more
  const path = mark === -1 ? url : url.slice(0, mark);
  const search = mark === -1 ? '' : url.slice(mark + 1);
  // The other parameters stay exactly as the client wrote them, in their order; `page` is replaced
  // where it was (or added at the end).
  const parts = search.split('&').filter((part) => part !== '');
  const pageAt = parts.findIndex((part) => decodeName(part) === 'page');
  const at = (n: number) => {
    const query = pageAt === -1 ? [...parts, `page=${n}`] : parts.map((part, i) => (i === pageAt ? `page=${n}` : part));
    return `<${uriReference(`${path}?${query.join('&')}`)}>`;
  };
  const last = Math.max(1, Math.ceil(total / pageSize));
  const links = [`${at(1)}; rel="first"`];
  if (page > 1) links.push(`${at(Math.min(page - 1, last))}; rel="prev"`);
  if (page * pageSize < total) links.push(`${at(page + 1)}; rel="next"`);
  links.push(`${at(last)}; rel="last"`);
  return links.join(', ');
}

/**
 * The text as a URI reference (RFC 3986): what a URI cannot hold raw (`<`, `>`, `"`, spaces,
 * non-ASCII, …; Node lets a request line carry some of them) percent-encoded, so that a Link target
 * can never close its `<…>` early and smuggle in a link of its own. `%` escapes stay as they are.
 */
const uriReference = (text: string) => text.replace(/[^A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]/gu, (c) => encodeURIComponent(c));

/** A query parameter's name, decoded as URLSearchParams would (`pa%67e` is `page`). */
function decodeName(part: string): string {
  const name = part.split('=', 1)[0].replaceAll('+', ' ');
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

/**
 * Longest `Link` header sent. It repeats the request URL up to four times; a URL carrying a long
 * filter (1000 values in an `in` list) would make it larger than clients read (Node's fetch stops
 * at 16 KiB of headers), so such a list answers without it: X-Total-Count and the request itself
 * still say where the pages are.
 */
const MAX_LINK_LENGTH = 8 * 1024;

/** A list answer: a bare JSON array, the total in `X-Total-Count`, the pages in `Link`. */
export function sendList<T>(ctx: AppContext, page: Page<T>, present: (record: T) => unknown = (record) => record): void {
  const total = page.total ?? 0;
  ctx.set('X-Total-Count', String(total));
  if (ctx.originalUrl.length * 4 < MAX_LINK_LENGTH) ctx.set('Link', pageLinks(ctx, page.page, page.pageSize, total));
  ctx.body = page.data.map(present);
}

/**
 * 201 + Location: the new id, a bare number, or the record (`Prefer: return=representation`). A PUT
 * that created its record on a reserved id answers `1` instead of the id, as every update does.
 */
export function sendCreated<R extends { id: number }>(ctx: AppContext, location: string, record: R, options: { byUpdate?: boolean } = {}): void {
  ctx.status = 201;
  ctx.set('Location', location);
  ctx.body = preferred(ctx, options.byUpdate ? 1 : record.id, () => record);
}

/** An update of one record (PUT, PATCH, status, a link's right): `1`, or the record when asked. */
export function sendUpdated<R>(ctx: AppContext, record: R, present: (record: R) => unknown = (r) => r): void {
  ctx.status = 200;
  ctx.body = preferred(ctx, 1, () => present(record));
}

/** A write whose bare answer is a value of its own (a webhook's new secret), or the record when asked. */
export function sendWritten<R>(ctx: AppContext, bare: unknown, record: R): void {
  ctx.status = 200;
  const body = preferred(ctx, bare, () => record);
  // A bare string is a JSON string too (Koa would send it as text).
  if (typeof body === 'string') {
    ctx.type = 'application/json';
    ctx.body = JSON.stringify(body);
  } else ctx.body = body;
}

/** A count of records changed (delete: 1; unlink: the links removed), 200 whatever `Prefer` says. */
export function sendCount(ctx: AppContext, count: number, status = 200): void {
  ctx.status = status;
  ctx.body = count;
}
