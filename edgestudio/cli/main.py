"""The ``edgestudio`` command: subcommands run headless, anything else opens the GUI."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from edgestudio import __version__
from edgestudio.cli import (
    analyze_cmd,
    bench_cmd,
    convert_cmd,
    device_cmd,
    diff_cmd,
    export_cmd,
    inputs_cmd,
    inspect_cmd,
    json_option,
    quantize_cmd,
    report_cmd,
    selftest_cmd,
    tune_cmd,
)
from edgestudio.core.errors import EdgeStudioError

SUBCOMMAND_MODULES = (inspect_cmd, inputs_cmd, convert_cmd, export_cmd, quantize_cmd,
                      analyze_cmd, bench_cmd, device_cmd, tune_cmd, diff_cmd, report_cmd,
                      selftest_cmd)


def build_parser() -> argparse.ArgumentParser:
    """Return the parser for the headless subcommands."""
    parser = argparse.ArgumentParser(
        prog="edgestudio",
        description="See, convert, quantize and benchmark ONNX models. "
        "Run without a subcommand (or with model files) to open the window.",
    )
    parser.add_argument("--version", action="version", version=f"edgestudio {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMAND_MODULES:
        module.add_parser(sub)
    return parser


def build_gui_parser() -> argparse.ArgumentParser:
    """Return the parser for opening the window: ``edgestudio [MODEL ...] [--screenshot PNG]``."""
    parser = argparse.ArgumentParser(
        prog="edgestudio",
        description="Open the EdgeStudio window. Subcommands: "
        + ", ".join(sorted(_subcommand_names())) + " (see `edgestudio COMMAND --help`).",
    )
    parser.add_argument("--version", action="version", version=f"edgestudio {__version__}")
    parser.add_argument("models", nargs="*", metavar="MODEL",
                        help="model files or workspaces (*.edgestudio.json) to open")
    parser.add_argument(
        "--screenshot", metavar="PNG",
        help="save a PNG of the window once the models are loaded and drawn, then exit",
    )
    parser.add_argument(
        "--panel", default="summary", help="panel to show before the screenshot (default: summary)"
    )
    parser.add_argument(
        "--self-test", action="store_true",
        help="check this installation: open the bundled sample, quantize and analyse it in "
        "background jobs, print the numbers, exit 0 if all worked",
    )
    parser.add_argument(
        "--new-window", action="store_true",
        help="open a separate window even if EdgeStudio is already running (by default the "
        "files go to the running window)",
    )
    return parser


def _subcommand_names() -> list[str]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    return []  # pragma: no cover


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
        args = build_parser().parse_args(args_list)
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
    gui_args = build_gui_parser().parse_args(args_list)
    from edgestudio.gui.app import run_app  # Qt is imported only on this path

    return run_app(gui_args.models, screenshot=gui_args.screenshot, panel=gui_args.panel,
                   new_window=gui_args.new_window, self_test=gui_args.self_test)
