import { describe, expect, it } from 'vitest'
import { merge, preview, pretty, typesOf, type AuditEvent } from './timeline'

const event = (version: number, type = 'MessageAdded', payload: Record<string, unknown> = {}): AuditEvent => ({
  version,
  type,
  timestamp: '2026-01-01T00:00:00Z',
  payload,
})

describe('audit timeline', () => {
  it('previews a short payload whole and cuts a long one', () => {
    expect(preview({ a: 1 })).toBe('{"a":1}')
    const long = preview({ text: 'x'.repeat(500) })
    expect(long).toHaveLength(120)
    expect(long.endsWith('…')).toBe(true)
  })

  it('pretty-prints the payload', () => {
    expect(pretty({ a: { b: 2 } })).toBe('{\n  "a": {\n    "b": 2\n  }\n}')
  })

  it('appends a page in version order without repeating an event', () => {
    const shown = [event(1), event(2)]
    expect(merge(shown, [event(2), event(4), event(3)]).map((e) => e.version)).toEqual([1, 2, 3, 4])
  })

  it('collects the types met, sorted and once each', () => {
    expect(typesOf(['RunStarted'], [event(1, 'MessageAdded'), event(2, 'RunStarted')])).toEqual(['MessageAdded', 'RunStarted'])
  })
})
