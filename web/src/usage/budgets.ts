// A budget as a progress bar: how much of each limit this month's spend took, and the
// level its thresholds put it at (below all, past one, at or past 100%).
import type { Schemas } from '@/api/types'

export type BudgetOut = Schemas['BudgetOut']
export type AlertOut = Schemas['AlertOut']
export type Level = 'ok' | 'warn' | 'over'

export interface Bar {
  unit: 'usd' | 'tokens'
  spent: string
  limit: string
  /** Percent of the limit spent (may pass 100). */
  percent: number
  level: Level
}

export function level(percent: number, thresholds: number[]): Level {
  if (percent >= 100) return 'over'
  return thresholds.some((t) => t < 100 && percent >= t) ? 'warn' : 'ok'
}

function bar(unit: Bar['unit'], spent: number, limit: number, shown: [string, string], thresholds: number[]): Bar {
  const percent = limit > 0 ? (spent / limit) * 100 : 100
  return { unit, spent: shown[0], limit: shown[1], percent, level: level(percent, thresholds) }
}

/** One bar per limit the budget has (USD, tokens or both). */
export function barsOf(b: BudgetOut): Bar[] {
  const out: Bar[] = []
  if (b.monthly_usd != null) {
    out.push(bar('usd', Number(b.spent_usd), Number(b.monthly_usd), [b.spent_usd, b.monthly_usd], b.thresholds))
  }
  if (b.monthly_tokens != null) {
    const shown: [string, string] = [String(b.spent_tokens), String(b.monthly_tokens)]
    out.push(bar('tokens', b.spent_tokens, b.monthly_tokens, shown, b.thresholds))
  }
  return out
}

/** The PUT body from the form's text; `null` names the field that is not a number. */
export function budgetBody(usd: string, tokens: string, thresholds: string):
  | { body: { monthly_usd?: string; monthly_tokens?: number; thresholds: number[] } }
  | { field: 'usd' | 'tokens' | 'thresholds' } {
  const u = usd.trim()
  const k = tokens.trim()
  if (u !== '' && !/^\d+(\.\d+)?$/.test(u)) return { field: 'usd' }
  if (k !== '' && !/^\d+$/.test(k)) return { field: 'tokens' }
  const parts = thresholds.split(',').map((p) => p.trim()).filter((p) => p !== '')
  if (parts.some((p) => !/^\d+$/.test(p))) return { field: 'thresholds' }
  return {
    body: {
      ...(u !== '' ? { monthly_usd: u } : {}),
      ...(k !== '' ? { monthly_tokens: Number(k) } : {}),
      thresholds: parts.map(Number),
    },
  }
}
