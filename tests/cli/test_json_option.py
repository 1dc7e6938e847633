"""One ``--json`` convention: ``--json PATH`` writes the file, ``--json -`` prints only JSON on
standard output (the table goes to standard error), a bare ``--json`` still works for one
release and says it is deprecated; every command takes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgestudio.cli.json_option import DEPRECATED_BARE
from edgestudio.cli.main import build_parser
from tests import models
from tests.cli.run import run_cli


def test_every_command_takes_json_path_and_dash() -> None:
    parser = build_parser()
    commands = {
        "inspect": ["m.onnx"],
        "diff": ["a.onnx", "b.onnx"],
        "convert": ["m.onnx", "-o", "o.onnx"],
        "quantize": ["m.onnx", "-o", "q.onnx"],
        "analyze": ["a.onnx", "b.onnx", "--data", "d.npz"],
        "bench": ["m.onnx"],
        "profile": ["m.onnx"],
        "providers": [],
        "inputs": ["m.onnx"],
        "tune": ["m.onnx", "--data", "d.npz"],
        "diagnostic": ["succeed"],
    }
    for name, rest in commands.items():
        for value in ("-", "r.json"):
            args = parser.parse_args([name, *rest, "--json", value])
            assert args.json == value, name


@pytest.mark.parametrize("command", ["inspect", "bench"])
def test_json_dash_prints_only_json_on_stdout(tmp_path: Path, command: str) -> None:
    src = models.save(models.conv_relu_gemm(), tmp_path / "m.onnx")
    extra = ["--runs", "3", "--warmup", "1"] if command == "bench" else []
    proc = run_cli(command, str(src), *extra, "--json", "-")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)  # nothing else on stdout
    assert data
    assert ("median" in proc.stderr) if command == "bench" else ("Inputs" in proc.stderr)


def test_json_path_writes_the_file_and_keeps_the_table(tmp_path: Path) -> None:
    src = models.save(models.conv_relu_gemm(), tmp_path / "m.onnx")
    report = tmp_path / "summary.json"
    proc = run_cli("inspect", str(src), "--json", str(report))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(report.read_text())["inputs"]
    assert "Inputs" in proc.stdout


def test_a_bare_json_still_prints_json_and_says_it_is_deprecated(tmp_path: Path) -> None:
    src = models.save(models.conv_relu_gemm(), tmp_path / "m.onnx")
    proc = run_cli("inspect", str(src), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["inputs"]
    assert DEPRECATED_BARE in proc.stderr


def test_a_json_path_that_cannot_be_written_is_said_in_words(tmp_path: Path) -> None:
    from edgestudio.cli.json_option import write_json
    from edgestudio.core.errors import EdgeStudioError

    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(EdgeStudioError, match="is not a folder"):
        write_json(str(blocker / "x.json"), {"a": 1})
    with pytest.raises(EdgeStudioError, match="does not exist"):
        write_json(str(tmp_path / "missing" / "x.json"), {"a": 1})
    src = models.save(models.conv_relu_gemm(), tmp_path / "m.onnx")
    proc = run_cli("inspect", str(src), "--cost", "--json", str(blocker / "x.json"))
    assert proc.returncode == 2 and "unexpected" not in proc.stderr
    assert "cannot be written" in proc.stderr


def test_the_subcommand_table_names_what_each_module_declares() -> None:
    """Subcommand modules are imported only when they run: the table that says which module
    declares which subcommand must be exactly what the modules declare."""
    import argparse

    from edgestudio.cli.main import SUBCOMMANDS, subcommand_modules

    declared: dict[str, str] = {}
    for module in subcommand_modules():
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        module.add_parser(sub)
        declared |= {name: module.__name__.rsplit(".", 1)[1] for name in sub.choices}
    assert declared == SUBCOMMANDS


def test_opening_the_window_imports_no_subcommand() -> None:
    """The GUI path (no subcommand) parses its flags without importing any subcommand's
    module, nor what they import (analysis, rich's console)."""
    import subprocess
    import sys

    code = (
        "import sys; from edgestudio.cli.main import build_gui_parser, screenshot_plan, "
        "window_launch; screenshot_plan(window_launch(build_gui_parser().parse_args(['m.onnx']))); "
        "print(sorted(m for m in sys.modules if m.endswith('_cmd') or m == 'rich.console'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
