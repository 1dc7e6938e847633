"""Entry script of the frozen app: the same dispatch as ``python -m edgestudio``.

``EdgeStudio MODEL`` opens the window, ``EdgeStudio quantize …`` runs the CLI, and the app starts
its own job workers as ``EdgeStudio --job-worker …`` (see edgestudio.core.paths.CHILD_ENTRIES).
"""

import sys

from edgestudio.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
