// Routes, each view its own chunk; signed-out users go to sign-in and come back after.
import { createRouter, createWebHistory } from 'vue-router'
import { whenSignedOut } from '@/api/client'
import { readTokens } from '@/api/tokens'

export const router = createRouter({
  history: createWebHistory(),
  routes: [
    { path: '/signin', name: 'signin', component: () => import('@/views/SignInView.vue'), meta: { public: true } },
    { path: '/register', name: 'register', component: () => import('@/views/RegisterView.vue'), meta: { public: true } },
    {
      path: '/',
      component: () => import('@/views/AppLayout.vue'),
      children: [
        { path: '', name: 'home', component: () => import('@/views/HomeView.vue') },
        { path: 'sessions/:id', name: 'chat', component: () => import('@/views/ChatView.vue'), props: true },
        { path: 'sessions/:id/audit', name: 'audit', component: () => import('@/views/AuditView.vue'), props: true },
        { path: 'workspaces/:id/files', name: 'files', component: () => import('@/views/FilesView.vue'), props: true },
        { path: 'memory', name: 'memory', component: () => import('@/views/MemoryView.vue') },
        { path: 'workspaces/:id/team', name: 'team', component: () => import('@/views/TeamView.vue'), props: true },
        { path: 'workspaces/:id/settings', name: 'workspace-settings', component: () => import('@/views/WorkspaceSettingsView.vue'), props: true },
        { path: 'api-keys', name: 'api-keys', component: () => import('@/views/ApiKeysView.vue') },
        { path: 'usage', name: 'usage', component: () => import('@/views/UsageView.vue') },
      ],
    },
    { path: '/invitations/:token', name: 'invitation', component: () => import('@/views/InvitationView.vue'), props: true, meta: { public: true } },
    { path: '/:path(.*)*', name: 'not-found', component: () => import('@/views/NotFoundView.vue'), meta: { public: true } },
  ],
})

router.beforeEach((to) => {
  if (to.meta.public || readTokens() !== null) return true
  return { name: 'signin', query: { next: to.fullPath } }
})

whenSignedOut(() => {
  const here = router.currentRoute.value
  if (here.meta.public) return
  void router.push({ name: 'signin', query: { next: here.fullPath } })
})

/** Where to go after sign-in: `?next=` when it is a path of this app. */
export function nextPath(next: unknown): string {
  return typeof next === 'string' && next.startsWith('/') && !next.startsWith('//') ? next : '/'
}
