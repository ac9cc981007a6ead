import { describe, expect, it } from 'vitest'
import { collect, type Page } from './pages'

/** A server of `count` numbered items, `size` a page, its cursor the next offset. */
function server(count: number, size: number): { fetch: (cursor: string | null) => Promise<Page<number>>; asked: (string | null)[] } {
  const asked: (string | null)[] = []
  return {
    asked,
    fetch: (cursor) => {
      asked.push(cursor)
      const from = cursor === null ? 0 : Number(cursor)
      const items = Array.from({ length: Math.max(0, Math.min(size, count - from)) }, (_, i) => from + i)
      const end = from + items.length
      return Promise.resolve({ items, next_cursor: end < count ? String(end) : null })
    },
  }
}

describe('collect', () => {
  it('reads one page when it holds as many as wanted, keeping the next cursor', async () => {
    const s = server(45, 20)
    expect(await collect(s.fetch, 20)).toEqual({ items: Array.from({ length: 20 }, (_, i) => i), next: '20' })
    expect(s.asked).toEqual([null])
  })

  it('follows next_cursor until as many as were shown are loaded again', async () => {
    const s = server(45, 20)
    const found = await collect(s.fetch, 40)
    expect(found.items).toHaveLength(40)
    expect(found.next).toBe('40')
    expect(s.asked).toEqual([null, '20'])
  })

  it('stops at the last page with no cursor left', async () => {
    const s = server(45, 20)
    const found = await collect(s.fetch, 100)
    expect(found.items).toEqual(Array.from({ length: 45 }, (_, i) => i))
    expect(found.next).toBeNull()
    expect(s.asked).toEqual([null, '20', '40'])
  })

  it('answers an empty list from an empty server', async () => {
    expect(await collect(server(0, 20).fetch, 20)).toEqual({ items: [], next: null })
  })
})
