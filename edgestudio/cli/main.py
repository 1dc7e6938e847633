"""The ``edgestudio`` command: subcommands run headless, anything else opens the GUI."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from edgestudio import __version__
from edgestudio.cli import json_option
from edgestudio.cli.window_launch import WindowLaunch, add_window_args, window_launch
from edgestudio.core.errors import EdgeStudioError

# Each subcommand and the module that declares it, in the order --help lists them. A module is
# imported only when its subcommand runs (or --help lists them all): importing every one cost
# 0.4 s of each start, the window's included.
SUBCOMMANDS: dict[str, str] = {
    "inspect": "inspect_cmd",
    "inputs": "inputs_cmd",
    "convert": "convert_cmd",
    "edit": "edit_cmd",
    "export": "export_cmd",
    "quantize": "quantize_cmd",
    "analyze": "analyze_cmd",
    "sensitivity": "sensitivity_cmd",
    "bench": "bench_cmd",
    "profile": "bench_cmd",
    "providers": "bench_cmd",
    "device": "device_cmd",
    "target": "target_cmd",
    "tune": "tune_cmd",
    "diff": "diff_cmd",
    "report": "report_cmd",
    "diagnostic": "diagnostic_cmd",
}


def subcommand_modules(names: Sequence[str] | None = None) -> list[ModuleType]:
    """The modules declaring the subcommands ``names`` (all of them by default), imported."""
    wanted = dict.fromkeys(SUBCOMMANDS[n] for n in (names or SUBCOMMANDS))
    return [importlib.import_module(f"edgestudio.cli.{module}") for module in wanted]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Return the parser for the headless subcommands (``only``: just that one's, which
    imports nothing else)."""
    parser = argparse.ArgumentParser(
        prog="edgestudio",
        description="See, convert, quantize and benchmark ONNX models. "
        "Run without a subcommand (or with model files) to open the window.",
    )
    parser.add_argument("--version", action="version", version=f"edgestudio {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in subcommand_modules([only] if only else None):
        module.add_parser(sub)
    return parser


def build_gui_parser() -> argparse.ArgumentParser:
    """Return the parser for opening the window: ``edgestudio [MODEL ...] [--screenshot PNG]``."""
    parser = argparse.ArgumentParser(
        prog="edgestudio",
        description="Open the EdgeStudio window. Subcommands: "
        + ", ".join(sorted(_subcommand_names()))
        + " (see `edgestudio COMMAND --help`).",
    )
    parser.add_argument("--version", action="version", version=f"edgestudio {__version__}")
    add_window_args(parser)
    return parser


def _subcommand_names() -> list[str]:
    return list(SUBCOMMANDS)


def _silence_stdout() -> None:
    """After a closed pipe, point stdout at /dev/null so the interpreter's final flush does
    not print a second traceback."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] in _subcommand_names():
        args = build_parser(only=args_list[0]).parse_args(args_list)
        json_option.resolve(args)
        try:
            with json_option.json_to_stdout(args):
                return int(args.func(args))
        except EdgeStudioError as exc:
            print(f"edgestudio: error: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("edgestudio: cancelled", file=sys.stderr)
            return 130
        except BrokenPipeError:  # `edgestudio inspect big.onnx | head`: the reader left
            _silence_stdout()
            return 0
        except Exception as exc:  # never a traceback: say what happened in one line
            print(f"edgestudio: error: unexpected {type(exc).__name__}: {exc}", file=sys.stderr)
            return 3
    if args_list and args_list[0] in ("-h", "--help"):
        build_parser().print_help()
        return 0
    launch = window_launch(build_gui_parser().parse_args(args_list))
    shot = screenshot_plan(launch)
    if isinstance(shot, str):
        print(f"edgestudio: error: {shot}", file=sys.stderr)
        return 2
    from edgestudio.gui.app import run_app  # Qt is imported only on this path

    return run_app(
        [*launch.models, *launch.workspace],
        screenshot=shot,
        new_window=launch.new_window,
        self_test=launch.self_test,
    )


def screenshot_plan(launch: WindowLaunch) -> Any:
    """The screenshot the window's flags ask for (None without ``--screenshot``), or why they
    cannot be followed (a message): a misspelled panel or form lists the right names."""
    from edgestudio.gui.panel_names import DIALOGS, panel_names  # Qt-free
    from edgestudio.gui.screenshot_plan import ScreenshotPlan

    if launch.panel.lower() not in panel_names():
        return f"no panel '{launch.panel}'; panels: {', '.join(panel_names())}"
    if launch.dialog and launch.dialog not in DIALOGS:
        return f"no form '{launch.dialog}'; forms: {', '.join(DIALOGS)}"
    if not launch.screenshot:
        used = [
            flag
            for flag, value in (
                ("--select", launch.select),
                ("--open-group", launch.open_group),
                ("--compare", launch.compare),
                ("--dialog", launch.dialog),
            )
            if value
        ]
        return f"{', '.join(used)} only go with --screenshot" if used else None
    if not (launch.models or launch.workspace) and launch.dialog != "preferences":
        return "--screenshot needs a model or a workspace to show"
    return ScreenshotPlan(
        path=launch.screenshot,
        panel=launch.panel.lower(),
        select=launch.select,
        open_group=launch.open_group,
        compare=launch.compare,
        dialog=launch.dialog,
        size=launch.size,
    )
