"""Graph view: open-to-first-frame, zoomed-out frame time and memory at 1k/5k/20k/50k nodes,
with igraph's Sugiyama layout on the same graph as the in-process reference."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import onnx

from edgestudio.core.model.graph_ir import build_graph_ir
from edgestudio.core.model.layout import layered_layout
from edgestudio.core.model.model_io import load_model
from tests.graph_builders import conv_branches, transformer_like

SIZES = (1_000, 5_000, 20_000, 50_000)
TARGET_OPEN_S = {5_000: 0.5, 20_000: 1.0, 50_000: 2.0}


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def igraph_seconds(ir) -> float:  # type: ignore[no-untyped-def]
    import igraph

    g = igraph.Graph(
        n=ir.node_count,
        edges=list(zip(ir.edge_src.tolist(), ir.edge_dst.tolist(), strict=True)),
        directed=True,
    )
    start = time.perf_counter()
    g.layout_sugiyama()
    return time.perf_counter() - start


def open_once(path: Path, view) -> float:  # type: ignore[no-untyped-def]
    """File read + parse + IR + layout + scene build + one paint, as the app does it."""
    from PySide6.QtWidgets import QApplication

    start = time.perf_counter()
    model = load_model(path)
    ir = build_graph_ir(model.graph)
    layout = layered_layout(ir.node_count, ir.edge_src, ir.edge_dst)
    view.set_graph(ir, layout)
    view.viewport().repaint()
    QApplication.processEvents()
    return time.perf_counter() - start


def main() -> None:
    from PySide6.QtWidgets import QApplication

    from edgestudio.gui.model.graph_view import GraphView

    app = QApplication.instance() or QApplication([])
    tmp = Path(tempfile.mkdtemp())
    print(
        f"{'graph':<18}{'nodes':>7}{'open s':>9}{'target':>8}{'layout s':>10}{'igraph s':>10}"
        f"{'ratio':>7}{'far frame ms':>14}{'+MB':>7}"
    )
    for builder in (transformer_like, conv_branches):
        for size in SIZES:
            model = builder(size)
            path = tmp / f"{builder.__name__}_{size}.onnx"
            onnx.save(model, str(path))
            view = GraphView()
            view.resize(1280, 800)
            view.show()
            before = rss_mb()
            opens = [open_once(path, view) for _ in range(3)]
            extra = rss_mb() - before
            ir = build_graph_ir(model.graph)
            layouts = []
            for _ in range(3):
                start = time.perf_counter()
                layered_layout(ir.node_count, ir.edge_src, ir.edge_dst)
                layouts.append(time.perf_counter() - start)
            ref = igraph_seconds(ir)
            ours = statistics.median(layouts)
            # Zoomed all the way out: the whole graph in the window.
            view.fitInView(view.scene().itemsBoundingRect())
            frames = []
            for _ in range(10):
                start = time.perf_counter()
                view.viewport().repaint()
                frames.append(time.perf_counter() - start)
            target = TARGET_OPEN_S.get(size)
            print(
                f"{builder.__name__:<18}{len(model.graph.node):>7}{statistics.median(opens):>9.3f}"
                f"{(f'≤{target}' if target else '-'):>8}{ours:>10.3f}{ref:>10.3f}"
                f"{ref / ours:>6.1f}×{statistics.median(frames) * 1000:>14.1f}{extra:>7.0f}",
                flush=True,
            )
            view.close()
            view.deleteLater()
            app.processEvents()
    print(
        "targets: open ≤0.5 s at 5k, ≤1.0 s at 20k, ≤2.0 s at 50k; far frame ≤50 ms at 50k; "
        "≤300 MB extra at 50k. ratio = igraph Sugiyama time / our layout time."
    )
    groups_section(tmp)


def open_grouped(path: Path, view) -> tuple[float, object, object, set[str]]:  # type: ignore[no-untyped-def]
    """As :func:`open_once`, but the graph opens collapsed to its name-scope groups."""
    from PySide6.QtWidgets import QApplication

    from edgestudio.core.model.groups import GroupTree, grouped_ir

    start = time.perf_counter()
    model = load_model(path)
    flat = build_graph_ir(model.graph)
    tree = GroupTree.build(flat)
    opened = tree.first_view()
    ir = grouped_ir(flat, tree, opened)
    view.set_graph(ir, layered_layout(ir.node_count, ir.edge_src, ir.edge_dst))
    view.viewport().repaint()
    QApplication.processEvents()
    return time.perf_counter() - start, flat, tree, opened


def expand_once(view, flat, tree, opened: set[str], path: str) -> float:  # type: ignore[no-untyped-def]
    """Open one group: the graph as drawn, laid out again, drawn."""
    from PySide6.QtWidgets import QApplication

    from edgestudio.core.model.groups import grouped_ir

    start = time.perf_counter()
    ir = grouped_ir(flat, tree, opened | {path})
    view.set_graph(ir, layered_layout(ir.node_count, ir.edge_src, ir.edge_dst))
    view.viewport().repaint()
    QApplication.processEvents()
    return time.perf_counter() - start


def groups_section(tmp: Path) -> None:
    """Flat vs collapsed to groups, side by side on the same graphs (medians of 3)."""
    from PySide6.QtWidgets import QApplication

    from edgestudio.gui.model.graph_view import GraphView

    print(
        f"\n{'graph':<18}{'nodes':>7}{'flat open s':>13}{'grouped open s':>16}{'boxes':>7}"
        f"{'expand one ms':>15}"
    )
    for size in (20_000, 50_000):
        path = tmp / f"transformer_like_{size}.onnx"
        view = GraphView()
        view.resize(1280, 800)
        view.show()
        flat_s = statistics.median(open_once(path, view) for _ in range(3))
        runs = [open_grouped(path, view) for _ in range(3)]
        grouped_s = statistics.median(r[0] for r in runs)
        _, flat, tree, opened = runs[-1]
        boxes = len(tree.units(opened))  # type: ignore[attr-defined]
        first = tree.groups[""].children[0]  # type: ignore[attr-defined]
        expand = statistics.median(expand_once(view, flat, tree, opened, first) for _ in range(3))
        print(
            f"{'transformer_like':<18}{size:>7}{flat_s:>13.3f}{grouped_s:>16.3f}{boxes:>7}"
            f"{expand * 1000:>15.1f}",
            flush=True,
        )
        view.close()
        view.deleteLater()
        QApplication.instance().processEvents()  # type: ignore[union-attr]
    print(
        "targets: 20k nodes open collapsed to their blocks ≤0.5 s to first frame; opening one "
        "group ≤100 ms."
    )


if __name__ == "__main__":
    main()
