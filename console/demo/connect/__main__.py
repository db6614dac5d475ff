"""`python -m console.demo.connect`: run the demo server (see the package's docstring)."""

import sys

from console.demo.connect.server import main

if __name__ == "__main__":
    sys.exit(main())
