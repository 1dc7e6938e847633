"""Every recipe kind survives recipe → equivalent command → CLI parser → recipe unchanged.

Quantization options are varied one at a time from their declarations, in a mode that uses
them, so a new option or a new mode is covered here without editing this file.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from edgestudio.cli.main import build_parser
from edgestudio.core.convert.convert_recipes import ConvertRecipe, DimChange
from edgestudio.core.convert.export_recipes import ExportRecipe, TorchInput
from edgestudio.core.diagnostics.diagnostic_recipe import DiagnosticRecipe
from edgestudio.core.edit.edit_recipe import EditRecipe
from edgestudio.core.inputs.data_source import DataSource
from edgestudio.core.inputs.inputs_recipe import InputsRecipe
from edgestudio.core.job_api.options import declared_options
from edgestudio.core.job_api.recipe import Recipe, Tolerance
from edgestudio.core.model.cost_recipe import CostRecipe
from edgestudio.core.model.tensor_shapes import ShapesRecipe
from edgestudio.core.perf.bench_recipes import (
    BenchRecipe,
    DeviceCheckRecipe,
    ProbeRecipe,
    ProfileRecipe,
)
from edgestudio.core.quant.quant_recipes import QUANT_MODES, AnalyzeRecipe, QuantRecipe
from edgestudio.core.quant.sensitivity import SensitivityRecipe
from edgestudio.core.serialise import to_json
from edgestudio.core.targets.target_recipe import TargetCheckRecipe, TargetCompileRecipe
from edgestudio.jobs.kinds import KINDS, recipe_from_dict

RECIPE_TYPES = {kind: entry.recipe for kind, entry in KINDS.items()}

NO_COMMAND = {"shapes", "providers"}  # the app's own jobs, run without options


def _bases(tmp: Path) -> dict[str, Recipe]:
    """One recipe of every kind, with non-default values wherever the CLI can say them."""
    for name in ("m.onnx", "q.onnx", "c.npz", "d.npz", "m.pt2"):
        (tmp / name).write_bytes(b"")
    (tmp / "images").mkdir()
    (tmp / "images" / "a.png").write_bytes(b"")
    images = DataSource(
        "images",
        str(tmp / "images"),
        samples=5,
        size=(32, 48),
        layout="NHWC",
        scale=0.5,
        mean=(0.1, 0.2, 0.3),
        std=(2.0, 3.0, 4.0),
        colour="BGR",
    )
    m, q, c, d = (str(tmp / n) for n in ("m.onnx", "q.onnx", "c.npz", "d.npz"))
    data = DataSource("npz", d, samples=4)
    io = {"shapes": ("x=1x3x8x8",), "ranges": ("x=0:5",)}
    return {
        "convert": ConvertRecipe(
            model=m,
            output=str(tmp / "o.onnx"),
            overwrite=True,
            opset=17,
            dims=(DimChange("x", 0, "batch"), DimChange("y", 1, 8)),
            tolerance=Tolerance(1e-3, 1e-2),
            data=data,
            **io,
        ),
        "export": ExportRecipe(
            model=str(tmp / "m.pt2"),
            output=str(tmp / "o.onnx"),
            overwrite=True,
            inputs=(TorchInput("x", (1, 3), "float16"),),
            output_names=("y",),
            opset=17,
            dynamic=(DimChange("x", 0, "batch"),),
            exporter="legacy",
            tolerance=Tolerance(1e-3, 1e-2),
        ),
        "quantize": QuantRecipe(
            model=m,
            output=str(tmp / "o.onnx"),
            overwrite=True,
            calib=DataSource("npz", c, samples=8),
            **io,
        ),
        "analyze": AnalyzeRecipe(
            float_model=m, quant_model=q, data=images, tolerance=Tolerance(1e-3, 1e-3)
        ),
        "bench": BenchRecipe(
            models=(m, q),
            providers=("CPUExecutionProvider", "XnnpackExecutionProvider"),
            threads=(1, 2),
            warmup=3,
            runs=7,
            seconds=2.5,
            batch=2,
            opt_level="basic",
            io_binding=True,
            data=data,
            devices=("local", "pi5"),
            **io,
        ),
        "profile": ProfileRecipe(
            model=m,
            providers=("XnnpackExecutionProvider",),
            threads=2,
            runs=9,
            batch=2,
            data=data,
            device="pi5",
            **io,
        ),
        "device_check": DeviceCheckRecipe(device="pi5"),
        "cost": CostRecipe(model=m, **io),
        "target-check": TargetCheckRecipe(model=m, htp_arch="75", fix_shapes=False, **io),
        "target-compile": TargetCompileRecipe(
            model=m, output=str(tmp / "o.onnx"), overwrite=True, htp_arch="79", **io
        ),
        "edit": EditRecipe(
            model=m,
            output=str(tmp / "o.onnx"),
            overwrite=True,
            inputs=("a", "b"),
            outputs=("c",),
            bypass=("n1", "n2"),
            add_outputs=("t",),
            rename=("x=pixels",),
            simplify=True,
            tolerance=Tolerance(1e-3, 1e-2),
            **io,
        ),
        "inputs": InputsRecipe(model=m, data=data, **io),
        "diagnostic": DiagnosticRecipe(
            action="spin", seconds=2.5, megabytes=10, output=str(tmp / "o.txt"), overwrite=True
        ),
        "sensitivity": SensitivityRecipe(
            base=QuantRecipe(
                model=m, per_channel=True, calib=DataSource("npz", c, samples=8), **io
            ),
            data=data,
            metric="ctc",
            nodes=("a",),
            top=4,
            way="float",
        ),
    }


def _through_the_cli(recipe: Recipe) -> Recipe:
    argv = recipe.to_command()
    assert argv[0] == "edgestudio"
    args = build_parser().parse_args(argv[1:])
    rebuilt: Recipe = args.make_recipe(args)
    return rebuilt


def test_every_recipe_kind_is_covered(tmp_path: Path) -> None:
    assert set(RECIPE_TYPES) - NO_COMMAND == set(_bases(tmp_path))


def test_every_command_is_derived_from_the_declarations() -> None:
    """No recipe spells its command by hand: positionals and flags come from its fields."""
    assert [k for k, cls in RECIPE_TYPES.items() if "to_command" in vars(cls)] == []
    assert ShapesRecipe(model="m.onnx").to_command() == [
        "edgestudio",
        "inspect",
        "m.onnx",
        "--shapes",
        "--json",
    ]
    assert ProbeRecipe().to_command() == ["edgestudio", "providers"]


@pytest.mark.parametrize(
    "kind",
    [
        "convert",
        "export",
        "quantize",
        "analyze",
        "bench",
        "profile",
        "inputs",
        "diagnostic",
        "sensitivity",
        "edit",
        "target-check",
        "target-compile",
    ],
)
def test_recipe_round_trips_through_the_cli_and_json(kind: str, tmp_path: Path) -> None:
    recipe = _bases(tmp_path)[kind]
    assert _through_the_cli(recipe) == recipe
    assert recipe_from_dict(to_json(recipe)) == recipe


def _other_value(field: dataclasses.Field[Any], choices: tuple[str, ...] | None) -> Any:
    default = field.default
    if isinstance(default, bool):
        return not default
    if isinstance(default, tuple):
        return ("First", "Second")
    if choices:
        return next(c for c in choices if c != default)
    if isinstance(default, int):
        return default * 2 if default else 3
    if isinstance(default, float):
        return round(default / 2, 4)
    return f"{default}-other"


def _quant_cases() -> list[tuple[str, str, Any]]:
    cases = [("mode", mode, mode) for mode in QUANT_MODES]
    for field, opt in declared_options(QuantRecipe):
        if field.name == "mode":
            continue
        mode = next(m for m in QUANT_MODES if opt.used_in(m))
        cases.append((field.name, mode, _other_value(field, opt.choices)))
    return cases


@pytest.mark.parametrize(
    ("name", "mode", "value"), _quant_cases(), ids=[f"{n}-{m}" for n, m, _ in _quant_cases()]
)
def test_every_quantization_option_round_trips(
    name: str, mode: str, value: Any, tmp_path: Path
) -> None:
    base = _bases(tmp_path)["quantize"]
    assert isinstance(base, QuantRecipe)
    changes: dict[str, Any] = {"mode": mode, name: value}
    requires = (
        dict((f.name, opt.requires) for f, opt in declared_options(QuantRecipe))[name]
        if name != "mode"
        else None
    )
    if requires is not None:  # an option that means something only beside another's value
        changes[requires[0]] = requires[1]
    if not QUANT_MODES[mode].calibrated:
        changes["calib"] = None
    recipe = dataclasses.replace(base, **changes)
    assert _through_the_cli(recipe) == recipe


def test_every_option_says_what_it_does_and_its_default() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = []
    for name, command in sub.choices.items():
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            flag = action.option_strings[-1] if action.option_strings else action.dest
            if not action.help:
                missing.append(f"{name} {flag}: no help")
            elif (
                action.option_strings
                and action.default not in (None, False, [], ())
                and not isinstance(action, argparse._AppendAction)
                and "default" not in action.help
            ):
                missing.append(f"{name} {flag}: default {action.default!r} not shown")
    assert missing == []


def test_every_mode_has_its_onnxruntime_call_and_a_form_label() -> None:
    from edgestudio.core.quant.quantizers import QUANTIZERS

    assert set(QUANTIZERS) == set(QUANT_MODES)
    assert all(mode.label for mode in QUANT_MODES.values())


DECLARED = [
    (cls, f.name)
    for cls in (BenchRecipe, ProfileRecipe, ExportRecipe, DataSource)
    for f, _ in declared_options(cls)
]


def _declared_base(cls: type, tmp_path: Path) -> Any:
    model = str(tmp_path / "m.onnx")
    if cls is BenchRecipe:
        return BenchRecipe(models=(model,))
    if cls is ProfileRecipe:
        return ProfileRecipe(model=model)
    if cls is ExportRecipe:
        return ExportRecipe(
            model=str(tmp_path / "m.pt2"),
            output=model,
            inputs=(TorchInput("x", (1, 3), "float32"),),
        )
    return DataSource("images", str(tmp_path))


@pytest.mark.parametrize(
    ("cls", "name"), DECLARED, ids=[f"{cls.__name__}-{name}" for cls, name in DECLARED]
)
def test_every_declared_option_round_trips(cls: type, name: str, tmp_path: Path) -> None:
    """A benchmark, profile, export or data-preparation option is one declaration: its flag,
    its default and its place in the command follow from it (the forms' widgets are checked in
    the GUI tests)."""
    base = _declared_base(cls, tmp_path)
    field, opt = next((f, o) for f, o in declared_options(cls) if f.name == name)
    value = {
        "seconds": 1.5,
        "size": (32, 24),
        "scale": 1 / 127.5,
        "mean": (0.5, 0.25),
        "std": (0.229,),
        "tokenizer": "tokenizer.json",
    }.get(name) or _other_value(field, opt.choices)
    if cls is DataSource:  # prepared data travels inside a recipe that takes --calib
        from PIL import Image

        Image.new("L", (4, 4)).save(tmp_path / "a.png")  # a folder of images, as the CLI sees
        kind = opt.modes[0] if opt.modes else "images"
        path = {"audio": tmp_path / "a.wav", "text": tmp_path / "a.txt"}.get(kind, tmp_path)
        base = QuantRecipe(
            model=str(tmp_path / "m.onnx"),
            output=str(tmp_path / "q.onnx"),
            calib=dataclasses.replace(base, kind=kind, path=str(path)),
        )
        recipe = dataclasses.replace(base, calib=dataclasses.replace(base.calib, **{name: value}))
    else:
        recipe = dataclasses.replace(base, **{name: value})
    assert opt.flag in recipe.to_command()
    assert _through_the_cli(recipe) == recipe
    assert _through_the_cli(base) == base  # the default spells nothing it does not need


def test_the_tune_options_are_its_settings_declarations() -> None:
    """The tune command's --objective/--threads/--budget/--minutes/--workers/--bench-runs are
    TuneSettings' declarations (the tune window's fields are made from the same ones)."""
    from edgestudio.core.job_api.options import values_from_args
    from edgestudio.core.quant.tune import TuneSettings

    parser = build_parser()
    args = parser.parse_args(
        [
            "tune",
            "m.onnx",
            "--data",
            "d.npz",
            "--objective",
            "size",
            "--threads",
            "2",
            "--budget",
            "5",
            "--minutes",
            "2.5",
            "--workers",
            "3",
            "--bench-runs",
            "7",
            "--integer-only",
            "--target",
            "qnn-htp",
            "--no-check-winner",
        ]
    )
    assert values_from_args(args, TuneSettings) == {
        "objective": "size",
        "threads": 2,
        "budget": 5,
        "minutes": 2.5,
        "workers": 3,
        "integer_only": True,
        "bench_runs": 7,
        "target": "qnn-htp",
        "check_winner": False,
    }
    defaults = values_from_args(
        parser.parse_args(["tune", "m.onnx", "--data", "d.npz"]), TuneSettings
    )
    assert defaults == {f.name: f.default for f, _ in declared_options(TuneSettings)}
    with pytest.raises(SystemExit):
        parser.parse_args(["tune", "m.onnx", "--data", "d.npz", "--minutes", "-1"])


def test_the_tune_search_space_from_the_command_line() -> None:
    """`--no-16-bit` is the Auto-tune window's 'Precision: 8-bit everywhere'."""
    from edgestudio.cli.tune_cmd import settings_from_args

    parser = build_parser()
    base = ["tune", "m.onnx", "--data", "d.npz", "--goal", "top1_agreement>=0.99"]
    wide = settings_from_args(parser.parse_args(base))
    narrow = settings_from_args(
        parser.parse_args([*base, "--no-16-bit", "--modes", "qdq", "--no-exclusions"])
    )
    assert wide.space.activation_types == ("uint8", "uint16")
    assert narrow.space.activation_types == ("uint8",)
    assert narrow.space.modes == ("qdq",) and not narrow.space.exclusions
    assert narrow.goal.metric == "top1_agreement"
