import { describe, expect, it } from 'vitest'
import { socketUrl, toastWorthy } from './useWebSocket'

describe('the push channel', () => {
  it('toasts a notification unless its session is the one open in the chat', () => {
    expect(toastWorthy({ session_id: 's1' }, 's1')).toBe(false)
    expect(toastWorthy({ session_id: 's1' }, 's2')).toBe(true)
    expect(toastWorthy({ session_id: 's1' }, null)).toBe(true)
    expect(toastWorthy({ session_id: null }, 's1')).toBe(true) // a budget alert of no session
  })

  it('connects to the same host, wss under https, the token encoded', () => {
    const at = (href: string) => new URL(href) as unknown as Location
    expect(socketUrl('a b', at('http://localhost:8000/x'))).toBe('ws://localhost:8000/api/v1/ws?access_token=a%20b')
    expect(socketUrl('t', at('https://td.example/'))).toBe('wss://td.example/api/v1/ws?access_token=t')
  })
})
