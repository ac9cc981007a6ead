"""The command line's commands beyond `serve` (`adapters.cli` parses and dispatches):
replay, usage, rebuild, teams, audit, erase, the demo, memory upkeep."""
