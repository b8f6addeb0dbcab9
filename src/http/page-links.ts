/** The links of a collection's page (contract §4): the number of pages, and the RFC 8288 `Link` field. Pure. */
import { maxPage } from './list-query.ts';

/** The number of pages for `total` items; 0 when there are none. */
export function pageCount(total: number, pageSize: number): number {
  return Math.ceil(total / pageSize);
}

/** The collection pages a response links to. */
export interface PageLinks {
  /** The number of the page (a cursor page's too: its cursor carries it). */
  readonly page: number;
  readonly pageSize: number;
  /** `pageCount()` of the collection. */
  readonly pages: number;
  /** The cursor of the next page; absent on the last. */
  readonly cursor?: string;
}

/**
 * The `Link` value of a page, and its next page's URL (`meta.next`): the same request with another `page` or
 * `cursor`. `prev` and `last` only within the depth `page` reaches; `next` by cursor, when there is a next page.
 */
export function paginationLinks(url: URL, links: PageLinks): { readonly header: string; readonly next?: string } {
  const last = Math.max(links.pages, 1);
  const target = (name: 'page' | 'cursor', value: string) => {
    const search = new URLSearchParams(url.search);
    search.delete(name === 'page' ? 'cursor' : 'page');
    search.set(name, value);
    return `${url.pathname}?${search.toString()}`;
  };
  const link = (href: string, rel: string) => `<${href}>; rel="${rel}"`;
  const header = [link(target('page', '1'), 'first')];
  const prev = Math.min(links.page - 1, last);
  if (prev >= 1 && prev <= maxPage(links.pageSize)) header.push(link(target('page', String(prev)), 'prev'));
  const next = links.cursor === undefined ? undefined : target('cursor', links.cursor);
  if (next !== undefined) header.push(link(next, 'next'));
  if (last <= maxPage(links.pageSize)) header.push(link(target('page', String(last)), 'last'));
  return { header: header.join(', '), ...(next === undefined ? {} : { next }) };
}
