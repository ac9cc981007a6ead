// Theme (light / dark / system, class strategy) and language, both remembered.
import { defineStore } from 'pinia'
import { ref, watch } from 'vue'
import { i18n, type Locale, LOCALES, initialLocale } from '@/i18n'

export type Theme = 'system' | 'light' | 'dark'
const THEME = 'td.theme'
const LOCALE = 'td.locale'

function storedTheme(): Theme {
  const t = localStorage.getItem(THEME)
  return t === 'light' || t === 'dark' ? t : 'system'
}

export const usePrefs = defineStore('prefs', () => {
  const theme = ref<Theme>(storedTheme())
  const locale = ref<Locale>(initialLocale())
  const media = window.matchMedia('(prefers-color-scheme: dark)')

  function paint(): void {
    const dark = theme.value === 'dark' || (theme.value === 'system' && media.matches)
    document.documentElement.classList.toggle('dark', dark)
  }

  media.addEventListener('change', paint)
  watch(
    theme,
    (t) => {
      if (t === 'system') localStorage.removeItem(THEME)
      else localStorage.setItem(THEME, t)
      paint()
    },
    { immediate: true },
  )
  watch(
    locale,
    (l) => {
      localStorage.setItem(LOCALE, l)
      i18n.global.locale.value = l
      document.documentElement.lang = l
    },
    { immediate: true },
  )

  return { theme, locale, locales: LOCALES }
})

export { LOCALE as LOCALE_KEY }
