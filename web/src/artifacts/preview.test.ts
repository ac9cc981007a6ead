import { afterEach, describe, expect, it, vi } from 'vitest'
import { saveTokens } from '@/api/tokens'
import { blobUrl, fetchPreview, formatSize, previewView, step } from './preview'

afterEach(() => {
  vi.unstubAllGlobals()
  localStorage.clear()
})

describe('previewView', () => {
  it('renders Markdown safely', () => {
    const view = previewView({ format: 'markdown', text: '## Summary\n\n<script>x()</script>' })
    expect(view.kind).toBe('markdown')
    if (view.kind !== 'markdown') return
    expect(view.html).toContain('<h2>Summary</h2>')
    expect(view.html).not.toContain('<script>')
  })

  it('keeps a PDF\'s pages', () => {
    expect(previewView({ format: 'pdf', pages: ['one', 'two'] })).toEqual({ kind: 'pdf', pages: ['one', 'two'] })
  })

  it('orders a deck\'s slides by index', () => {
    const view = previewView({
      format: 'ppt', type: 'ppt', version: 2,
      pages: [
        { index: 1, thumbnail_url: null, content: 'second' },
        { index: 0, thumbnail_url: '/t/0', content: 'first' },
      ],
    })
    expect(view.kind === 'ppt' && view.slides.map((s) => s.content)).toEqual(['first', 'second'])
  })
})

describe('step', () => {
  it('moves within the slides and stops at either end', () => {
    expect(step(0, 1, 3)).toBe(1)
    expect(step(2, 1, 3)).toBe(2)
    expect(step(0, -1, 3)).toBe(0)
    expect(step(0, 1, 0)).toBe(0)
  })
})

describe('fetching with the token', () => {
  it('sends the bearer token in a header, never in the URL', async () => {
    saveTokens({ access: 'acc', refresh: 'ref' })
    const seen: Request[] = []
    vi.stubGlobal('fetch', vi.fn((r: Request) => {
      seen.push(r)
      return Promise.resolve(new Response(JSON.stringify({ format: 'pdf', pages: [] })))
    }))
    await fetchPreview('/api/v1/artifacts/a/preview')
    expect(seen[0]?.headers.get('Authorization')).toBe('Bearer acc')
    expect(seen[0]?.url).not.toContain('acc')
  })

  it('throws the API\'s error for a failed answer', async () => {
    vi.stubGlobal('fetch', vi.fn(() => Promise.resolve(new Response(
      JSON.stringify({ detail: 'gone', error_code: 'NOT_FOUND', timestamp: '' }), { status: 404 }))))
    await expect(blobUrl('/api/v1/artifacts/a/download')).rejects.toMatchObject({ errorCode: 'NOT_FOUND' })
  })
})

describe('formatSize', () => {
  it('says bytes, KB or MB', () => {
    expect(formatSize(12)).toBe('12 B')
    expect(formatSize(2048)).toBe('2.0 KB')
    expect(formatSize(3 * 1024 * 1024)).toBe('3.0 MB')
  })
})
