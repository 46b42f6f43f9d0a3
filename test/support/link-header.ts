/**
 * The RFC 8288 Link header of a list answer, shared by the list tests (support/lists.ts) and the
 * link tests (support/links.ts): the header as sent, and the one a list should carry.
 */
import { type Reply } from './service.js';

/** A URL with its query parameters sorted: their order is not part of the contract, only their values. */
export function sortedUrl(url: string): string {
  const [path, search = ''] = url.split('?', 2);
  const params = new URLSearchParams(search);
  params.sort();
  return `${path}?${params.toString()}`;
}

/** The RFC 8288 Link header of a list answer as [rel, URL (query sorted)], in the order sent. */
export function linksOf(res: Reply): Array<[string, string]> {
  const header = res.headers.get('link') ?? '';
  return [...header.matchAll(/<([^>]*)>;\s*rel="([^"]+)"/g)].map((m) => [m[2], sortedUrl(m[1])]);
}

/** The Link a list at `path?query` should carry: each rel's URL is the request's with only page changed. */
export function expectedLinks(path: string, query: string, pages: { first: number; prev?: number; next?: number; last: number }): Array<[string, string]> {
  const at = (page: number) => sortedUrl(`${path}?${query}${query ? '&' : ''}page=${page}`);
  return (['first', 'prev', 'next', 'last'] as const).flatMap((rel) => (pages[rel] === undefined ? [] : [[rel, at(pages[rel]!)] as [string, string]]));
}
