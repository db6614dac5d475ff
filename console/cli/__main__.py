"""`python -m console.cli`: the same as the `console` command."""

from console.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
