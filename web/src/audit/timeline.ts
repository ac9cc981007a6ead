// The audit timeline's logic: one page of the event log at a time, and how an event's
// payload reads at a glance and in full.
import type { components } from '@/api/schema'

export type AuditEvent = components['schemas']['AuditEvent']
export type ReplayOut = components['schemas']['ReplayOut']

const PREVIEW = 120

/** The payload on one line, cut at `PREVIEW` characters. */
export function preview(payload: AuditEvent['payload']): string {
  const text = JSON.stringify(payload)
  return text.length > PREVIEW ? `${text.slice(0, PREVIEW - 1)}…` : text
}

/** The payload as indented JSON. */
export function pretty(payload: AuditEvent['payload']): string {
  return JSON.stringify(payload, null, 2)
}

/** A page appended to what is shown: in version order, none twice. */
export function merge(shown: AuditEvent[], page: AuditEvent[]): AuditEvent[] {
  const seen = new Set(shown.map((e) => e.version))
  return [...shown, ...page.filter((e) => !seen.has(e.version))].sort((a, b) => a.version - b.version)
}

/** The event types met so far, sorted, for the filter. */
export function typesOf(known: Iterable<string>, page: AuditEvent[]): string[] {
  return [...new Set([...known, ...page.map((e) => e.type)])].sort()
}
