"""Printing goes to the streams of the moment, never to ones captured when a module loaded."""

import ast
import io
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "edgestudio"


def _bound_stream_defaults() -> list[str]:
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for default in [*node.args.defaults, *node.args.kw_defaults]:
                if (
                    isinstance(default, ast.Attribute)
                    and isinstance(default.value, ast.Name)
                    and default.value.id == "sys"
                    and default.attr in {"stdout", "stderr"}
                ):
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    return found


def test_no_function_binds_a_standard_stream_as_a_default() -> None:
    """A default of ``sys.stdout`` is the stream at import time: once the CLI imports lazily,
    that can be a stream already closed (a finished test's capture, a finished redirect)."""
    assert _bound_stream_defaults() == []


def test_print_report_writes_to_the_stdout_of_the_moment(monkeypatch: pytest.MonkeyPatch) -> None:
    from edgestudio.cli.job_ui import print_report
    from edgestudio.core.job_api.report import JobReport

    first = io.StringIO()
    monkeypatch.setattr(sys, "stdout", first)
    print_report(JobReport(kind="convert", output="a.onnx"))
    first.close()  # as capsys does at the end of a test
    second = io.StringIO()
    monkeypatch.setattr(sys, "stdout", second)
    print_report(JobReport(kind="convert", output="b.onnx"))
    assert "output: b.onnx" in second.getvalue()


def test_print_report_says_what_the_job_did_on_the_way(capsys: pytest.CaptureFixture[str]) -> None:
    from edgestudio.cli.job_ui import print_report
    from edgestudio.core.job_api.report import JobReport
    from edgestudio.core.quant.quant_results import Quantization

    done = Quantization(float_bytes=8, quant_bytes=2, notes=["Precision: int8."])
    print_report(JobReport(kind="quantize", result=done))
    assert "note: Precision: int8." in capsys.readouterr().out
