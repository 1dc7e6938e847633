"""A self-contained HTML report (and its JSON twin) of everything done to one model.

Rendered from a :class:`~edgestudio.core.workspace.document.ModelDocument` — the window's open
model or a workspace read by ``edgestudio report`` — so both give the same report. Charts are
inline SVG (:mod:`edgestudio.core.workspace.charts`): the file opens anywhere, offline.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgestudio.core.formatting import human_bytes
from edgestudio.core.model.cost_recipe import ModelCost
from edgestudio.core.paths import write_atomically
from edgestudio.core.perf.perf_results import Latency, Profile
from edgestudio.core.quant.quant_runs import COMPARE_ROWS, QuantRun, RunSummary
from edgestudio.core.quant.verdicts import verdict_html
from edgestudio.core.serialise import to_json
from edgestudio.core.workspace.charts import latency_chart, sqnr_chart
from edgestudio.core.workspace.document import JobRecord, ModelDocument

SECTIONS = ("summary", "cost", "jobs", "quantization", "latency", "profile", "commands")


@dataclass
class ReportData:
    """What goes into a report. Every list may be empty; the section then says so."""

    title: str
    summary: dict[str, Any]  # the model summary's JSON form
    jobs: list[JobRecord] = field(default_factory=list)
    quant_runs: list[QuantRun] = field(default_factory=list)
    latency: Latency = field(default_factory=Latency)
    profile: Profile | None = None
    charts: dict[str, str] = field(default_factory=dict)  # name -> SVG
    tunes: list[dict[str, Any]] = field(default_factory=list)  # auto-tune summaries
    cost: ModelCost | None = None  # every node's MACs and memory, when counted


def _current_run(document: ModelDocument) -> QuantRun | None:
    """The run whose chart the report shows: the one on the graph, else the last analysed."""
    shown = document.run(document.overlay.run or 0)
    if shown is not None and shown.analysis:
        return shown
    return next((r for r in reversed(document.runs) if r.analysis), None)


def report_from_document(document: ModelDocument) -> ReportData:
    """Everything done to ``document``'s model, ready to render."""
    charts: dict[str, str] = {}
    current = _current_run(document)
    sqnr = (
        sqnr_chart(current.analysis.layers, current.analysis.representative)
        if current and current.analysis
        else None
    )
    if sqnr:
        charts["sqnr"] = sqnr
    latency = latency_chart(document.latency.rows)
    if latency:
        charts["latency"] = latency
    return ReportData(
        title=f"EdgeStudio report: {document.path.name}",
        summary=document.summary,
        jobs=list(document.jobs),
        quant_runs=list(document.runs),
        latency=document.latency,
        profile=document.profile,
        charts=charts,
        tunes=list(document.tunes),
        cost=document.cost,
    )


def for_a_person(value: Any) -> str:
    """A value as the GUI would show it: numbers to 3 significant figures (integers with
    thousands separators), yes/no, lists joined, mappings as ``key value`` pairs; never a
    Python repr."""
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return "—" if value != value else f"{value:.3g}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {for_a_person(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(for_a_person(v) for v in value)
    return str(value)


def _e(value: Any) -> str:
    return html.escape(for_a_person(value))


def _shape(dims: Any) -> str:
    """``['batch', 3, 224, 224]`` -> ``[batch, 3, 224, 224]``; no shape -> ``unknown``."""
    if dims is None:
        return "unknown"
    return "[" + ", ".join(str(d) for d in dims) + "]"


