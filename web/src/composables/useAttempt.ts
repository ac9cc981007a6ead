// A screen's one failure at a time: run a job, and keep the API's error (detail and code)
// for the page to show, or clear it when the job succeeds.
import { ref, type Ref } from 'vue'
import { describe } from '@/api/errors'

export type Failure = { detail: string; errorCode: string }

export function useAttempt(): { failure: Ref<Failure | null>; attempt: (job: () => Promise<unknown>) => Promise<void> } {
  const failure = ref<Failure | null>(null)
  async function attempt(job: () => Promise<unknown>): Promise<void> {
    try {
      await job()
      failure.value = null
    } catch (e) {
      failure.value = describe(e)
    }
  }
  return { failure, attempt }
}
