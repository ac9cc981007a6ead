// Names for the member series: the members of the caller's teams (whose usage a team's
// admins see), by user id.
import { api, data } from '@/api/client'

export async function memberNames(teamIds: string[]): Promise<Map<string, string>> {
  const pages = await Promise.all(
    teamIds.map((team_id) => data(api.GET('/api/v1/teams/{team_id}/members', { params: { path: { team_id } } }))),
  )
  return new Map(pages.flatMap((p) => p.items.map((m) => [m.user_id, m.name || m.email] as const)))
}
