// A usage report (GET /usage?group_by=day,<key>) as the chart draws it: every UTC day of
// the range, each stacked by the key's values; and the same rows as CSV.
import type { Schemas } from '@/api/types'
import { saveObjectUrl } from '@/lib/save'

export type UsageItem = Schemas['UsageItem']
export type UsageReport = Schemas['UsageReport']
export type Figures = Schemas['Figures']
/** What the bars stack by: the API's group key, and the field of an item holding it. */
export const STACKS = { model: 'model', workspace: 'workspace_id', user: 'user_id' } as const
export type Stack = keyof typeof STACKS
export type Metric = 'cost' | 'tokens'

export const TOKEN_KINDS = ['input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens'] as const
const NUMBERS = [...TOKEN_KINDS, 'cost_usd', 'calls', 'unpriced_calls'] as const

export interface Day {
  day: string
  /** Series key -> value; a key the day has nothing of is absent. */
  values: Map<string, number>
  total: number
}

export interface Chart {
  days: Day[]
  /** Series keys, the largest overall first (the bottom of each stack). */
  keys: string[]
  max: number
}

export function tokensOf(f: Figures): number {
  return TOKEN_KINDS.reduce((sum, k) => sum + f[k], 0)
}

export function valueOf(f: Figures, metric: Metric): number {
  return metric === 'cost' ? Number(f.cost_usd) : tokensOf(f)
}

export function keyOf(item: UsageItem, stack: Stack): string {
  return item[STACKS[stack]] ?? ''
}

/** The UTC days `from`..`to` inclusive, as YYYY-MM-DD. */
export function daysBetween(from: string, to: string): string[] {
  const out: string[] = []
  const end = Date.parse(`${to}T00:00:00Z`)
  for (let at = Date.parse(`${from}T00:00:00Z`); at <= end && out.length < 1000; at += 86_400_000) {
    out.push(new Date(at).toISOString().slice(0, 10))
  }
  return out
}

export function chartOf(report: UsageReport, stack: Stack, metric: Metric): Chart {
  const days = new Map(daysBetween(report.from, report.to).map((d) => [d, new Map<string, number>()]))
  const overall = new Map<string, number>()
  for (const item of report.items) {
    const values = item.day ? days.get(item.day) : undefined
    if (!values) continue
    const key = keyOf(item, stack)
    const v = valueOf(item, metric)
    values.set(key, (values.get(key) ?? 0) + v)
    overall.set(key, (overall.get(key) ?? 0) + v)
  }
  const keys = [...overall.keys()].sort((a, b) => (overall.get(b) ?? 0) - (overall.get(a) ?? 0) || a.localeCompare(b))
  const rows = [...days].map(([day, values]) => ({ day, values, total: [...values.values()].reduce((s, v) => s + v, 0) }))
  return { days: rows, keys, max: Math.max(0, ...rows.map((r) => r.total)) }
}

/** A round top for the y axis and its ticks (0 included): 1, 2 or 5 times a power of ten. */
export function ticks(max: number, count = 4): number[] {
  if (max <= 0) return [0, 1]
  const raw = max / count
  const power = 10 ** Math.floor(Math.log10(raw))
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power
  const top = Math.ceil(max / step - 1e-9) * step
  return Array.from({ length: Math.round(top / step) + 1 }, (_, i) => Number((i * step).toPrecision(12)))
}

function cell(value: string | number): string {
  const text = String(value)
  return /[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

/** The rows shown, as the API's CSV has them: the keys, then the figures (decimals as given). */
export function toCsv(items: UsageItem[], stack: Stack): string {
  const field = STACKS[stack]
  const lines = [['day', field, ...NUMBERS].join(',')]
  for (const item of items) lines.push([item.day ?? '', item[field] ?? '', ...NUMBERS.map((n) => item[n])].map(cell).join(','))
  return `${lines.join('\n')}\n`
}

/** Saves text as a UTF-8 file through a Blob (nothing leaves the page). */
export function download(text: string, name: string, type = 'text/csv;charset=utf-8'): void {
  saveObjectUrl(URL.createObjectURL(new Blob([text], { type })), name)
}

/** Presets of the range: this month to date, or the last n days (today included), in UTC. */
export function range(preset: 'month' | 7 | 30, today = new Date()): { from: string; to: string } {
  const to = today.toISOString().slice(0, 10)
  if (preset === 'month') return { from: `${to.slice(0, 8)}01`, to }
  return { from: new Date(today.getTime() - (preset - 1) * 86_400_000).toISOString().slice(0, 10), to }
}
