// The chat view's state, built from stored messages and SSE events (README "Server-Sent
// Events"): live content chunks grow the current assistant bubble and the stored
// `message` closes that turn (its content replaces the chunks); a stored event is
// applied once, by its id.
import type { Citation, MessageOut, Sse } from '@/api/types'
import type { SseEvent } from '@/api/sse'
import type { AttachedView } from './attachments'
import type { ChatState, ToolStatus, ToolView, Turn } from './state'

// The ids of tool calls made by hand (`POST /mcp/tools/{name}/execute`), outside any run.
const BY_HAND = 'manual_'

let counter = 0
const key = (prefix: string): string => `${prefix}-${++counter}`

function turn(role: Turn['role'], id: string | null, content: string, live: boolean): Turn {
  return {
    key: id ?? key('turn'),
    id,
    role,
    content,
    thinking: '',
    thinkingLive: false,
    toolIds: [],
    citations: [],
    attachments: [],
    live,
  }
}

function args(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {}
}

function upsertTool(state: ChatState, id: string, name: string, given: unknown): ToolView {
  const known = state.tools[id]
  if (known !== undefined) {
    if (given !== undefined && given !== null) known.args = args(given)
    return known
  }
  const view: ToolView = {
    id,
    name,
    args: args(given),
    status: 'pending',
    risky: false,
    result: null,
    error: null,
    durationMs: null,
    progress: null,
    trail: ['pending'],
  }
  state.tools[id] = view
  return view
}

function setStatus(view: ToolView, status: ToolStatus): void {
  view.status = status
  if (view.trail.at(-1) !== status) view.trail.push(status)
}

function attach(target: Turn, toolId: string): void {
  if (!target.toolIds.includes(toolId)) target.toolIds.push(toolId)
}

function owner(state: ChatState, toolId: string): Turn | undefined {
  return state.turns.find((t) => t.toolIds.includes(toolId))
}

/** The assistant bubble that live chunks go into, opened when there is none. */
function liveTurn(state: ChatState): Turn {
  const last = state.turns.at(-1)
  if (last !== undefined && last.role === 'assistant' && last.live) return last
  const opened = turn('assistant', null, '', true)
  state.turns.push(opened)
  return opened
}

function mergeCitations(target: Turn, citations: readonly Citation[] | null | undefined): void {
  for (const c of citations ?? []) {
    if (!target.citations.some((known) => known.index === c.index)) target.citations.push(c)
  }
}

/** Older pages of GET /sessions/{id}/messages, oldest first, before what is shown. */
export function addHistory(state: ChatState, messages: readonly MessageOut[]): void {
  const older: Turn[] = []
  for (const m of messages) {
    if (state.turns.some((t) => t.id === m.id)) continue
    const t = turn(m.role, m.id, m.content, false)
    t.thinking = m.thinking ?? ''
    t.attachments = refViews(m.attachments)
    mergeCitations(t, m.citations)
    for (const call of m.tool_calls ?? []) {
      const view = upsertTool(state, call.id, call.name, call.args)
      setStatus(view, call.status)
      view.result = call.result ?? null
      view.error = call.error ?? null
      view.durationMs = call.duration_ms ?? null
      attach(t, call.id)
    }
    older.push(t)
  }
  state.turns.unshift(...older)
}

/** Attachments known by their blob refs alone (a stored message names no file names). */
function refViews(refs: readonly string[] | null | undefined): AttachedView[] {
  return (refs ?? []).map((ref) => ({ ref, name: ref.slice(0, 12), size: null }))
}

/** A message the user sent, shown until its stored `message` arrives. */
export function addOwnMessage(state: ChatState, content: string, attached: AttachedView[] = []): void {
  const own = turn('user', null, content, true)
  own.attachments = attached
  state.turns.push(own)
  state.running = true
  state.done = null
  state.error = null
}

function applyMessage(state: ChatState, m: Sse.Message): void {
  if (state.turns.some((t) => t.id === m.id)) return
  if (m.role === 'user') {
    const own = state.turns.find((t) => t.role === 'user' && t.live && t.content === m.content)
    if (own !== undefined) {
      own.id = m.id
      own.live = false
    } else {
      const t = turn('user', m.id, m.content, false)
      t.attachments = refViews(m.attachments)
      state.turns.push(t)
    }
    return
  }
  const last = state.turns.at(-1)
  const target =
    last !== undefined && last.role === 'assistant' && last.live
      ? last
      : (state.turns[state.turns.push(turn('assistant', null, '', false)) - 1] as Turn)
  target.id = m.id
  target.content = m.content
  target.thinking = m.thinking ?? target.thinking
  target.thinkingLive = false
  target.live = false
  mergeCitations(target, m.citations)
  for (const call of m.tool_calls ?? []) {
    upsertTool(state, call.id, call.name, call.args)
    attach(target, call.id)
  }
}

