// The chat view's state: its turns, tool calls, approval, notices and where the streams
// left off; `reducer.ts` builds it from stored messages and SSE events.
import type { Citation, Sse, ToolCallOut } from '@/api/types'
import type { AttachedView } from './attachments'

export type ToolStatus = ToolCallOut['status']

export interface ToolView {
  id: string
  name: string
  args: Record<string, unknown>
  status: ToolStatus
  risky: boolean
  result: string | null
  error: string | null
  durationMs: number | null
  progress: string | null
  /** Every status it showed, in order (pending, running, success...). */
  trail: ToolStatus[]
}

export interface Turn {
  key: string
  id: string | null
  role: 'user' | 'assistant'
  content: string
  thinking: string
  thinkingLive: boolean
  toolIds: string[]
  citations: Citation[]
  /** A user message's uploads. */
  attachments: AttachedView[]
  /** Still streaming: its stored message has not arrived. */
  live: boolean
}

export interface PendingApproval {
  actionId: string
  tool: string
  args: Record<string, unknown>
  description: string
}

export interface ChatNotice {
  key: string
  kind: string
  text: string
}

export interface ChatState {
  turns: Turn[]
  tools: Record<string, ToolView>
  seen: Set<number>
  lastEventId: number | null
  approval: PendingApproval | null
  running: boolean
  done: Sse.Done | null
  error: { message: string; errorCode: string } | null
  notices: ChatNotice[]
  sources: Record<number, Sse.Source>
  /** Grows with each plan, finding or progress: the working memory is stale. */
  memoryTick: number
  /** Grows with each artifact event: the artifact list is stale. */
  artifactTick: number
}

export function createChatState(): ChatState {
  return {
    turns: [],
    tools: {},
    seen: new Set(),
    lastEventId: null,
    approval: null,
    running: false,
    done: null,
    error: null,
    notices: [],
    sources: {},
    memoryTick: 0,
    artifactTick: 0,
  }
}
