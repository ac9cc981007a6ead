import { createPinia, setActivePinia } from 'pinia'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { saveTokens } from '@/api/tokens'
import { useSessions } from './sessions'

const json = (body: unknown) => new Response(JSON.stringify(body), { headers: { 'Content-Type': 'application/json' } })
const session = (id: string, status = 'created', version = 1) => ({
  id, workspace_id: 'w1', title: id, status, task_type: 'general', created_at: '', updated_at: '', version,
})
const workspace = (id: string, role: string) => ({ id, name: id, organization_id: 'o', team_id: 't', role, created_at: '' })

beforeEach(() => {
  setActivePinia(createPinia())
  localStorage.clear()
  saveTokens({ access: 'a', refresh: 'r' })
})
afterEach(() => vi.unstubAllGlobals())

function serve(): string[] {
  const urls: string[] = []
  vi.stubGlobal('fetch', async (r: Request) => {
    urls.push(r.url)
    if (new URL(r.url).pathname === '/api/v1/workspaces') return json({ items: [workspace('w1', 'viewer'), workspace('w2', 'member')] })
    return json({ items: [session('s1'), session('s2')], total: 2, limit: 50, next_cursor: null })
  })
  return urls
}

describe('sessions', () => {
  it('lists the remembered workspace’s sessions, filtered by status', async () => {
    const urls = serve()
    localStorage.setItem('td.workspace', 'w2')
    const store = useSessions()
    store.status = 'running'
    await store.loadWorkspaces()
    const query = new URL(urls.at(-1) ?? '').searchParams
    expect(query.get('workspace_id')).toBe('w2')
    expect(query.get('status')).toBe('running')
    expect(store.canWrite).toBe(true)
  })

  it('chooses the first workspace when none is remembered; a viewer cannot write', async () => {
    serve()
    const store = useSessions()
    await store.loadWorkspaces()
    expect(store.workspaceId).toBe('w1')
    expect(store.canWrite).toBe(false)
    expect(localStorage.getItem('td.workspace')).toBe('w1')
  })

  it('applies pushed updates, never an older version over a newer one', async () => {
    serve()
    const store = useSessions()
    await store.loadWorkspaces()
    const update = { type: 'session_update', session_id: 's1', status: 'running', version: 5, title: 'Heat pumps', data: { status: 'running', version: 5, title: 'Heat pumps' } } as const
    store.applyUpdate(update)
    store.applyUpdate({ ...update, status: 'created', version: 4 })
    expect(store.items[0]).toMatchObject({ status: 'running', title: 'Heat pumps', version: 5 })
  })

  it('searches by title', async () => {
    serve()
    const store = useSessions()
    await store.loadWorkspaces()
    store.search = 'S2'
    expect(store.shown.map((s) => s.id)).toEqual(['s2'])
  })
})

describe('sessions, loaded twice at once', () => {
  it('keeps the later workspace’s list when the earlier answer comes last', async () => {
    let release: () => void = () => {}
    const slow = new Promise<void>((r) => (release = r))
    vi.stubGlobal('fetch', async (r: Request) => {
      const ws = new URL(r.url).searchParams.get('workspace_id')
      if (ws === 'w1') await slow
      return json({ items: [session(`from-${ws}`)], total: 1, limit: 50, next_cursor: null })
    })
    const store = useSessions()
    const first = store.choose('w1')
    await store.choose('w2')
    release()
    await first
    expect(store.items.map((s) => s.id)).toEqual(['from-w2'])
  })
})
