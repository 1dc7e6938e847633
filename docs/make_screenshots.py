"""Regenerate the README screenshots (``make screenshots``), offscreen.

Drives the real window: opens the sample, selects a node, opens the Convert form, runs jobs.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "screenshots"
sys.path.insert(0, str(REPO))


def main() -> None:
    from PySide6.QtCore import QSettings

    from edgestudio.core.recipes import ConvertRecipe, DiagnosticRecipe
    from edgestudio.gui.app import create_application, release_window
    from edgestudio.gui.main_window import MainWindow
    from edgestudio.resources import SAMPLE_MODEL

    app = create_application()
    tmp = Path(tempfile.mkdtemp())
    window = MainWindow(QSettings(str(tmp / "settings.ini"), QSettings.Format.IniFormat))
    window.resize(1280, 820)
    window.show()

    def spin(seconds: float, until=lambda: False) -> None:  # type: ignore[no-untyped-def]
        end = time.monotonic() + seconds
        while time.monotonic() < end and not until():
            app.processEvents()
            time.sleep(0.02)

    window.open_model(SAMPLE_MODEL)
    spin(20, lambda: bool(window.documents()) and window.documents()[0].is_ready)
    doc = window.documents()[0]
    spin(0.5)
    window.grab().save(str(OUT / "summary.png"))

    doc.show_panel("graph")
    doc.graph_panel.select_by_name("/features/features.3/Conv")
    spin(3)  # shape inference arrives from its worker
    window.grab().save(str(OUT / "graph.png"))

    doc.show_panel("netron")
    spin(6)
    window.grab().save(str(OUT / "netron.png"))

    doc.show_panel("summary")
    dialog = window.show_convert_form()
    assert dialog is not None
    dialog.opset_box.setChecked(True)
    dialog.opset.setValue(11)
    dialog.set_new_dim("image", 0, "1")
    dialog.set_new_dim("logits", 0, "1")
    spin(0.3)
    dialog.grab().save(str(OUT / "convert.png"))
    dialog.reject()

    from edgestudio.core.inputs.data_source import DataSource
    from edgestudio.core.quant.quant_recipes import QuantRecipe
    from edgestudio.resources import SAMPLE_CALIBRATION, SAMPLE_EVALUATION

    # A run analysed on synthetic data first: a pipeline check, no verdict, neutral shades.
    check = window.start_quantization(
        doc, QuantRecipe(model=str(SAMPLE_MODEL), output=str(tmp / "digits_check.onnx"),
                         mode="qdq", calib=DataSource("npz", str(SAMPLE_CALIBRATION))),
        DataSource("synthetic", samples=8))
    spin(120, lambda: check.analysis is not None or check.error is not None)
    doc.show_panel("quantization")
    spin(0.5)
    window.grab().save(str(OUT / "quantization_synthetic.png"))
    run = window.start_quantization(
        doc, QuantRecipe(model=str(SAMPLE_MODEL), output=str(tmp / "digits_qdq.onnx"), mode="qdq",
                         per_channel=True, calib=DataSource("npz", str(SAMPLE_CALIBRATION))),
        DataSource("npz", str(SAMPLE_EVALUATION)))
    spin(120, lambda: run.analysis is not None or run.error is not None)
    doc.show_panel("quantization")
    doc.quant_panel.history.selectRow(1)
    doc.quant_panel.choose_bar(0)
    doc.quant_panel.weights.selectRow(0)
    spin(0.5)
    window.grab().save(str(OUT / "quantization.png"))
    doc.quant_panel.tabs.setCurrentIndex(1)
    spin(0.3)
    doc.quant_panel.grab().save(str(OUT / "weights.png"))
    doc.quant_panel.tabs.setCurrentIndex(0)
    doc.show_panel("graph")
    spin(0.5)
    window.grab().save(str(OUT / "graph_sqnr.png"))
    tune = window.show_tune()
    assert tune is not None
    tune.resize(1200, 760)
    tune.budget.setValue(5)
    tune.goal.setText("sqnr>=40")
    tune.start()
    spin(240, lambda: tune.tuner is not None and tune.tuner.finished)
    spin(0.5)
    tune.grab().save(str(OUT / "tune.png"))
    tune.close()
    compare = window.compare_run(doc, run)
    assert compare is not None
    compare.resize(1400, 820)
    spin(30, lambda: compare.is_ready)
    compare.step(1)
    spin(0.5)
    compare.grab().save(str(OUT / "compare.png"))
    compare.close()
    from edgestudio.core.perf.bench_recipes import BenchRecipe, ProfileRecipe

    perf = doc.perf_panel
    bench = window.workflow.submit(BenchRecipe(
        models=(str(SAMPLE_MODEL), str(tmp / "digits_qdq.onnx")), threads=(1, 2), runs=200))
    spin(120, lambda: bench.state.is_final)
    spin(0.5)
    doc.show_panel("performance")
    spin(0.5)
    window.grab().save(str(OUT / "performance.png"))
    profile = window.workflow.submit(ProfileRecipe(model=str(SAMPLE_MODEL), runs=20))
    spin(120, lambda: profile.state.is_final)
    spin(0.5)
    perf.grab().save(str(OUT / "profile.png"))
    perf.tabs.setCurrentIndex(2)
    spin(0.3)
    perf.grab().save(str(OUT / "edge_cloud.png"))
    doc.show_panel("summary")

    # The Inputs tab on a real text encoder when the corpus is cached (make realmodels), whose
    # token ids must stay below its embedding tables; else on the sample.
    minilm = REPO / ".realmodels" / "minilm_l6_v2.onnx"
    window.open_model(minilm if minilm.exists() else SAMPLE_MODEL)
    spin(60, lambda: window.current_document() is not None
         and window.current_document().is_ready)
    text_doc = window.current_document()
    text_doc.show_panel("inputs")  # the first look finds the inputs in a background job
    spin(60, lambda: text_doc.inputs_panel.state in ("verified", "failed"))
    window.jobs_dock.hide()
    spin(0.3)
    window.grab().save(str(OUT / "inputs.png"))
    if minilm.exists():  # a real transformer's graph: blocks closed, then one opened
        text_doc.show_panel("graph")
        graph = text_doc.graph_panel
        spin(30, lambda: graph.is_ready)
        graph.view.fit_all()
        spin(0.5)
        window.grab().save(str(OUT / "graph_groups.png"))
        layer = next(g for g in graph.ir.members if "layer.3" in graph.ir.names[g])
        graph.open_group(graph.ir.names[layer])
        spin(30, lambda: graph.is_ready)
        spin(0.5)
        window.grab().save(str(OUT / "graph_group_open.png"))
        # Auto-tune on the real encoder, where default static QDQ loses the output entirely.
        tune = window.show_tune()
        assert tune is not None
        tune.resize(1200, 760)
        tune.data.edit.setText("synthetic:16")
        tune.goal.setText("sqnr>=20")
        tune.budget.setValue(7)
        tune.start()
        spin(600, lambda: tune.tuner is not None and tune.tuner.finished)
        spin(0.5)
        tune.grab().save(str(OUT / "tune_minilm.png"))
        tune.close()
    window.tabs.setCurrentIndex(0)
    doc.show_panel("summary")

    jobs = [window.submit(ConvertRecipe(model=str(SAMPLE_MODEL), output=str(tmp / "d18.onnx"),
                                        opset=18)),
            window.submit(DiagnosticRecipe(action="crash")),
            window.submit(DiagnosticRecipe(action="hang"))]
    spin(30, lambda: jobs[0].state.is_final and jobs[1].state.is_final
         and jobs[2].state.value == "running")
    spin(0.5)
    window.jobs_panel.table.selectRow(0)
    spin(0.2)
    window.grab().save(str(OUT / "jobs.png"))

    window.jobs.shutdown()
    window.close()
    release_window(window)
    print(f"screenshots written to {OUT}")


if __name__ == "__main__":
    main()
