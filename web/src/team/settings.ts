// A workspace's settings form: the API's SessionSettings as text fields, checked the way
// the API checks them, and the API's own 400 placed next to the field it names.
import type { Schemas } from '@/api/types'

export type SessionSettings = Schemas['SessionSettings']
export type Confirmation = NonNullable<SessionSettings['confirmation']>
export const CONFIRMATIONS: Confirmation[] = ['always', 'risky', 'never']
export const FIELDS = ['name', 'model', 'confirmation', 'allowed_tools', 'max_iterations', 'token_budget', 'thinking_budget'] as const
export type Field = (typeof FIELDS)[number]

export interface SettingsForm {
  name: string
  model: string
  confirmation: Confirmation
  /** Tool names, comma or newline separated; empty means every tool. */
  allowed_tools: string
  max_iterations: string
  token_budget: string
  thinking_budget: string
}

/** What is wrong with a field: an i18n key under `team.invalid` and its values. */
export interface Problem {
  key: string
  values?: Record<string, number>
}

const MIN_THINKING = 1024

export function toForm(name: string, s: SessionSettings | null | undefined): SettingsForm {
  const text = (n: number | null | undefined): string => (n == null ? '' : String(n))
  return {
    name,
    model: s?.model ?? '',
    confirmation: s?.confirmation ?? 'risky',
    allowed_tools: (s?.allowed_tools ?? []).join(', '),
    max_iterations: text(s?.max_iterations),
    token_budget: text(s?.token_budget),
    thinking_budget: text(s?.thinking_budget),
  }
}

function tools(text: string): string[] {
  return text
    .split(/[,\n]/)
    .map((t) => t.trim())
    .filter((t) => t !== '')
}

function whole(text: string): number | null {
  return /^\s*\d+\s*$/.test(text) ? Number(text) : Number.NaN
}

/** The problems the API would answer 400 for (a thinking budget over the server's turn limit
 * is the server's to say: the page does not know that limit). */
export function validate(form: SettingsForm): Partial<Record<Field, Problem>> {
  const found: Partial<Record<Field, Problem>> = {}
  const name = form.name.trim()
  if (name === '') found.name = { key: 'required' }
  else if (name.length > 200) found.name = { key: 'tooLong', values: { max: 200 } }
  if (form.model.trim().length > 200) found.model = { key: 'tooLong', values: { max: 200 } }
  if (tools(form.allowed_tools).some((t) => t.length > 100)) found.allowed_tools = { key: 'toolTooLong', values: { max: 100 } }
  const number = (field: 'max_iterations' | 'token_budget' | 'thinking_budget', min: number, max: number): void => {
    if (form[field].trim() === '') return
    const n = whole(form[field])
    if (n === null || Number.isNaN(n) || n < min || n > max) found[field] = { key: 'range', values: { min, max } }
  }
  number('max_iterations', 1, 500)
  number('token_budget', 1, Number.MAX_SAFE_INTEGER)
  number('thinking_budget', 0, 1_000_000)
  const thinking = whole(form.thinking_budget)
  if (found.thinking_budget === undefined && thinking !== null && thinking > 0 && thinking < MIN_THINKING) {
    found.thinking_budget = { key: 'thinking', values: { min: MIN_THINKING } }
  }
  return found
}

/** The PATCH body of a valid form: empty fields unset. */
export function toPatch(form: SettingsForm): { name: string; settings: SessionSettings } {
  const n = (text: string): number | null => (text.trim() === '' ? null : Number(text))
  const allowed = tools(form.allowed_tools)
  return {
    name: form.name.trim(),
    settings: {
      confirmation: form.confirmation,
      allowed_tools: allowed.length > 0 ? allowed : null,
      max_iterations: n(form.max_iterations),
      token_budget: n(form.token_budget),
      model: form.model.trim() === '' ? null : form.model.trim(),
      thinking_budget: n(form.thinking_budget),
    },
  }
}

/** The field an API 400 names: `` `settings.max_iterations`: ... `` or `thinking_budget must ...`. */
export function fieldOf(detail: string): Field | null {
  const quoted = /^`(?:settings\.)?([a-z_]+)/.exec(detail)?.[1]
  const bare = /^(?:settings\.)?([a-z_]+)\b/.exec(detail)?.[1]
  const named = quoted ?? bare
  return FIELDS.find((f) => f === named) ?? null
}
