// Sign-in and register submit the same way: busy, the API's error inline, then `?next=`.
import { ref } from 'vue'
import { useRoute, useRouter } from 'vue-router'
import { describe } from '@/api/errors'
import { nextPath } from '@/router'

export function useAuthSubmit(action: () => Promise<void>) {
  const route = useRoute()
  const router = useRouter()
  const busy = ref(false)
  const error = ref<ReturnType<typeof describe> | null>(null)

  async function submit(): Promise<void> {
    busy.value = true
    error.value = null
    try {
      await action()
      await router.replace(nextPath(route.query.next))
    } catch (e) {
      error.value = describe(e)
    } finally {
      busy.value = false
    }
  }

  return { busy, error, submit, query: route.query }
}
