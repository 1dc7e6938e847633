"""``edgestudio --self-test``: prove an installation works end to end, through the real window.

Opens the bundled digits sample, quantizes it (int8 QDQ, per channel) in a background job with
the sample's calibration data, analyses the result on the sample's evaluation set, prints the
headline numbers and exits 0 only if every step succeeded and the quantized model still agrees
with the float one on most digits. The packaged app's smoke test (tests/packaging) runs this,
so it exercises the frozen app's own job workers.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.quant.quant_recipes import QuantRecipe
from edgestudio.core.quant.quant_runs import QuantRun, RunState
from edgestudio.gui.main_window import MainWindow
from edgestudio.resources import SAMPLE_CALIBRATION, SAMPLE_EVALUATION, SAMPLE_MODEL

MIN_TOP1_AGREEMENT = 0.9  # int8 keeps ~99 % on the sample; far below means a broken install
POLL_MS = 100
# A run ends "analysed", or as its quantize or analysis job ended ("crashed", "analysis failed").


def _say(text: str) -> None:
    if sys.stderr is not None:  # None in a windowed Windows build
        print(f"self-test: {text}", file=sys.stderr, flush=True)


def start_self_test(window: MainWindow, out_dir: str | None = None) -> None:
    """Drive ``window`` through open → quantize → analyse; quit the app with the verdict."""
    folder = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="edgestudio-selftest-"))
    output = folder / "digits_cnn.int8.onnx"

    def finish(ok: bool, message: str) -> None:
        _say(("passed: " if ok else "FAILED: ") + message)
        if out_dir is None:
            shutil.rmtree(folder, ignore_errors=True)
        QApplication.exit(0 if ok else 1)

    def watch(run: QuantRun) -> None:
        if not run.state.is_final:
            QTimer.singleShot(POLL_MS, lambda: watch(run))
            return
        if run.state is not RunState.ANALYSED:
            finish(False, f"quantization {run.state.value}: {run.error}")
            return
        summary = run.summary()
        agreement = summary.top1_agreement
        _say(
            f"wrote {run.output} ({summary.size_bytes or 0:,} bytes); output SQNR "
            f"{summary.output_sqnr_db or 0:.1f} dB; float top-1 {summary.float_top1 or 0:.2%}, "
            f"int8 top-1 {summary.quant_top1 or 0:.2%}, agreement {agreement or 0:.2%}"
        )
        if agreement is None or agreement < MIN_TOP1_AGREEMENT:
            finish(False, f"top-1 agreement {agreement} is below {MIN_TOP1_AGREEMENT:.0%}")
        else:
            finish(True, "opened, quantized and analysed the sample in worker processes")

    def loaded() -> None:
        window.loads_settled.disconnect(loaded)
        doc = window.current_document()
        if doc is None or not doc.is_loaded:
            finish(False, f"could not open {SAMPLE_MODEL}")
            return
        _say(f"opened {SAMPLE_MODEL.name}; quantizing in a background job")
        recipe = QuantRecipe(
            model=str(SAMPLE_MODEL),
            mode="qdq",
            per_channel=True,
            calib=DataSource(kind="npz", path=str(SAMPLE_CALIBRATION)),
            output=str(output),
            overwrite=True,
        )
        run = window.quant.start_quantization(
            doc, recipe, DataSource(kind="npz", path=str(SAMPLE_EVALUATION))
        )
        watch(run)

    window.loads_settled.connect(loaded)
    window.open_model(SAMPLE_MODEL)
