// The signed-in user's tokens, remembered in localStorage.

const ACCESS = 'td.access_token'
const REFRESH = 'td.refresh_token'

export interface Tokens {
  access: string
  refresh: string
}

export function readTokens(): Tokens | null {
  const access = localStorage.getItem(ACCESS)
  const refresh = localStorage.getItem(REFRESH)
  return access && refresh ? { access, refresh } : null
}

export function saveTokens(tokens: Tokens): void {
  localStorage.setItem(ACCESS, tokens.access)
  localStorage.setItem(REFRESH, tokens.refresh)
}

export function clearTokens(): void {
  localStorage.removeItem(ACCESS)
  localStorage.removeItem(REFRESH)
}
