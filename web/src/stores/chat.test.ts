import { createPinia, setActivePinia } from 'pinia'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { saveTokens } from '@/api/tokens'
import { useChat } from './chat'

const json = (body: unknown) => new Response(JSON.stringify(body), { headers: { 'Content-Type': 'application/json' } })
const sse = (...frames: string[]) =>
  new Response(frames.join(''), { headers: { 'Content-Type': 'text/event-stream' } })
const session = { id: 's1', workspace_id: 'w1', title: 's1', status: 'created', task_type: 'general', created_at: '', updated_at: '', version: 1 }
const userMessage = 'id: 2\nevent: message\ndata: {"type":"message","id":"m2","role":"user","content":"Take your time","created_at":"","attachments":[]}\n\n'

beforeEach(() => {
  setActivePinia(createPinia())
  localStorage.clear()
  saveTokens({ access: 'a', refresh: 'r' })
})
afterEach(() => vi.unstubAllGlobals())

describe('chat', () => {
  it('a message sent while the session loads is sent once the load is done, and its stream is not cut', async () => {
    const asked: string[] = []
    let history: (r: Response) => void = () => undefined
    vi.stubGlobal('fetch', async (r: Request) => {
      const path = new URL(r.url).pathname
      asked.push(`${r.method} ${path}`)
      if (path === '/api/v1/sessions/s1') return json(session)
      if (path === '/api/v1/sessions/s1/messages') return new Promise<Response>((resolve) => (history = resolve))
      if (path === '/api/v1/sessions/s1/hitl/pending') return json([])
      if (path === '/api/v1/chat/s1/message') return sse(userMessage)
      return new Promise<Response>(() => undefined) // the session stream: quiet
    })
    const chat = useChat()
    const opened = chat.open('s1')
    await vi.waitFor(() => expect(chat.session?.id).toBe('s1')) // the composer shows now
    const sent = chat.send('Take your time')
    await Promise.resolve()
    expect(asked).not.toContain('POST /api/v1/chat/s1/message') // it waits for the load
    history(json({ items: [], next_cursor: null }))
    await opened
    await sent
    expect(asked.indexOf('POST /api/v1/chat/s1/message')).toBeGreaterThan(asked.indexOf('GET /api/v1/sessions/s1/hitl/pending'))
    const own = chat.state.turns.filter((t) => t.role === 'user')
    expect(own).toHaveLength(1)
    expect(own[0]).toMatchObject({ id: 'm2', live: false }) // stored: its id came on its own stream
  })
})
