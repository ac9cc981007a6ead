// The app's screens beyond the chat, as the sidebar lists them: one entry per screen.
// A workspace screen takes the chosen workspace's id as its `id` param and follows the
// workspace switcher; a personal screen takes no params. Alt+<key> opens a screen.
import { ChartColumn, Brain, FolderOpen, KeyRound, Settings, Users, type LucideIcon } from 'lucide-vue-next'

export interface NavEntry {
  /** The route's name in router/index.ts. */
  route: string
  /** An i18n key for the link's text. */
  label: string
  icon: LucideIcon
  scope: 'workspace' | 'personal'
  /** The letter of its Alt shortcut (KeyboardEvent.code `Key<letter>`). */
  key: string
}

export const NAV: NavEntry[] = [
  { route: 'files', label: 'files.link', icon: FolderOpen, scope: 'workspace', key: 'F' },
  { route: 'memory', label: 'memory.link', icon: Brain, scope: 'personal', key: 'M' },
  { route: 'team', label: 'team.link', icon: Users, scope: 'workspace', key: 'T' },
  { route: 'workspace-settings', label: 'team.settings.link', icon: Settings, scope: 'workspace', key: 'S' },
  { route: 'api-keys', label: 'team.keys.link', icon: KeyRound, scope: 'personal', key: 'K' },
  { route: 'usage', label: 'usage.link', icon: ChartColumn, scope: 'personal', key: 'U' },
]
