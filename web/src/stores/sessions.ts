// Workspaces (the current one remembered) and the current workspace's sessions, kept
// live by `session_update` messages of the push channel.
import { defineStore } from 'pinia'
import { computed, ref } from 'vue'
import { api, data } from '@/api/client'
import { newKey } from '@/api/streams'
import type { SessionOut, WorkspaceOut } from '@/api/types'
import type { SessionUpdate } from '@/api/ws-messages'

const WORKSPACE = 'td.workspace'
export const STATUSES = ['created', 'running', 'waiting', 'completed', 'error', 'stopped'] as const
export type SessionStatus = (typeof STATUSES)[number]

export const useSessions = defineStore('sessions', () => {
  const workspaces = ref<WorkspaceOut[]>([])
  const workspaceId = ref<string | null>(localStorage.getItem(WORKSPACE))
  const items = ref<SessionOut[]>([])
  const nextCursor = ref<string | null>(null)
  const search = ref('')
  const status = ref<SessionStatus | ''>('')
  const loading = ref(false)
  let loads = 0

  const workspace = computed(() => workspaces.value.find((w) => w.id === workspaceId.value) ?? null)
  /** Viewers read; they get no chat input and no approve button. */
  const canWrite = computed(() => workspace.value !== null && workspace.value.role !== 'viewer')
  const shown = computed(() => {
    const q = search.value.trim().toLowerCase()
    return items.value.filter((s) => q === '' || s.title.toLowerCase().includes(q))
  })

  async function loadWorkspaces(): Promise<void> {
    const page = await data(api.GET('/api/v1/workspaces'))
    workspaces.value = page.items
    const known = page.items.some((w) => w.id === workspaceId.value)
    await choose(known ? workspaceId.value : (page.items[0]?.id ?? null))
  }

  async function choose(id: string | null): Promise<void> {
    workspaceId.value = id
    if (id === null) localStorage.removeItem(WORKSPACE)
    else localStorage.setItem(WORKSPACE, id)
    await load()
  }

  async function load(more = false): Promise<void> {
    if (workspaceId.value === null) {
      items.value = []
      return
    }
    loading.value = true
    try {
      const query = {
        workspace_id: workspaceId.value,
        limit: 50,
        ...(status.value ? { status: status.value } : {}),
        ...(more && nextCursor.value ? { cursor: nextCursor.value } : {}),
      }
      const asked = ++loads
      const page = await data(api.GET('/api/v1/sessions', { params: { query } }))
      if (asked !== loads) return // a later load (another workspace or filter) wins
      items.value = more ? [...items.value, ...page.items] : page.items
      nextCursor.value = page.next_cursor
    } finally {
      loading.value = false
    }
  }

  /** A new session (the server names it "New session" when no title is given). */
  async function create(title?: string): Promise<SessionOut> {
    if (workspaceId.value === null) throw new Error('no workspace')
    const made = await data(
      api.POST('/api/v1/sessions', {
        body: { workspace_id: workspaceId.value, ...(title ? { title } : {}) },
        params: { header: { 'Idempotency-Key': newKey() } },
      }),
    )
    items.value = [made, ...items.value.filter((s) => s.id !== made.id)]
    return made
  }

  /** A pushed change of one session: its status, title and version. */
  function applyUpdate(update: SessionUpdate): void {
    const known = items.value.find((s) => s.id === update.session_id)
    if (known === undefined || known.version > update.version) return
    known.status = update.status
    known.title = update.title
    known.version = update.version
  }

  return {
    workspaces,
    workspaceId,
    workspace,
    canWrite,
    items,
    shown,
    nextCursor,
    search,
    status,
    loading,
    loadWorkspaces,
    choose,
    load,
    create,
    applyUpdate,
  }
})
