"""The `console` command: serve, worker, migrate, demo, and managing teams, users, tokens, servers,
policies and the audit log.

`main.py` builds the parser from one module per command group (`serve`, `teams`, `tokens`, `servers`,
`policies`, `audit`, `demo`); each adds its commands with `add_*_commands` and acts through the helpers
in `common.py`, which imports none of them.
"""
