// Regenerating one slide of a deck: POST /artifacts/{id}/regenerate answers a short event
// stream (the deck's events as the new version is recorded), ending in `done` with the
// new version or `error` with the API's detail and code (nothing recorded).
import { apiUrl, authedFetch } from '@/api/client'
import { ApiError } from '@/api/errors'
import { readSse } from '@/api/sse'

export type Outcome = { kind: 'done'; version: number } | { kind: 'failed'; detail: string; errorCode: string }

/** The end a regeneration stream's last event tells: its new version, or why it failed. */
export function outcomeOf(event: string, data: unknown): Outcome | null {
  const d = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>
  if (event === 'done' && typeof d.version === 'number') return { kind: 'done', version: d.version }
  if (event === 'error') {
    const detail = typeof d.detail === 'string' ? d.detail : 'The slide was not regenerated'
    const errorCode = typeof d.error_code === 'string' ? d.error_code : 'UNKNOWN'
    return { kind: 'failed', detail, errorCode }
  }
  return null
}

/** Rewrites slide `page` (from 1) following `instructions`; `onEvent` sees each event's
 * name as it arrives. Resolves with the outcome; an answer before any stream (403, 409,
 * 422) or a stream that ends without one is thrown as an ApiError. */
export async function regenerateSlide(
  artifactId: string,
  page: number,
  instructions: string,
  onEvent: (name: string) => void,
  signal?: AbortSignal,
): Promise<Outcome> {
  const response = await authedFetch(
    new Request(apiUrl(`/api/v1/artifacts/${artifactId}/regenerate`), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify({ page_index: page, instructions }),
      signal,
    }),
  )
  let outcome: Outcome | null = null
  await readSse(response, (e) => {
    onEvent(e.event)
    outcome = outcomeOf(e.event, e.data) ?? outcome
  })
  if (outcome === null) throw new ApiError(502, 'The regeneration stream ended without an outcome', 'STREAM_ENDED')
  return outcome
}
