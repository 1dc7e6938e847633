"""``python -m edgestudio`` and the ``edgestudio`` console script."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from edgestudio.core.paths import CHILD_ENTRIES, exit_child

# Subcommands that run their work in a job worker.
JOB_COMMANDS = frozenset({"convert", "export", "quantize", "analyze", "bench", "tune", "selftest",
                          "inputs"})


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch to the job worker (frozen app), the headless CLI or the GUI."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] and args[0] in CHILD_ENTRIES:
        # A frozen app has no separate Python to spawn, so it re-runs itself as a job worker or
        # runtime probe. This must be decided before any Qt import.
        module = importlib.import_module(CHILD_ENTRIES[args[0]])
        exit_child(int(module.main(args[1:])))
    try:
        if args[:1] and args[0] in JOB_COMMANDS and not {"-h", "--help"} & set(args):
            # Start the command's worker now: it loads onnxruntime while we parse the arguments.
            from edgestudio.jobs import warm

            # A tune runs many jobs, the rest one; the job may wait for the loading under way.
            warm.keep_warm(refill=args[0] == "tune", wait_for_load=True)
        from edgestudio.cli.main import main as cli_main

        return int(cli_main(args))
    except KeyboardInterrupt:  # Ctrl+C before the command got going (the CLI says it after)
        print("edgestudio: cancelled", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
