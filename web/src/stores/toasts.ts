// Toasts: API errors (detail and code), notifications from the push channel.
import { defineStore } from 'pinia'
import { ref } from 'vue'
import { describe } from '@/api/errors'

export interface Toast {
  id: number
  title: string
  message: string
  code: string | null
  kind: 'error' | 'info'
}

export const useToasts = defineStore('toasts', () => {
  const items = ref<Toast[]>([])
  let next = 0

  function dismiss(id: number): void {
    items.value = items.value.filter((t) => t.id !== id)
  }

  function push(toast: Omit<Toast, 'id'>, ttlMs = 8000): void {
    const id = ++next
    items.value.push({ ...toast, id })
    if (ttlMs > 0) setTimeout(() => dismiss(id), ttlMs)
  }

  function fail(title: string, error: unknown): void {
    const { detail, errorCode } = describe(error)
    push({ title, message: detail, code: errorCode, kind: 'error' }, 12000)
  }

  return { items, push, fail, dismiss }
})
