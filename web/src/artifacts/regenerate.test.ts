import { afterEach, describe, expect, it, vi } from 'vitest'
import { ApiError } from '@/api/errors'
import { outcomeOf, regenerateSlide } from './regenerate'
import { atVersion } from './preview'

afterEach(() => vi.unstubAllGlobals())

const frame = (event: string, data: object) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`

function answer(text: string, status = 200): Response {
  return new Response(text, { status, headers: { 'Content-Type': status === 200 ? 'text/event-stream' : 'application/json' } })
}

describe('outcomeOf', () => {
  it('reads the new version from done and the detail and code from error', () => {
    expect(outcomeOf('done', { status: 'completed', version: 3, page_index: 2 })).toEqual({ kind: 'done', version: 3 })
    expect(outcomeOf('error', { detail: 'over budget', error_code: 'BUDGET_EXCEEDED' })).toEqual({ kind: 'failed', detail: 'over budget', errorCode: 'BUDGET_EXCEEDED' })
    expect(outcomeOf('artifact', { type: 'artifact' })).toBeNull()
  })
})

describe('regenerateSlide', () => {
  it('posts the page and instructions, hands on each event and ends with the version', async () => {
    const fetched: Request[] = []
    vi.stubGlobal('fetch', (r: Request) => {
      fetched.push(r)
      return Promise.resolve(answer(frame('artifact', { type: 'artifact' }) + frame('done', { status: 'completed', version: 2, page_index: 2 })))
    })
    const seen: string[] = []
    const outcome = await regenerateSlide('a1', 2, 'Shorter', (e) => seen.push(e))
    expect(outcome).toEqual({ kind: 'done', version: 2 })
    expect(seen).toEqual(['artifact', 'done'])
    expect(fetched[0]?.url).toMatch(/\/api\/v1\/artifacts\/a1\/regenerate$/)
    expect(await fetched[0]?.json()).toEqual({ page_index: 2, instructions: 'Shorter' })
  })

  it('throws the API error answered before any stream', async () => {
    vi.stubGlobal('fetch', () => Promise.resolve(answer(JSON.stringify({ detail: 'a run is active', error_code: 'RUN_ACTIVE' }), 409)))
    await expect(regenerateSlide('a1', 1, 'x', () => {})).rejects.toEqual(new ApiError(409, 'a run is active', 'RUN_ACTIVE'))
  })

  it('throws when the stream ends without an outcome', async () => {
    vi.stubGlobal('fetch', () => Promise.resolve(answer(frame('artifact', { type: 'artifact' }))))
    await expect(regenerateSlide('a1', 1, 'x', () => {})).rejects.toBeInstanceOf(ApiError)
  })
})

describe('atVersion', () => {
  it('sets the version on a path, keeping its other parameters', () => {
    expect(atVersion('/api/v1/artifacts/a/preview', 2)).toBe('/api/v1/artifacts/a/preview?version=2')
    expect(atVersion('/api/v1/artifacts/a/download?version=5&format=pptx', 1)).toBe('/api/v1/artifacts/a/download?version=1&format=pptx')
  })
})
