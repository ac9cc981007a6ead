// The push channel (WS /api/v1/ws): follows the listed sessions, applies `session_update`,
// shows `notification` as toasts (except the open chat's own: the chat shows those), and
// reconnects with a growing delay.
import { onBeforeUnmount, watch, type Ref } from 'vue'
import { refreshOnce } from '@/api/client'
import { readTokens } from '@/api/tokens'
import type { WsClientMessage, WsServerMessage } from '@/api/types'
import { useSessions } from '@/stores/sessions'
import { useToasts } from '@/stores/toasts'

const BACKOFF = [500, 1000, 2000, 5000, 10000, 30000] as const

export function socketUrl(token: string, location: Location = window.location): string {
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws'
  return `${scheme}://${location.host}/api/v1/ws?access_token=${encodeURIComponent(token)}`
}

/** Whether a notification is worth a toast: not when its session is open in the chat. */
export function toastWorthy(message: { session_id?: string | null }, openSession: string | null): boolean {
  return !message.session_id || message.session_id !== openSession
}

export function useWebSocket(sessionIds: Ref<string[]>, openSession: () => string | null = () => null): void {
  const sessions = useSessions()
  const toasts = useToasts()
  let socket: WebSocket | null = null
  let attempt = 0
  let timer: ReturnType<typeof setTimeout> | undefined
  let closed = false
  let followed = new Set<string>()

  function send(message: WsClientMessage): void {
    if (socket?.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message))
  }

  function sync(): void {
    const wanted = new Set(sessionIds.value)
    const added = [...wanted].filter((id) => !followed.has(id))
    const gone = [...followed].filter((id) => !wanted.has(id))
    if (added.length) send({ type: 'subscribe', session_ids: added })
    if (gone.length) send({ type: 'unsubscribe', session_ids: gone })
    followed = wanted
  }

  function receive(message: WsServerMessage): void {
    switch (message.type) {
      case 'session_update':
        sessions.applyUpdate(message)
        return
      case 'notification':
        if (toastWorthy(message, openSession())) {
          toasts.push({ title: message.title, message: message.message, code: null, kind: 'info' })
        }
        return
      case 'subscribed':
      case 'unsubscribed':
      case 'pong':
      case 'error':
        return
      default: {
        const unknown: never = message
        return unknown
      }
    }
  }

  function connect(): void {
    const tokens = readTokens()
    if (closed || tokens === null) return
    const ws = new WebSocket(socketUrl(tokens.access))
    socket = ws
    ws.onopen = () => {
      attempt = 0
      followed = new Set()
      sync()
    }
    ws.onmessage = (m: MessageEvent<string>) => receive(JSON.parse(m.data) as WsServerMessage)
    ws.onclose = (e) => {
      if (closed || socket !== ws) return
      const delay = BACKOFF[Math.min(attempt, BACKOFF.length - 1)] ?? 30000
      attempt += 1
      // 1008: the token was refused (expired): renew it before trying again.
      const renew = e.code === 1008 ? refreshOnce() : Promise.resolve(true)
      void renew.then((ok) => {
        if (ok) timer = setTimeout(connect, delay)
      })
    }
  }

  watch(sessionIds, sync)
  connect()
  onBeforeUnmount(() => {
    closed = true
    clearTimeout(timer)
    socket?.close()
  })
}
