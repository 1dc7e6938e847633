"""Export report: a self-contained HTML (and JSON) with every section, parsed back."""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from edgestudio.core.convert.convert_recipes import ConvertRecipe
from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.perf.bench_recipes import BenchRecipe
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.workspace.report import SECTIONS
from edgestudio.gui.main_window import MainWindow
from edgestudio.resources import SAMPLE_CALIBRATION, SAMPLE_EVALUATION, SAMPLE_MODEL
from tests.gui.conftest import open_and_wait


class Sections(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.images: list[str] = []
        self.text = ""
        self.chunks: list[str] = []  # each cell's or paragraph's text apart

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "section" and values.get("id"):
            self.ids.append(str(values["id"]))
        if tag == "svg":
            self.images.append("svg")

    def handle_data(self, data: str) -> None:
        self.text += data
        self.chunks.append(data)


@pytest.mark.e2e
def test_report_has_every_section(qtbot, window: MainWindow, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    model = tmp_path / SAMPLE_MODEL.name
    shutil.copy(SAMPLE_MODEL, model)
    open_and_wait(qtbot, window, model)
    doc = window.current_document()
    assert doc is not None
    convert = window.submit(
        ConvertRecipe(model=str(model), output=str(tmp_path / "m18.onnx"), opset=18)
    )
    run = window.quant.start_quantization(
        doc,
        QuantRecipe(
            model=str(model),
            output=str(tmp_path / "q.onnx"),
            calib=DataSource("npz", str(SAMPLE_CALIBRATION)),
        ),
        DataSource("npz", str(SAMPLE_EVALUATION), samples=40),
    )
    bench = window.workflow.submit(BenchRecipe(models=(str(model),), runs=20, warmup=2))
    qtbot.waitUntil(
        lambda: convert.state.is_final and bench.state.is_final and run.analysis is not None,
        timeout=180_000,
    )
    qtbot.waitUntil(lambda: bool(doc.perf_panel.results), timeout=10_000)
    out = window.workspaces.export_report(str(tmp_path / "report.html"))
    assert out is not None
    parser = Sections()
    parser.feed(Path(out).read_text())
    assert parser.ids == list(SECTIONS)
    assert len(parser.images) == 2  # per-layer SQNR and latency, inline SVG
    assert "equivalent" in parser.text  # the conversion's check
    assert "edgestudio convert" in parser.text and "edgestudio quantize" in parser.text
    assert "Run #1" in parser.text
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["summary"]["nodes"] == 11
    assert data["quantization"][0]["layers"] and data["latency"][0]["median_ms"] > 0
    # every value formatted for a person: no Python reprs, long floats or snake_case keys
    import re

    text = parser.text
    assert "{'" not in text and "['" not in text
    assert not [c for c in parser.chunks if re.search(r"\d\.\d{7,}", c)]
    assert not re.findall(r"\b(output_sqnr_db|float_top1|size_bytes|worst_layer)\b", text)
    assert "Output SQNR (dB)" in text and "Conv ×3" in text and "188.0 KiB" in text
    assert "image (input)" in text and "[batch, 1, 8, 8]" in text


def test_values_are_formatted_for_a_person() -> None:
    from edgestudio.core.workspace.report import for_a_person

    assert for_a_person(35.60582606984567) == "35.6"
    assert for_a_person(47530) == "47,530"
    assert for_a_person({"ai.onnx": 17, "ai.onnx.ml": 3}) == "ai.onnx 17, ai.onnx.ml 3"
    assert for_a_person(None) == "—" and for_a_person(True) == "yes"
    assert for_a_person(["a", 1.23456]) == "a, 1.23"


def test_a_tunes_split_and_skipped_recipes_are_in_the_report() -> None:
    from edgestudio.core.workspace.report import ReportData, render_html

    tune = {
        "goal": "text_agreement>=0.99",
        "objective": "latency",
        "winner": 1,
        "met": True,
        "data": "calibrated on calib.npz, judged on eval.npz",
        "integer_only": True,
        "skipped": ["dynamic, per-channel: skipped, dynamic failed twice for the same cause (x)"],
        "candidates": [
            {
                "number": 1,
                "why": "per-channel weights",
                "goal_value": 1.0,
                "met": True,
                "latency_ms": 4.2,
                "quant_bytes": 3_000_000,
                "command": "edgestudio quantize m.onnx --per-channel",
            }
        ],
    }
    parsed = Sections()
    parsed.feed(render_html(ReportData("m", {}, tunes=[tune])))
    assert "calibrated on calib.npz, judged on eval.npz" in parsed.chunks
    assert "Integer only: no layer was left in float." in parsed.chunks
    assert any(c.startswith("Not tried: dynamic, per-channel: skipped") for c in parsed.chunks)
