// Cursor paging for the artifacts panel: the first pages again up to as many items as
// were shown (a refresh after a change keeps what was loaded), then one more on demand.

export interface Page<T> {
  items: T[]
  next_cursor?: string | null
}

export type FetchPage<T> = (cursor: string | null) => Promise<Page<T>>

/** Pages from the first, following `next_cursor`, until `wanted` items or the last page:
 * the items and the cursor of the page after them (null at the end). */
export async function collect<T>(fetchPage: FetchPage<T>, wanted: number): Promise<{ items: T[]; next: string | null }> {
  const items: T[] = []
  let next: string | null = null
  do {
    const page = await fetchPage(next)
    items.push(...page.items)
    next = page.next_cursor ?? null
  } while (next !== null && items.length < wanted)
  return { items, next }
}
