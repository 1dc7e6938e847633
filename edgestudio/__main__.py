"""``python -m edgestudio`` and the ``edgestudio`` console script."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch to the job worker (frozen app), the headless CLI or the GUI."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--job-worker"]:
        # A frozen app has no separate Python to spawn, so it re-runs itself as a worker. This
        # must be decided before any Qt import.
        from edgestudio.jobs.worker import main as worker_main

        return int(worker_main(args[1:]))
    from edgestudio.cli.main import main as cli_main

    return int(cli_main(args))


if __name__ == "__main__":
    sys.exit(main())
