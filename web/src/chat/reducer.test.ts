import { describe, expect, it } from 'vitest'
import type { SseEvent } from '@/api/sse'
import type { MessageOut, SsePayload } from '@/api/types'
import { addHistory, addOwnMessage, apply } from './reducer'
import { createChatState, type ChatState } from './state'

const at = '2026-01-01T00:00:00Z'
const ev = (data: SsePayload, id: number | null = null): SseEvent => ({ event: data.type, id, data })
const chunk = (content: string) => ev({ type: 'content', content })
const stored = (id: number, content: string, extra: Partial<SsePayload> = {}) =>
  ev({ type: 'message', version: id, timestamp: at, id: `m${id}`, role: 'assistant', content, ...extra } as SsePayload, id)

function run(state: ChatState, events: SseEvent[]): ChatState {
  for (const e of events) apply(state, e)
  return state
}

describe('chat reducer', () => {
  it('grows the bubble from chunks and the stored message replaces them: the answer shows once', () => {
    const state = run(createChatState(), [chunk('Heat pumps '), chunk('move heat.'), stored(7, 'Heat pumps move heat.')])
    expect(state.turns).toHaveLength(1)
    expect(state.turns[0]).toMatchObject({ id: 'm7', content: 'Heat pumps move heat.', live: false })
  })

  it('applies a stored event once, by its id, even when a resumed stream repeats it', () => {
    const state = createChatState()
    const answer = stored(7, 'Once.')
    run(state, [answer, answer, ev({ type: 'finding', text: 'x', citations: [], version: 6, timestamp: at }, 6)])
    expect(state.turns.map((t) => t.content)).toEqual(['Once.'])
    expect(state.lastEventId).toBe(7)
    expect(state.memoryTick).toBe(0) // version 6 is behind the last id applied
  })

  it('marks the artifact list stale on an artifact event, once per event', () => {
    const made = ev({ type: 'artifact', kind: 'report', name: 'report.md', blob_ref: 'b', size: 9, sha256: 's', media_type: 'text/markdown', artifact_id: 'a1', version: 3, timestamp: at }, 3)
    const state = run(createChatState(), [made, made])
    expect(state.artifactTick).toBe(1)
  })

  it('does not repeat a message the history already listed', () => {
    const state = createChatState()
    const listed: MessageOut = { id: 'm7', session_id: 's', version: 7, role: 'assistant', content: 'Once.', created_at: at }
    addHistory(state, [listed])
    run(state, [stored(7, 'Once.')])
    expect(state.turns).toHaveLength(1)
  })

  it('takes a tool call from pending to running to its result', () => {
    const state = createChatState()
    // `args` values are any JSON (the generated type narrows them to objects).
    const call = { type: 'tool_call', id: 't1', name: 'note_progress', args: { text: 'hi' } as never } as const
    apply(state, stored(3, 'I will note.', { tool_calls: [{ id: 't1', name: 'note_progress', args: {} }] } as Partial<SsePayload>))
    apply(state, ev({ ...call, status: 'pending', version: 4, timestamp: at }, 4))
    expect(state.tools.t1?.status).toBe('pending')
    apply(state, ev({ ...call, status: 'running' }))
    expect(state.tools.t1?.status).toBe('running')
    apply(state, ev({ type: 'tool_result', id: 't1', status: 'success', outcome: 'success', success: true, result: 'ok', duration_ms: 12, version: 5, timestamp: at }, 5))
    expect(state.tools.t1).toMatchObject({ status: 'success', result: 'ok', durationMs: 12 })
    expect(state.tools.t1?.trail).toEqual(['pending', 'running', 'success'])
    expect(state.turns[0]?.toolIds).toEqual(['t1'])
  })

  it('shows a call made by hand as the user\'s own turn, once, and starts no run', () => {
    const state = createChatState()
    apply(state, stored(3, 'Done.'))
    const call = { type: 'tool_call', id: 'manual_1', name: 'code_execute', args: { code: 'print(1)' } as never } as const
    apply(state, ev({ ...call, status: 'pending', version: 4, timestamp: at }, 4))
    apply(state, ev({ ...call, status: 'running' }))
    expect(state.turns.map((t) => [t.role, t.id, t.toolIds])).toEqual([
      ['assistant', 'm3', []],
      ['user', '4', ['manual_1']],
    ])
    expect(state.running).toBe(false)
    const reloaded = createChatState() // the same turn from the history, then the stream again
    addHistory(reloaded, [{ id: '4', session_id: 's', version: 4, role: 'user', content: '', created_at: at, tool_calls: [{ id: 'manual_1', name: 'code_execute', args: {}, status: 'pending' }] }])
    apply(reloaded, ev({ ...call, status: 'pending', version: 4, timestamp: at }, 4))
    expect(reloaded.turns.map((t) => t.toolIds)).toEqual([['manual_1']])
  })

  it('opens an approval on confirm_required and closes it when answered', () => {
    const state = createChatState()
    apply(state, ev({ type: 'confirm_required', action_id: 'a1', tool: 'note_progress', args: { text: 'x' } as never, description: 'Note?', tool_call_id: 't1', version: 4, timestamp: at }, 4))
    expect(state.approval).toMatchObject({ actionId: 'a1', tool: 'note_progress', description: 'Note?' })
    apply(state, ev({ type: 'confirmed', action_id: 'a1', approved: true, version: 5, timestamp: at }, 5))
    expect(state.approval).toBeNull()
  })

  it('keeps the approval while a run waits for it, and ends the run on done', () => {
    const state = createChatState()
    state.approval = { actionId: 'a1', tool: 't', args: {}, description: '' }
    apply(state, ev({ type: 'done', status: 'waiting_confirmation', message_id: null, tokens_used: 0, run_id: 'r', reason: '', version: 8, timestamp: at }))
    expect(state.approval).not.toBeNull()
    apply(state, ev({ type: 'done', status: 'completed', message_id: 'm9', tokens_used: 10, run_id: 'r', reason: '', version: 9, timestamp: at }, 9))
    expect(state.done?.status).toBe('completed')
    expect(state.running).toBe(false)
  })

  it('shows live thinking, then keeps it when the turn is stored', () => {
    const state = createChatState()
    run(state, [ev({ type: 'thinking', content: '', status: 'start' }), ev({ type: 'thinking', content: 'Plan first.' })])
    expect(state.turns[0]).toMatchObject({ thinking: 'Plan first.', thinkingLive: true })
    run(state, [chunk('Hi'), stored(4, 'Hi', { thinking: 'Plan first.' } as Partial<SsePayload>)])
    expect(state.turns[0]).toMatchObject({ thinking: 'Plan first.', thinkingLive: false, content: 'Hi' })
  })

  it('replaces the sent message by its stored copy', () => {
    const state = createChatState()
    addOwnMessage(state, 'hello')
    apply(state, ev({ type: 'message', version: 2, timestamp: at, id: 'u2', role: 'user', content: 'hello' }, 2))
    expect(state.turns).toHaveLength(1)
    expect(state.turns[0]).toMatchObject({ id: 'u2', live: false })
  })

  it("keeps the sent message's attachments by name; a stored one names its blob refs", () => {
    const state = createChatState()
    addOwnMessage(state, 'read', [{ ref: 'abcdef0123456789', name: 'notes.md', size: 9 }])
    const user = (version: number, content: string) =>
      ev({ type: 'message', version, timestamp: at, id: `u${version}`, role: 'user', content, attachments: ['abcdef0123456789'] }, version)
    run(state, [user(2, 'read'), user(3, 'again')])
    expect(state.turns.map((t) => t.attachments)).toEqual([
      [{ ref: 'abcdef0123456789', name: 'notes.md', size: 9 }],
      [{ ref: 'abcdef0123456789', name: 'abcdef012345', size: null }],
    ])
    const reopened = createChatState()
    addHistory(reopened, [{ id: 'u2', session_id: 's', version: 2, role: 'user', content: 'read', created_at: at, attachments: ['ff00'] }])
    expect(reopened.turns[0]?.attachments).toEqual([{ ref: 'ff00', name: 'ff00', size: null }])
  })

  it('notes strikes, reboots and budgets quietly', () => {
    const state = createChatState()
    apply(state, ev({ type: 'notice', kind: 'strike', tool: 'web_search', error_signature: 'timeout', version: 3, timestamp: at }, 3))
    expect(state.notices).toEqual([expect.objectContaining({ kind: 'strike', text: 'web_search: timeout' })])
  })

  it('says which model took over when one could not answer', () => {
    const state = createChatState()
    const fallback = { from_model: 'claude-sonnet-4-5', to_model: 'openai:gpt-4.1', reason: '529 overloaded', error_code: 'LLM_OVERLOADED' }
    apply(state, ev({ type: 'notice', kind: 'fallback', message: 'claude-sonnet-4-5 could not answer; openai:gpt-4.1 took over', fallback, version: 4, timestamp: at }, 4))
    expect(state.notices).toEqual([expect.objectContaining({ kind: 'fallback', text: 'claude-sonnet-4-5 could not answer; openai:gpt-4.1 took over' })])
  })
})
