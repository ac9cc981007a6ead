"""The arguments of `tokendance teams ...` (what they do: `adapters/commands/team_commands.py`)."""

from __future__ import annotations

import argparse
from uuid import UUID

ROLES = ("owner", "admin", "member", "viewer")


def add_team_arguments(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    teams = commands.add_parser("teams", help="teams and their members, for an operator")
    actions = teams.add_subparsers(required=True, metavar="ACTION", dest="action")
    listing = actions.add_parser("list", help="the teams a user has a role in")
    listing.add_argument("--user", required=True, help="the user's email")
    create = actions.add_parser("create", help="a team in a user's organization")
    create.add_argument("name")
    create.add_argument("--owner", required=True, help="the email of its first owner")
    members = actions.add_parser("members", help="everyone with a role in a team")
    members.add_argument("team_id", type=UUID)
    add = actions.add_parser("add", help="add a registered user, or invite an email")
    add.add_argument("team_id", type=UUID)
    add.add_argument("email")
    add.add_argument("--role", default="member", choices=ROLES)
    set_role = actions.add_parser("set-role", help="change a member's role")
    set_role.add_argument("team_id", type=UUID)
    set_role.add_argument("email")
    set_role.add_argument("role", choices=ROLES)
    remove = actions.add_parser("remove", help="remove a member from a team")
    remove.add_argument("team_id", type=UUID)
    remove.add_argument("email")
    teams.set_defaults(command="teams")
