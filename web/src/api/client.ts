// The REST client: openapi-fetch over the generated `paths`, with the bearer token, one
// refresh on a 401, and a way out to sign-in when the refresh fails too.
import createClient from 'openapi-fetch'
import { errorFrom, errorOf } from './errors'
import type { paths } from './schema'
import { clearTokens, readTokens, saveTokens } from './tokens'
import type { TokenOut } from './types'

/** An absolute URL of this origin (Request needs one outside a page, as in unit tests). */
export function apiUrl(path: string): string {
  return new URL(path, globalThis.location.origin).toString()
}

let onSignedOut: () => void = () => {}
let refreshing: Promise<boolean> | null = null

/** Called when the session cannot be renewed (the router sends the user to sign-in). */
export function whenSignedOut(handler: () => void): void {
  onSignedOut = handler
}

async function refresh(): Promise<boolean> {
  const tokens = readTokens()
  if (tokens === null) return false
  const answer = await fetch(
    new Request(apiUrl('/api/v1/auth/refresh'), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ refresh_token: tokens.refresh }),
    }),
  )
  if (!answer.ok) return false
  const body = (await answer.json()) as TokenOut
  saveTokens({ access: body.access_token, refresh: body.refresh_token })
  return true
}

/** Renews the tokens once for every caller that met a 401 at the same time. */
export function refreshOnce(): Promise<boolean> {
  refreshing ??= refresh()
    .catch(() => false)
    .finally(() => {
      refreshing = null
    })
  return refreshing
}

function withToken(request: Request): Request {
  const tokens = readTokens()
  if (tokens !== null) request.headers.set('Authorization', `Bearer ${tokens.access}`)
  return request
}

/** fetch with the token; a 401 refreshes once and retries, or signs out. */
export async function authedFetch(request: Request): Promise<Response> {
  const retry = request.clone()
  const first = await fetch(withToken(request))
  if (first.status !== 401 || readTokens() === null) return first
  if (await refreshOnce()) {
    const second = await fetch(withToken(retry))
    if (second.status !== 401) return second
  }
  clearTokens()
  onSignedOut()
  return first
}

export const api = createClient<paths>({ baseUrl: globalThis.location.origin, fetch: authedFetch })

/** The data of an openapi-fetch answer, or the API's error thrown. */
export async function data<T>(
  answer: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  const { data: body, error, response } = await answer
  if (error !== undefined || !response.ok) throw errorFrom(response.status, error)
  return body as T
}

export { errorOf }