function closeLive(state: ChatState): void {
  const last = state.turns.at(-1)
  if (last !== undefined && last.live && last.role === 'assistant') {
    last.live = false
    last.thinkingLive = false
  }
}

function notice(state: ChatState, kind: string, text: string): void {
  state.notices.push({ key: key('notice'), kind, text })
}

function noticeText(n: Sse.Notice): string {
  if (n.kind === 'budget' && n.budget) {
    const b = n.budget
    return `${b.scope} budget ${Math.round(b.threshold * 100)}%: $${b.spent_usd}`
  }
  return n.message ?? n.summary ?? [n.tool, n.error_signature].filter(Boolean).join(': ')
}

/** Applies one SSE event; a stored event already applied (same id) changes nothing. */
export function apply(state: ChatState, event: SseEvent): void {
  if (event.id !== null) {
    if (state.seen.has(event.id)) return
    if (state.lastEventId !== null && event.id <= state.lastEventId) return
    state.seen.add(event.id)
    state.lastEventId = event.id
  }
  const p = event.data
  switch (p.type) {
    case 'thinking': {
      const t = liveTurn(state)
      if (p.status === 'start') t.thinkingLive = true
      else if (p.status === 'end') t.thinkingLive = false
      else {
        t.thinking += p.content
        t.thinkingLive = true
      }
      return
    }
    case 'content': {
      const t = liveTurn(state)
      t.content += p.content
      t.thinkingLive = false
      mergeCitations(t, p.citations)
      return
    }
    case 'tool_call': {
      const view = upsertTool(state, p.id, p.name, p.args)
      view.risky = p.risk === 'risky'
      if (p.status === 'running' && view.status === 'pending') setStatus(view, 'running')
      const byHand = p.id.startsWith(BY_HAND)
      if (owner(state, p.id) === undefined) {
        // A call made by hand is the user's, a turn of its own (as the history lists it).
        const last = byHand
          ? (state.turns[state.turns.push(turn('user', p.version == null ? null : String(p.version), '', false)) - 1] as Turn)
          : (state.turns.findLast((t) => t.role === 'assistant') ?? liveTurn(state))
        attach(last, p.id)
      }
      if (!byHand) state.running = true // a call made by hand starts no run
      return
    }
    case 'tool_result': {
      const view = upsertTool(state, p.id, '', null)
      setStatus(view, p.status)
      view.result = p.result ?? null
      view.error = p.error ?? null
      view.durationMs = p.duration_ms ?? null
      view.progress = null
      return
    }
    case 'confirm_required':
      state.approval = {
        actionId: p.action_id,
        tool: p.tool,
        args: args(p.args),
        description: p.description,
      }
      return
    case 'confirmed':
      if (state.approval?.actionId === p.action_id) state.approval = null
      return
    case 'done':
      closeLive(state)
      state.done = p
      state.running = false
      if (p.status !== 'waiting_confirmation') state.approval = null
      return
    case 'error':
      closeLive(state)
      state.error = { message: p.message, errorCode: p.error_code }
      state.running = false
      return
    case 'message':
      applyMessage(state, p)
      return
    case 'run':
      state.running = true
      state.done = null
      state.error = null
      return
    case 'plan':
    case 'finding':
      state.memoryTick += 1
      return
    case 'progress':
      if (p.tool_call_id) {
        const view = state.tools[p.tool_call_id]
        if (view !== undefined) view.progress = p.text
      } else {
        state.memoryTick += 1
      }
      return
    case 'source':
      state.sources[p.number] = p
      return
    case 'notice':
      notice(state, p.kind, noticeText(p))
      return
    case 'artifact':
      notice(state, 'artifact', p.name)
      state.artifactTick += 1
      return
    case 'session':
    case 'skill_activated':
    case 'memory_recalled':
      return
    default: {
      const unknown: never = p
      return unknown
    }
  }
}
