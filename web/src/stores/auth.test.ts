import { createPinia, setActivePinia } from 'pinia'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { api, whenSignedOut } from '@/api/client'
import { readTokens, saveTokens } from '@/api/tokens'
import { useAuth } from './auth'

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } })
const tokens = (n: number) => ({ access_token: `a${n}`, refresh_token: `r${n}`, token_type: 'bearer', expires_in: 900 })
const me = { id: 'u', email: 'e@x.org', name: 'E', organizations: [], teams: [], workspaces: [] }

type Handler = (request: Request) => Response
function serve(handler: Handler): Request[] {
  const seen: Request[] = []
  vi.stubGlobal('fetch', async (input: Request) => {
    seen.push(input.clone())
    return handler(input)
  })
  return seen
}

beforeEach(() => {
  setActivePinia(createPinia())
  localStorage.clear()
})
afterEach(() => vi.unstubAllGlobals())

describe('auth', () => {
  it('signs in, keeps the tokens and loads the profile with the bearer token', async () => {
    const seen = serve((r) => (r.url.endsWith('/auth/login') ? json(200, tokens(1)) : json(200, me)))
    const auth = useAuth()
    await auth.signIn('e@x.org', 'pw')
    expect(readTokens()).toEqual({ access: 'a1', refresh: 'r1' })
    expect(auth.name).toBe('E')
    expect(seen[1]?.headers.get('Authorization')).toBe('Bearer a1')
  })

  it('shows the API error of a failed sign-in', async () => {
    serve(() => json(401, { detail: 'wrong email or password', error_code: 'INVALID_CREDENTIALS', timestamp: '' }))
    await expect(useAuth().signIn('e@x.org', 'bad')).rejects.toMatchObject({ errorCode: 'INVALID_CREDENTIALS' })
  })

  it('refreshes once on a 401 and retries with the new token', async () => {
    saveTokens({ access: 'old', refresh: 'r0' })
    const seen = serve((r) => {
      if (r.url.endsWith('/auth/refresh')) return json(200, tokens(2))
      return r.headers.get('Authorization') === 'Bearer a2' ? json(200, me) : json(401, { detail: 'expired', error_code: 'TOKEN_EXPIRED', timestamp: '' })
    })
    const { data } = await api.GET('/api/v1/auth/me')
    expect(data?.email).toBe('e@x.org')
    expect(seen.map((r) => new URL(r.url).pathname)).toEqual(['/api/v1/auth/me', '/api/v1/auth/refresh', '/api/v1/auth/me'])
  })

  it('signs out and says so when the refresh is refused too', async () => {
    saveTokens({ access: 'old', refresh: 'spent' })
    const out = vi.fn()
    whenSignedOut(out)
    serve(() => json(401, { detail: 'expired', error_code: 'TOKEN_EXPIRED', timestamp: '' }))
    const { error } = await api.GET('/api/v1/auth/me')
    expect(error).toMatchObject({ error_code: 'TOKEN_EXPIRED' })
    expect(readTokens()).toBeNull()
    expect(out).toHaveBeenCalledOnce()
  })
})
