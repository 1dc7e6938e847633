"""The core, jobs and CLI never import Qt: they run (and are tested) with Qt uninstalled."""

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "edgestudio.core.model.summary",
        "edgestudio.core.model.model_io",
        "edgestudio.core.model.runtime_info",
        "edgestudio.core.workspace.document",
        "edgestudio.core.workspace.workspace",
        "edgestudio.core.workspace.report",
        "edgestudio.jobs",
        "edgestudio.jobs.workflow",
        "edgestudio.jobs.scheduler",
        "edgestudio.cli.main",
        "edgestudio.__main__",
    ],
)
def test_module_imports_without_qt(module: str) -> None:
    code = (
        f"import sys, {module}\n"
        "qt = ('PySide6', 'shiboken6', 'pyqtgraph')\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in qt]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_command_line_parses_without_importing_onnx_or_onnxruntime() -> None:
    """A shell command pays for onnx (ml_dtypes: ~1 s cold) only in the worker that needs it:
    the CLI that parses arguments and starts jobs imports neither."""
    code = (
        "import sys, edgestudio.cli.main\n"
        "from edgestudio.cli.main import build_parser\n"
        "build_parser().parse_args(['quantize', 'm.onnx', '-o', 'q.onnx', '--mode', 'qdq'])\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('onnx', 'onnxruntime')]\n"
        "assert not bad, bad[:5]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cli_inspect_runs_without_qt(sample_model) -> None:
    code = (
        "import sys\n"
        "from edgestudio.cli.main import main\n"
        f"rc = main(['inspect', {str(sample_model)!r}])\n"
        "assert 'PySide6' not in sys.modules\n"
        "sys.exit(rc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "digits_cnn.onnx" in out.stdout


def test_telemetry_is_disabled_on_import() -> None:
    code = (
        "import os\nos.environ['ORT_DISABLE_TELEMETRY'] = '0'\nimport edgestudio\n"
        "assert os.environ['ORT_DISABLE_TELEMETRY'] == '1'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _imports(package: str) -> dict[str, set[str]]:
    """Modules of ``package`` -> the edgestudio subpackages they import."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "edgestudio" / package
    found: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text())
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
        found[str(path.relative_to(root))] = {
            n.split(".")[1] for n in names if n.startswith("edgestudio.") and n.count(".") >= 1
        }
    return found


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("core", {"jobs", "cli", "gui"}),
        ("jobs", {"cli", "gui"}),
        ("gui", {"cli"}),
        ("cli", {"gui"}),  # except the one lazy import that opens the window, checked below
    ],
)
def test_tiers_import_in_one_direction(package: str, forbidden: set[str]) -> None:
    bad = {
        module: deps & forbidden
        for module, deps in _imports(package).items()
        if deps & forbidden and not (package == "cli" and module == "main.py")
    }
    assert bad == {}


def test_no_import_cycles_inside_the_package() -> None:
    """Modules import each other in one direction only, function-level (lazy) imports and
    imports for type checkers only (``if TYPE_CHECKING:``) included: a reader follows those
    arrows too. A part of the main window (its menus, its quantization actions) names what it
    needs of the window as a protocol rather than importing it."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "edgestudio"
    graph: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        module = ".".join(("edgestudio", *path.relative_to(root).with_suffix("").parts))
        module = module.removesuffix(".__init__")
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):  # function-level imports too
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("edgestudio.")
            ):
                deps.add(node.module)
                deps.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name.startswith("edgestudio."))
        graph[module] = deps
    graph = {m: {d for d in deps if d in graph and d != m} for m, deps in graph.items()}

    cycles = []
    state: dict[str, int] = {}

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                cycles.append([*stack[stack.index(d) :], d] if d in stack else [m, d])
            elif d not in state:
                visit(d, [*stack, d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == []


# The core is cut by feature: a feature's recipe, native call, checks and results live in one
# folder. Only these few modules are shared by every feature and may sit at the core's root.
CORE_ROOT_MODULES = {"__init__", "errors", "formatting", "paths", "progress", "serialise"}
CORE_SLICES = {
    "convert",
    "edit",
    "inputs",
    "job_api",
    "model",
    "perf",
    "quant",
    "remote",
    "targets",
    "diagnostics",
    "workspace",
}


def test_the_core_is_cut_into_feature_slices() -> None:
    from pathlib import Path

    core = Path(__file__).resolve().parents[1] / "edgestudio" / "core"
    loose = {p.stem for p in core.glob("*.py")} - CORE_ROOT_MODULES
    folders = {p.name for p in core.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert loose == set(), "a loose module at the core's root belongs in its feature's folder"
    assert folders == CORE_SLICES, "a new slice is listed here and in docs/ARCHITECTURE.md"
    assert not (core / "ops").exists(), "native calls live in their feature's folder"


def test_the_window_process_never_loads_onnxruntime_or_torch() -> None:
    """Native calls sit beside their feature's recipes now, so this guards the rule that kept
    them in ``core/ops``: only a job worker imports the modules that load native runtimes."""
    code = (
        "import sys, edgestudio.gui.main_window, edgestudio.jobs.workflow, "
        "edgestudio.jobs.kinds, edgestudio.cli.main\n"
        "print([m for m in ('onnxruntime', 'torch') if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**__import__("os").environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    assert out.stdout.strip() == "[]"


# The core's slices, lowest first: a slice imports only the root modules and slices before it
# (an import for type checkers counts too: it is an arrow a reader follows). A new slice takes
# its place here and in docs/ARCHITECTURE.md.
CORE_ORDER = (
    "job_api",
    "model",
    "remote",
    "inputs",
    "diagnostics",
    "targets",
    "convert",
    "edit",
    "perf",
    "quant",
    "workspace",
)


def test_core_slices_import_only_the_slices_below_them() -> None:
    import ast
    from pathlib import Path

    assert set(CORE_ORDER) == CORE_SLICES
    core = Path(__file__).resolve().parents[1] / "edgestudio" / "core"
    rank = {name: i for i, name in enumerate(CORE_ORDER)}
    upward = []
    for path in core.rglob("*.py"):
        parts = path.relative_to(core).parts
        if len(parts) < 2:
            continue  # the root's shared modules import no slice (checked by the cycle test)
        slice_ = parts[0]
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [node.module]
                if isinstance(node, ast.ImportFrom) and node.module
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for name in names:
                bits = name.split(".")
                if bits[:2] != ["edgestudio", "core"] or len(bits) < 4 or bits[2] == slice_:
                    continue
                if rank[bits[2]] > rank[slice_]:
                    upward.append(f"{path.relative_to(core)} imports {name}")
    assert upward == []


def test_the_tests_mirror_the_package() -> None:
    """A folder of tests/core is a slice of edgestudio/core (tests/core/quant/accel beside
    core/quant/accel): a module's tests are found where the module is."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    folders = [
        p for p in (root / "tests" / "core").rglob("*") if p.is_dir() and p.name != "__pycache__"
    ]
    stray = [
        str(p.relative_to(root))
        for p in folders
        if not (root / "edgestudio" / p.relative_to(root / "tests")).is_dir()
    ]
    assert folders and stray == []
