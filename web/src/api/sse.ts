// Server-Sent Events over fetch (the chat is a POST, so no EventSource), parsed with
// eventsource-parser, and a follower that resumes a dropped stream from `Last-Event-ID`.
import { createParser } from 'eventsource-parser'
import { errorOf } from './errors'
import type { SsePayload } from './types'

export interface SseEvent {
  event: string
  /** The session version of a stored event; null for live chunks (never resent). */
  id: number | null
  data: SsePayload
}

/** Reads an event stream to its end, handing each event on; throws if the body breaks. */
export async function readSse(
  response: Response,
  onEvent: (event: SseEvent) => void,
): Promise<void> {
  if (!response.ok) throw await errorOf(response)
  if (response.body === null) return
  const parser = createParser({
    onEvent(message) {
      const id = message.id === undefined || message.id === '' ? null : Number(message.id)
      const data = JSON.parse(message.data) as SsePayload
      onEvent({ event: message.event ?? data.type, id, data })
    },
  })
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return
    parser.feed(value)
  }
}

export interface Follow {
  /** Opens the stream after this id (null: from now on). */
  open: (lastEventId: number | null, signal: AbortSignal) => Promise<Response>
  onEvent: (event: SseEvent) => void
  /** Called with each failure before a retry (the UI may show it quietly). */
  onDrop?: (error: unknown) => void
  signal: AbortSignal
  lastEventId: number | null
  /** Waits before the n-th retry, in ms (tests pass zeros). */
  delays?: readonly number[]
  /** Whether an error is final (no retry); default: 4xx answers are. */
  final?: (error: unknown) => boolean
}

const DELAYS = [250, 500, 1000, 2000, 4000, 8000] as const

/** Waits `ms`, or less: until aborted, or until the browser is back online. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const wake = (): void => {
      clearTimeout(timer)
      globalThis.removeEventListener?.('online', wake)
      resolve()
    }
    const timer = setTimeout(wake, ms)
    signal.addEventListener('abort', wake)
    globalThis.addEventListener?.('online', wake)
  })
}

/** Follows a session stream until aborted, reconnecting with the last id it saw. */
export async function follow(options: Follow): Promise<void> {
  const delays = options.delays ?? DELAYS
  let lastEventId = options.lastEventId
  let attempt = 0
  while (!options.signal.aborted) {
    try {
      const response = await options.open(lastEventId, options.signal)
      await readSse(response, (event) => {
        attempt = 0
        if (event.id !== null) lastEventId = Math.max(lastEventId ?? 0, event.id)
        options.onEvent(event)
      })
    } catch (error) {
      if (options.signal.aborted) return
      if (options.final?.(error)) throw error
      options.onDrop?.(error)
    }
    if (options.signal.aborted) return
    await sleep(delays[Math.min(attempt, delays.length - 1)] ?? 1000, options.signal)
    attempt += 1
  }
}
