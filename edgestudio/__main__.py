"""``python -m edgestudio`` and the ``edgestudio`` console script."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from edgestudio.core.paths import CHILD_ENTRIES, exit_child

# Subcommands that run their work in a job worker.
JOB_COMMANDS = frozenset(
    {
        "convert",
        "export",
        "quantize",
        "analyze",
        "bench",
        "profile",
        "providers",
        "tune",
        "diagnostic",
        "inputs",
        "sensitivity",
        "edit",
        "target",
    }
)
# Every subcommand (anything else opens the window); a test holds it to the parser's list.
COMMANDS = JOB_COMMANDS | {"inspect", "device", "diff", "report"}


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
            # Have the command's worker loading onnxruntime while we parse the arguments; its
            # job waits for that loading rather than redo it cold.
            from edgestudio.jobs.scheduler import default_launcher

            default_launcher().prepare(wait_for_load=True)
        from edgestudio.cli.main import main as cli_main

        code = int(cli_main(args))
    except KeyboardInterrupt:  # Ctrl+C before the command got going (the CLI says it after)
        print("edgestudio: cancelled", file=sys.stderr)
        return 130
    if argv is None and args[:1] and args[0] in COMMANDS:
        end_command(code)  # a subcommand, run as the process itself (not a test's call)
    return code


def end_command(code: int) -> None:
    """End a finished command's process now, without the interpreter's teardown.

    Freeing the modules a command loaded (numpy, onnx, rich, …) takes about 0.1 s that a shell
    script running commands in a loop waits for each time, and nothing needs it: the exit
    handlers still run (they stop the worker server and remove temporary folders), the output
    streams are flushed, every file the command wrote is closed. Only when a thread other than
    daemons is still alive is the ordinary exit taken, which waits for it.
    """
    import atexit
    import contextlib
    import os
    import threading

    if any(
        t.is_alive() and not t.daemon
        for t in threading.enumerate()
        if t is not threading.main_thread()
    ):
        return
    atexit._run_exitfuncs()  # what the interpreter would run first on its way out
    for stream in (sys.stdout, sys.stderr):
        # a reader that left (`| head`), a closed stream: nothing more to say to them
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
