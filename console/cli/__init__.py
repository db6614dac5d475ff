"""The `console` command: serve, worker, migrate, demo, and managing teams, users, tokens and servers."""
