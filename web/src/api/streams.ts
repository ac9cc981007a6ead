// The two event streams of a session: the chat POST and the resumable session stream.
import { apiUrl, authedFetch } from './client'

/** A fresh Idempotency-Key (randomUUID needs a secure context, which plain http lacks). */
export function newKey(): string {
  return globalThis.crypto?.randomUUID?.() ?? `${Date.now()}-${Math.random().toString(36).slice(2)}`
}

export function chatRequest(sessionId: string, content: string, signal: AbortSignal, attachments: string[] = []): Promise<Response> {
  return authedFetch(
    new Request(apiUrl(`/api/v1/chat/${sessionId}/message`), {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'text/event-stream',
        'Idempotency-Key': newKey(),
      },
      body: JSON.stringify(attachments.length ? { content, attachments } : { content }),
      signal,
    }),
  )
}

export function sessionStream(
  sessionId: string,
  lastEventId: number | null,
  signal: AbortSignal,
): Promise<Response> {
  const headers: Record<string, string> = { Accept: 'text/event-stream' }
  if (lastEventId !== null) headers['Last-Event-ID'] = String(lastEventId)
  return authedFetch(new Request(apiUrl(`/api/v1/sessions/${sessionId}/stream`), { headers, signal }))
}
