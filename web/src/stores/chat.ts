// One open session's chat: its history, the event streams (only one open at a time, so
// live chunks never arrive twice), approvals, stop.
import { defineStore } from 'pinia'
import { reactive, ref } from 'vue'
import { api, data } from '@/api/client'
import { ApiError } from '@/api/errors'
import { follow, readSse, type SseEvent } from '@/api/sse'
import { chatRequest, newKey, sessionStream } from '@/api/streams'
import type { SessionOut } from '@/api/types'
import type { AttachedView } from '@/chat/attachments'
import { addHistory, addOwnMessage, apply } from '@/chat/reducer'
import { createChatState, type ChatState } from '@/chat/state'

/** A pending request's context is `{tool_call_id, args}`: the call's arguments. */
function approvalArgs(context: Record<string, unknown>): Record<string, unknown> {
  const args = context.args
  return typeof args === 'object' && args !== null ? (args as Record<string, unknown>) : context
}

const final = (e: unknown): boolean => e instanceof ApiError && e.status >= 400 && e.status < 500

export const useChat = defineStore('chat', () => {
  const state = reactive<ChatState>(createChatState())
  const session = ref<SessionOut | null>(null)
  const olderCursor = ref<string | null>(null)
  const connected = ref(false)
  let stream: AbortController | null = null

  function receive(event: SseEvent): void {
    connected.value = true
    apply(state, event)
  }

  function closeStream(): void {
    stream?.abort()
    stream = null
  }

  /** Follows the session stream from the last id applied (a resume repeats nothing). */
  function followSession(id: string): void {
    closeStream()
    const controller = new AbortController()
    stream = controller
    void follow({
      open: (last, signal) => sessionStream(id, last ?? state.lastEventId, signal),
      onEvent: receive,
      onDrop: () => {
        connected.value = false
      },
      signal: controller.signal,
      lastEventId: state.lastEventId,
      final,
    }).catch(() => {
      connected.value = false
    })
  }

  /** The session being loaded, until it is: a message sent meanwhile waits for it, or
   * the load's end (following the session stream) would cut the message's own stream. */
  let opening: Promise<void> | null = null

  async function open(id: string): Promise<void> {
    const loading = load(id)
    opening = loading
    try {
      await loading
    } finally {
      if (opening === loading) opening = null
    }
  }

  async function load(id: string): Promise<void> {
    closeStream()
    Object.assign(state, createChatState())
    olderCursor.value = null
    const found = await data(
      api.GET('/api/v1/sessions/{session_id}', { params: { path: { session_id: id } } }),
    )
    session.value = found
    state.lastEventId = found.version
    state.running = found.active_run_id != null
    const page = await data(
      api.GET('/api/v1/sessions/{session_id}/messages', {
        params: { path: { session_id: id }, query: { limit: 50 } },
      }),
    )
    addHistory(state, page.items)
    olderCursor.value = page.next_cursor
    const pending = await data(
      api.GET('/api/v1/sessions/{session_id}/hitl/pending', {
        params: { path: { session_id: id } },
      }),
    )
    const first = pending[0]
    if (first !== undefined) {
      state.approval = {
        actionId: first.request_id,
        tool: first.operation,
        args: approvalArgs(first.context),
        description: first.description,
      }
    }
    followSession(id)
  }

  async function loadOlder(): Promise<void> {
    if (session.value === null || olderCursor.value === null) return
    const page = await data(
      api.GET('/api/v1/sessions/{session_id}/messages', {
        params: { path: { session_id: session.value.id }, query: { limit: 50, cursor: olderCursor.value } },
      }),
    )
    addHistory(state, page.items)
    olderCursor.value = page.next_cursor
  }

  /** Sends a message and reads the run on the chat stream; the session stream takes over
   * when it ends (or drops), from the last id applied. */
  async function send(content: string, attached: AttachedView[] = []): Promise<void> {
    await opening?.catch(() => undefined) // a load that failed says so itself
    const id = session.value?.id
    if (id === undefined) return
    closeStream()
    const controller = new AbortController()
    stream = controller
    addOwnMessage(state, content, attached)
    try {
      const refs = attached.map((a) => a.ref)
      await readSse(await chatRequest(id, content, controller.signal, refs), receive)
    } catch (error) {
      if (controller.signal.aborted) return
      if (final(error)) {
        state.running = false
        state.turns = state.turns.filter((t) => !(t.role === 'user' && t.live))
        followSession(id)
        throw error
      }
    }
    if (!controller.signal.aborted) followSession(id)
  }

  async function answer(approved: boolean, feedback: string): Promise<void> {
    const id = session.value?.id
    const approval = state.approval
    if (id === undefined || approval === null) return
    await data(
      api.POST('/api/v1/chat/{session_id}/confirm', {
        params: { path: { session_id: id }, header: { 'Idempotency-Key': newKey() } },
        body: { action_id: approval.actionId, confirmed: approved, feedback: feedback || null },
      }),
    )
    if (state.approval?.actionId === approval.actionId) state.approval = null
  }

  async function stop(): Promise<void> {
    const id = session.value?.id
    if (id === undefined) return
    await data(
      api.POST('/api/v1/chat/{session_id}/stop', {
        params: { path: { session_id: id }, header: { 'Idempotency-Key': newKey() } },
      }),
    )
  }

  function close(): void {
    closeStream()
    session.value = null
  }

  return { state, session, olderCursor, connected, open, loadOlder, send, answer, stop, close }
})
