// English and Simplified Chinese; the choice is remembered (stores/prefs.ts).
import { createI18n } from 'vue-i18n'
import en from './en'
import zh from './zh'

export const LOCALES = ['en', 'zh-CN'] as const
export type Locale = (typeof LOCALES)[number]

export function initialLocale(): Locale {
  const stored = localStorage.getItem('td.locale')
  if (stored === 'en' || stored === 'zh-CN') return stored
  return navigator.language.toLowerCase().startsWith('zh') ? 'zh-CN' : 'en'
}

export const i18n = createI18n({
  legacy: false,
  locale: initialLocale(),
  fallbackLocale: 'en',
  messages: { en, 'zh-CN': zh },
})
