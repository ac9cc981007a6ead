import { describe, expect, it } from 'vitest'
import { follow, readSse, type SseEvent } from './sse'

function body(chunks: string[], fail = false): Response {
  // One chunk per read; a failing body breaks only after its chunks were read (a cut).
  const left = [...chunks]
  const encoder = new TextEncoder()
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = left.shift()
      if (next !== undefined) controller.enqueue(encoder.encode(next))
      else if (fail) controller.error(new TypeError('network error'))
      else controller.close()
    },
  })
  return new Response(stream, { headers: { 'Content-Type': 'text/event-stream' } })
}

const frame = (type: string, data: object, id?: number) =>
  `${id === undefined ? '' : `id: ${id}\n`}event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

describe('readSse', () => {
  it('parses events split anywhere, with ids for stored ones and none for live chunks', async () => {
    const text = `: keep-alive\n\n${frame('content', { content: 'Hi' })}${frame('message', { content: 'Hi' }, 5)}`
    const seen: SseEvent[] = []
    await readSse(body([text.slice(0, 7), text.slice(7, 40), text.slice(40)]), (e) => seen.push(e))
    expect(seen.map((e) => [e.event, e.id])).toEqual([['content', null], ['message', 5]])
    expect(seen[0]?.data).toEqual({ type: 'content', content: 'Hi' })
  })

  it('throws the API error of an answer that is not a stream', async () => {
    const answer = new Response(JSON.stringify({ detail: 'no', error_code: 'NOT_FOUND', timestamp: '' }), { status: 404 })
    await expect(readSse(answer, () => {})).rejects.toMatchObject({ status: 404, errorCode: 'NOT_FOUND' })
  })
})

describe('follow', () => {
  it('reconnects after a drop from the last id it saw (Last-Event-ID)', async () => {
    const controller = new AbortController()
    const asked: (number | null)[] = []
    const ids: number[] = []
    const answers = [
      () => body([frame('run', {}, 3), frame('content', { content: 'x' })], true),
      () => body([frame('message', {}, 4)]),
    ]
    await follow({
      lastEventId: 2,
      delays: [0],
      signal: controller.signal,
      open: async (last) => {
        asked.push(last)
        const next = answers.shift()
        if (next === undefined) {
          controller.abort()
          throw new Error('stopped')
        }
        return next()
      },
      onEvent: (e) => {
        if (e.id !== null) ids.push(e.id)
      },
    })
    expect(asked).toEqual([2, 3, 4])
    expect(ids).toEqual([3, 4])
  })

  it('stops on a final error instead of retrying', async () => {
    const answer = new Response(JSON.stringify({ detail: 'gone', error_code: 'NOT_FOUND', timestamp: '' }), { status: 404 })
    const run = follow({
      lastEventId: null,
      delays: [0],
      signal: new AbortController().signal,
      open: async () => answer.clone(),
      onEvent: () => {},
      final: () => true,
    })
    await expect(run).rejects.toMatchObject({ errorCode: 'NOT_FOUND' })
  })
})