def _op_counts(counts: Mapping[str, int]) -> str:
    """Operator types by how often they occur: ``Conv ×3, Relu ×4`` (most first)."""
    return ", ".join(f"{op} ×{n}" for op, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def _run_rows(summary: RunSummary) -> list[list[str]]:
    """A run's headline figures, labelled and formatted as the Quantization tab's comparison."""
    rows = []
    for key, label, spec in COMPARE_ROWS:
        value = getattr(summary, key)
        if key == "size_bytes":
            text = (
                "—"
                if value is None
                else human_bytes(value)
                + (f" (float {human_bytes(summary.float_bytes)})" if summary.float_bytes else "")
            )
            rows.append(["Size", text])
            continue
        rows.append([label, "—" if value is None else spec.format(value)])
    return rows


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _chart(data: ReportData, name: str) -> str:
    svg = data.charts.get(name)
    return f'<figure class="chart">{svg}</figure>' if svg else ""


def _fmt(value: Any, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _cost_section(cost: ModelCost | None) -> str:
    """Totals and the ten nodes with the most MACs."""
    if cost is None:
        return (
            '<section id="cost"><h2>Cost</h2><p>Not counted (the Summary\'s Count MACs '
            "and memory, or edgestudio inspect MODEL --cost).</p></section>"
        )
    t = cost.total
    totals = [
        ["Counted at", cost.inputs_text()],
        ["MACs", f"{t.macs:,}"],
        ["FLOPs", f"{t.flops:,}"],
        ["Parameters", f"{t.params:,} ({human_bytes(t.param_bytes)})"],
        ["Peak activation memory", human_bytes(t.peak_activation_bytes)],
    ]
    top = sorted(cost.nodes, key=lambda n: -n.macs)[:10]
    return (
        '<section id="cost"><h2>Cost</h2>'
        + _table(["", ""], totals)
        + "<h3>The nodes with the most MACs</h3>"
        + _table(
            ["Node", "Op", "MACs", "Share", "Parameters", "Output"],
            [
                [
                    n.node,
                    n.op,
                    f"{n.macs:,}",
                    f"{n.macs / max(1, t.macs):.1%}",
                    f"{n.params:,}",
                    human_bytes(n.output_bytes),
                ]
                for n in top
            ],
        )
        + "</section>"
    )


def render_html(data: ReportData) -> str:
    """The report as one HTML document with a section per topic (ids from :data:`SECTIONS`)."""
    s = data.summary
    io_rows = [
        [f"{t['name']} (input)", t["dtype"], _shape(t["shape"])] for t in s.get("inputs", [])
    ]
    io_rows += [
        [f"{t['name']} (output)", t["dtype"], _shape(t["shape"])] for t in s.get("outputs", [])
    ]
    size = s.get("file_size")
    facts: list[list[Any]] = [
        ["File", s.get("path")],
        ["Size", human_bytes(size) if size is not None else None],
        ["IR version", s.get("ir_version")],
        ["Opsets", s.get("opset_imports")],
        ["Producer", f"{s.get('producer_name', '')} {s.get('producer_version', '')}".strip()],
        ["Nodes", s.get("nodes")],
        ["Parameters", s.get("parameters")],
        ["Operator types", _op_counts(s.get("op_types") or {})],
        ["Problems", "; ".join(s.get("problems", [])) or "none"],
    ]
    parts = [
        f"<h1>{_e(data.title)}</h1>",
        '<section id="summary"><h2>Model</h2>',
        _table(["", ""], facts),
        "<h3>Inputs and outputs</h3>",
        _table(["Name", "Type", "Shape"], io_rows),
        "</section>",
        _cost_section(data.cost),
    ]

    rows = []
    for j in data.jobs:
        check = j.check or {}
        rows.append([j.title, j.state, check.get("verdict", "—"), j.output, j.error])
    parts += [
        '<section id="jobs"><h2>Conversions and other jobs</h2>',
        _table(["Job", "State", "Check", "Output", "Error"], rows)
        if rows
        else "<p>No jobs were run.</p>",
    ]
    for j in data.jobs:
        if not j.check:
            continue
        check = j.check
        case_rows = [
            [
                c["label"],
                o["name"],
                _fmt(o["max_abs_err"], ".3g"),
                _fmt(o["max_rel_err"], ".3g"),
                "yes" if o["allclose"] else "NO",
            ]
            for c in check["cases"]
            for o in c["outputs"]
        ]
        parts += [
            f"<h3>Check of {_e(j.title)} (atol={check['atol']:g}, "
            f"rtol={check['rtol']:g}): {_e(check['verdict'])}</h3>",
            _table(["Inputs", "Output", "Max abs", "Max rel", "allclose"], case_rows),
        ]
    parts.append("</section>")

    parts.append('<section id="quantization"><h2>Quantization</h2>')
    if not data.quant_runs:
        parts.append("<p>No quantization runs.</p>")
    for run in data.quant_runs:
        summary = run.summary()
        parts += [
            f"<h3>Run #{summary.run}: {_e(summary.mode)} ({_e(summary.state)})</h3>",
            _table(["", "Value"], _run_rows(summary)),
        ]
        verdict = run.analysis.verdict if run.analysis else None
        if verdict:
            parts.append(f"<p>{verdict_html(verdict)}</p>")
        layers = run.layers_worst_first()
        if layers:
            there = any(r.sqnr_db_target is not None for r in layers)  # analysed on a target
            parts.append(
                _table(
                    ["Tensor", "Node", "SQNR dB"]
                    + (["On target dB"] if there else [])
                    + ["MSE", "Max abs", "Cosine"],
                    [
                        [r.tensor, r.node, r.sqnr_text()]
                        + ([_fmt(r.sqnr_db_target, ".2f")] if there else [])
                        + [_fmt(r.mse, ".3g"), _fmt(r.max_abs, ".3g"), _fmt(r.cosine, ".5f")]
                        for r in layers
                    ],
                )
            )
            divergence = run.analysis.target_divergence() if run.analysis else ""
            if divergence:
                parts.append(f"<p>{_e(divergence)}</p>")
    parts.append(_chart(data, "sqnr"))
    for tune in data.tunes:
        winner = tune.get("winner")
        said = tune.get("verdict") or (
            "meets the goal" if tune.get("met") else "is the closest; none meets it"
        )
        parts += [
            f"<h3>Auto-tune: goal {_e(tune.get('goal'))}, minimising "
            f"{_e(tune.get('objective'))} — best #{_e(winner)} {said}</h3>",
            _table(
                ["#", "How", "Goal figure", "Meets", "Median (ms)", "vs float", "Size", "Command"],
                [
                    [
                        c["number"],
                        c.get("error") or c["why"],
                        _fmt(c["goal_value"], ".4g"),
                        "one split only"
                        if c["number"] in (tune.get("unconfirmed") or [])
                        else "no headroom"
                        if c["met"] and c.get("holds") is False
                        else "yes"
                        if c["met"]
                        else "",
                        _fmt(c["latency_ms"], ".3f"),
                        None if c.get("vs_float") is None else f"{c['vs_float']:.2f}×",
                        None if c.get("quant_bytes") is None else human_bytes(c["quant_bytes"]),
                        c["command"],
                    ]
                    for c in tune["candidates"]
                ],
            ),
        ]
        advice = tune.get("calibration_advice") or ""
        notes = [
            tune.get("goal_note") or "",
            tune.get("split_note") or "",
            tune.get("headroom_note") or "",
            f"Calibration curve of #{winner}: {advice}." if advice else "",
            f"Calibration: {tune['calibration_note']}" if tune.get("calibration_note") else "",
            f"Judged on: {tune['evidence_note']}." if tune.get("evidence_note") else "",
            tune.get("slower_than_float") or "",
            tune.get("data") or "",
            "Integer only: no layer was left in float." if tune.get("integer_only") else "",
            *(f"Not tried: {line}" for line in tune.get("skipped") or []),
        ]
        parts += [f"<p>{_e(line)}</p>" for line in notes if line]
    parts.append("</section>")

    parts.append('<section id="latency"><h2>Latency</h2>')
    if data.latency:
        parts += [f"<p>{_e(v)}</p>" for v in data.latency.failures + data.latency.verdicts]
        parts.append(
            _table(
                [
                    "Model",
                    "Where",
                    "EP",
                    "Threads",
                    "Median (ms)",
                    "p90 (ms)",
                    "p99 (ms)",
                    "Runs",
                    "Note",
                ],
                [
                    [
                        Path(r.model).name,
                        r.where + (f" (onnxruntime {r.runtime})" if r.runtime else ""),
                        r.ep,
                        r.threads,
                        _fmt(r.median_ms, ".3f"),
                        _fmt(r.p90_ms, ".3f"),
                        _fmt(r.p99_ms, ".3f"),
                        r.runs,
                        r.error or ("contended machine" if r.contended else ""),
                    ]
                    for r in data.latency.rows
                ],
            )
        )
        parts.append(_chart(data, "latency"))
    else:
        parts.append("<p>No benchmark was run.</p>")
    parts.append("</section>")

    parts.append('<section id="profile"><h2>Per-op profile and placement</h2>')
    if data.profile:
        where = (
            f"On {data.profile.device} (onnxruntime {data.profile.runtime}): "
            if data.profile.device
            else ""
        )
        parts += [
            f"<p>{_e(where + data.profile.placement_text)}</p>",
            _table(
                ["Node", "Op", "EP", "µs / run", "Share"],
                [
                    [n.node, n.op_type, n.ep, _fmt(n.time_us, ".1f"), _fmt(n.share, ".1%")]
                    for n in data.profile.nodes[:30]
                ],
            ),
        ]
    else:
        parts.append("<p>No profile was run.</p>")
    parts.append("</section>")

    commands = [j.command for j in data.jobs]
    commands += [run.recipe.command_line() for run in data.quant_runs]
    parts += [
        '<section id="commands"><h2>Commands that reproduce each job</h2>',
        "<pre>" + _e("\n".join(commands) or "(none)") + "</pre></section>",
    ]
    style = (
        "body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;"
        "margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}"
        "th{background:#f0f0f0}figure.chart svg{max-width:100%;height:auto;"
        "border:1px solid #ddd}"
    )
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{_e(data.title)}</title>'
        f"<style>{style}</style></head><body>{''.join(parts)}</body></html>"
    )


def write_report(path: str | Path, data: ReportData) -> tuple[Path, Path]:
    """Write ``path`` (.html) and its ``.json`` twin atomically; return both paths."""
    html_path = Path(path).with_suffix(".html")
    json_path = html_path.with_suffix(".json")
    payload = {
        "title": data.title,
        "summary": data.summary,
        "jobs": to_json(data.jobs),
        "quantization": [
            {
                "summary": to_json(run.summary()),
                "command": run.recipe.command_line(),
                "layers": to_json(run.layers_worst_first()),
                "verdict": to_json(run.analysis.verdict if run.analysis else None),
                "data": to_json(run.analysis.data if run.analysis else None),
                "task": to_json(run.analysis.task if run.analysis else None),
            }
            for run in data.quant_runs
        ],
        "latency": to_json(data.latency.rows),
        "latency_verdicts": data.latency.verdicts,
        "profile": to_json(data.profile),
        "tunes": data.tunes,
        "cost": to_json(data.cost),
    }
    for target, text in (
        (html_path, render_html(data)),
        (json_path, json.dumps(payload, indent=2, default=str)),
    ):
        write_atomically(target, text)
    return html_path, json_path
