// The signed-in user: tokens in localStorage, the profile from GET /auth/me.
import { defineStore } from 'pinia'
import { computed, ref } from 'vue'
import { api, data } from '@/api/client'
import { clearTokens, readTokens, saveTokens } from '@/api/tokens'
import type { MeOut, TokenOut } from '@/api/types'

export const useAuth = defineStore('auth', () => {
  const me = ref<MeOut | null>(null)
  const signedIn = ref(readTokens() !== null)
  const name = computed(() => me.value?.name ?? me.value?.email ?? '')

  function keep(tokens: TokenOut): void {
    saveTokens({ access: tokens.access_token, refresh: tokens.refresh_token })
    signedIn.value = true
  }

  async function signIn(email: string, password: string): Promise<void> {
    keep(await data(api.POST('/api/v1/auth/login', { body: { email, password } })))
    await loadMe()
  }

  async function register(email: string, password: string, fullName: string): Promise<void> {
    await data(api.POST('/api/v1/auth/register', { body: { email, password, name: fullName } }))
    await signIn(email, password)
  }

  async function loadMe(): Promise<void> {
    me.value = await data(api.GET('/api/v1/auth/me'))
  }

  /** Forgets the tokens here (after telling the server, when it can be told). */
  async function signOut(): Promise<void> {
    if (readTokens() !== null) await api.POST('/api/v1/auth/logout').catch(() => undefined)
    forget()
  }

  function forget(): void {
    clearTokens()
    signedIn.value = false
    me.value = null
  }

  return { me, name, signedIn, signIn, register, loadMe, signOut, forget }
})
