// A workspace screen's workspace (from its `id` param), made the sidebar's current one once
// the list of workspaces is known.
import { computed, watch, type ComputedRef } from 'vue'
import type { WorkspaceOut } from '@/api/types'
import { useSessions } from '@/stores/sessions'

export function useWorkspaceRoute(
  id: () => string,
  attempt: (job: () => Promise<unknown>) => Promise<void>,
): ComputedRef<WorkspaceOut | null> {
  const sessions = useSessions()
  watch(
    () => sessions.workspaces.some((w) => w.id === id()) && sessions.workspaceId !== id(),
    (differs) => {
      if (differs) void attempt(() => sessions.choose(id()))
    },
    { immediate: true },
  )
  return computed(() => sessions.workspaces.find((w) => w.id === id()) ?? null)
}
