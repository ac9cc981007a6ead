// Team roles, highest first, and what each may do on the team and settings screens (the
// API's table in domain/roles.py: it refuses anyway; the page hides what it would refuse).
export const ROLES = ['owner', 'admin', 'member', 'viewer'] as const
export type Role = (typeof ROLES)[number]

function rank(role: string | null | undefined): number {
  const at = ROLES.indexOf(role as Role)
  return at === -1 ? ROLES.length : at
}

/** At least `least` (owner > admin > member > viewer); an unknown role is below all. */
export function atLeast(role: string | null | undefined, least: Role): boolean {
  return rank(role) <= rank(least)
}

/** The roles `role` may give or take away: admins all but owner, owners all. */
export function grantable(role: string | null | undefined): Role[] {
  if (atLeast(role, 'owner')) return [...ROLES]
  if (atLeast(role, 'admin')) return ROLES.filter((r) => r !== 'owner')
  return []
}
