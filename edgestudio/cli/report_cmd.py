"""``edgestudio report WORKSPACE -o report.html``: the window's report, from a saved workspace."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from edgestudio.cli.job_ui import add_output_args
from edgestudio.core.workspace import workspace
from edgestudio.core.workspace.report import report_from_document, write_report


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``report``."""
    p = subparsers.add_parser(
        "report",
        help="render the HTML/JSON report of a saved workspace",
        description="Render the report of a workspace saved from the window (File › Save "
        "workspace): the model, every job and its check, the quantization runs with their "
        "per-layer analysis and verdict, latency and profile — the same file as File › Export "
        "report. The JSON twin is written beside the HTML.",
    )
    p.add_argument("workspace", help="a workspace file (*.edgestudio.json)")
    add_output_args(
        p,
        "the HTML file to write (default: the workspace's name with _report.html)",
        required=False,
        overwrite=False,
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Read the workspace, say if its model changed, write the report."""
    restored = workspace.load(args.workspace)
    warning = restored.warning()
    if warning:
        print(f"edgestudio: warning: {warning}", file=sys.stderr)
    name = Path(args.workspace).name.removesuffix(workspace.SUFFIX).removesuffix(".json")
    output = (
        Path(args.output) if args.output else Path(args.workspace).with_name(f"{name}_report.html")
    )
    html_path, json_path = write_report(output, report_from_document(restored.document))
    print(f"Report written to {html_path} (and {json_path.name})")
    return 0
