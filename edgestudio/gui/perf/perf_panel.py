"""The Performance panel: the benchmark and profile form beside its results: latency
(:mod:`latency_view`), the per-op profile with EP placement on the graph (:mod:`profile_view`)
and the edge-vs-cloud break-even plot (:mod:`edge_cloud_view`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QScrollArea,
    QTabWidget,
    QWidget,
)

from edgestudio.core.inputs.grammar import checked_text, parse_counts, parse_named_shape
from edgestudio.core.inputs.input_spec import InputSpecification
from edgestudio.core.job_api.options import declared_options
from edgestudio.core.perf.bench_recipes import BenchRecipe, ProfileRecipe
from edgestudio.core.perf.perf_results import Latency, LatencyRow, Profile, ProviderProbe
from edgestudio.core.workspace.document import ModelDocument
from edgestudio.core.workspace.preferences import Preferences
from edgestudio.gui.forms.option_widgets import option_widget, widget_value
from edgestudio.gui.perf.edge_cloud_view import EdgeCloudView
from edgestudio.gui.perf.latency_view import LatencyView
from edgestudio.gui.perf.profile_view import ProfileView
from edgestudio.gui.perf.target_view import TargetView
from edgestudio.gui.widgets.lazy_tab import LazyTab

# The profile takes these from the benchmark's widgets, so that both measure the same inputs.
SHARED_WITH_BENCH = {"batch"}


class PerfPanel(QWidget):
    """Benchmarks and profiles of one document's model (and its quantized versions)."""

    bench_requested = Signal(object)  # BenchRecipe
    profile_requested = Signal(object)  # ProfileRecipe
    target_check_requested = Signal()  # Tools › Check on target, from the Target tab
    target_compile_requested = Signal(str)  # Compile for the NPU…, on a device ("": here)
    node_chosen = Signal(str)

    def __init__(self, document: ModelDocument, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("perf_panel")
        self.document = document
        model_path = self.model_path = document.path

        # ----- form ------------------------------------------------------------------------
        self.models = QListWidget()
        self.models.setObjectName("bench_models")
        self.models.setMaximumHeight(90)
        self.add_model(str(model_path), checked=True)
        self.providers = QListWidget()
        self.providers.setObjectName("bench_providers")
        self.providers.setMaximumHeight(130)
        for names in (self.models, self.providers):  # long names elide; never a 2nd scrollbar
            names.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            names.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.providers.setDragDropMode(QAbstractItemView.DragDropMode.InternalMove)
        self.set_providers([ProviderProbe("CPUExecutionProvider", works=True)])
        order_note = QLabel(
            "Checked providers are benchmarked one by one. Drag to reorder: the "
            "order is the order onnxruntime assigns nodes in, CPU taking what the "
            "first cannot run."
        )
        order_note.setWordWrap(True)
        self.machines = QListWidget()
        self.machines.setObjectName("bench_devices")
        self.machines.setMaximumHeight(80)
        self.machines.setToolTip(
            "Where to measure: this machine and the devices added in "
            "Preferences › Devices (over SSH), side by side"
        )
        self.threads = QLineEdit("1")
        # the declared options of BenchRecipe: a new one appears here without form code
        defaults = BenchRecipe()
        self.bench_options = {
            f.name: (f, opt, option_widget(f, opt, getattr(defaults, f.name)))
            for f, opt in declared_options(BenchRecipe)
        }
        profile_defaults = ProfileRecipe()
        self.profile_options = {
            f.name: (f, opt, option_widget(f, opt, getattr(profile_defaults, f.name)))
            for f, opt in declared_options(ProfileRecipe)
            if f.name not in SHARED_WITH_BENCH
        }
        self.shapes = QLineEdit()
        self._hint_shapes(document.input_spec)
        document.events.input_spec.connect(self._hint_shapes)
        self.run_button = QPushButton("Run benchmark")
        self.run_button.setObjectName("run_bench")
        self.run_button.clicked.connect(self._request_bench)
        self.profile_button = QPushButton("Profile on the first provider and machine")
        self.profile_button.clicked.connect(self._request_profile)
        form = QFormLayout()
        form.addRow("Models:", self.models)
        form.addRow("Providers:", self.providers)
        form.addRow("", order_note)
        form.addRow("Where:", self.machines)
        form.addRow("Threads:", self.threads)
        for _, opt, widget in self.bench_options.values():
            if isinstance(widget, QCheckBox):
                form.addRow(widget)
            else:
                form.addRow(opt.label, widget)
        form.addRow("Shapes:", self.shapes)
        form.addRow(self.run_button)
        for _, opt, widget in self.profile_options.values():
            form.addRow(opt.label, widget)
        form.addRow(self.profile_button)
        form_box = QGroupBox("Benchmark")
        form_box.setLayout(form)
        # the form scrolls where the window is short, rather than squeezing its wrapped notes
        # into clipped lines (1280×800 with the Jobs panel open)
        form_scroll = QScrollArea()
        form_scroll.setWidget(form_box)
        form_scroll.setWidgetResizable(True)
        form_scroll.setFrameShape(QFrame.Shape.NoFrame)
        form_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        form_scroll.setMaximumWidth(440)

        # ----- results -----------------------------------------------------------------------
        # Built when first shown or given results: their plots cost every model's opening.
        self._latency = LazyTab(self._build_latency)
        self._profile = LazyTab(self._build_profile)
        self._edge_cloud = LazyTab(EdgeCloudView)
        self._target = LazyTab(self._build_target)

        self.tabs = QTabWidget()
        self.tabs.setObjectName("performance_views")
        self.tabs.addTab(self._latency, "Latency")
        self.tabs.addTab(self._profile, "Per-op profile")
        self.tabs.addTab(self._edge_cloud, "Edge vs cloud")
        self.tabs.addTab(self._target, "Target")
        self.refresh_devices()
        layout = QHBoxLayout(self)
        layout.addWidget(form_scroll)
        layout.addWidget(self.tabs, 1)
        document.extra_model_added.connect(self.add_model)
        document.events.latency.connect(self._show_latency)
        document.events.profile.connect(self._show_profile)
        document.restored.connect(self._show_document)
        self._show_document()

    # ----- the document's results --------------------------------------------------------------
    @property
    def latency(self) -> LatencyView:
        """The Latency tab, built on first use."""
        return self._latency.content()

    @property
    def profile_view(self) -> ProfileView:
        """The Per-op profile tab, built on first use."""
        return self._profile.content()

    @property
    def edge_cloud(self) -> EdgeCloudView:
        """The Edge vs cloud tab, built on first use."""
        return self._edge_cloud.content()

    def _build_latency(self) -> LatencyView:
        view = LatencyView()
        view.measured.connect(self._measured)
        return view

    @property
    def target_view(self) -> TargetView:
        """The Target tab (where the NPU runs each node), built on first use."""
        return self._target.content()

    def show_target(self) -> None:
        """Bring the Target tab forward."""
        self.tabs.setCurrentWidget(self._target)

    def _build_target(self) -> TargetView:
        view = TargetView(self.document)
        view.node_chosen.connect(self.node_chosen)
        view.check_requested.connect(self.target_check_requested)
        view.compile_requested.connect(self.target_compile_requested)
        return view

    def _build_profile(self) -> ProfileView:
        view = ProfileView(self.document)
        view.node_chosen.connect(self.node_chosen)
        return view

    @property
    def results(self) -> list[LatencyRow]:
        """The last benchmark's rows (the document's)."""
        return self.document.latency.rows

    @property
    def latency_verdicts(self) -> list[str]:
        """What the last benchmark says about quantized models against the float one."""
        return self.document.latency.verdicts

    @property
    def profile(self) -> Profile | None:
        """The last per-op profile (the document's)."""
        return self.document.profile

    def _show_document(self) -> None:
        for extra in self.document.extra_models:
            self.add_model(extra)
        if self.document.latency:
            self._show_latency(self.document.latency)
        if self.document.profile:
            self._show_profile(self.document.profile)

    def _show_latency(self, latency: Latency) -> None:
        self.show_results(latency.rows, latency.verdicts, latency.failures)

    def _show_profile(self, profile: Profile | None) -> None:
        if profile:
            self.show_profile(profile)

    # ----- form ------------------------------------------------------------------------------
    def add_model(self, path: str, checked: bool = True) -> None:
        """Offer ``path`` (e.g. a quantized version) for benchmarking."""
        for i in range(self.models.count()):
            item = self.models.item(i)
            if item is not None and item.data(Qt.ItemDataRole.UserRole) == path:
                return
        item = QListWidgetItem(Path(path).name)
        item.setToolTip(path)
        item.setData(Qt.ItemDataRole.UserRole, path)
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
        item.setCheckState(Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)
        self.models.addItem(item)

    def refresh_devices(self) -> None:
        """Offer this machine and every device added (keeping what was checked)."""
        from edgestudio.core.remote.devices import LOCAL, DeviceError, load_devices

        checked = set(self._checked(self.machines)) if self.machines.count() else {LOCAL}
        try:
            devices = list(load_devices().values())
        except DeviceError:
            devices = []
        self.machines.clear()
        for name, tip in [(LOCAL, "this machine")] + [(d.name, d.address) for d in devices]:
            item = QListWidgetItem("This machine" if name == LOCAL else name)
            item.setData(Qt.ItemDataRole.UserRole, name)
            item.setToolTip(tip)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(
                Qt.CheckState.Checked if name in checked else Qt.CheckState.Unchecked
            )
            self.machines.addItem(item)
        if self._target.built:  # the Target view's "compile on" offers the same devices
            self.target_view.list_devices()

    def set_machines(self, names: list[str]) -> None:
        """Check exactly ``names`` ("local" is this machine) in the Where list."""
        for i in range(self.machines.count()):
            item = self.machines.item(i)
            if item is not None:
                item.setCheckState(
                    Qt.CheckState.Checked
                    if item.data(Qt.ItemDataRole.UserRole) in names
                    else Qt.CheckState.Unchecked
                )

    def set_providers(self, rows: list[ProviderProbe]) -> None:
        """Show the probe's providers: working ones checkable, others greyed with the reason
        (unless an environment ``make`` made has one: it is measured there)."""
        from edgestudio.core.remote.devices import environment_for

        self.providers.clear()

        def order(r: ProviderProbe) -> tuple[bool, bool]:
            return (not r.works, r.provider != "CPUExecutionProvider")

        for row in sorted(rows, key=order):
            label = row.provider.removesuffix("ExecutionProvider") or row.provider
            elsewhere = None if row.works else environment_for(row.provider)
            note = "" if row.works else f"  (in '{elsewhere}')" if elsewhere else "  (unavailable)"
            item = QListWidgetItem(label + note)
            item.setData(Qt.ItemDataRole.UserRole, row.provider)
            item.setToolTip(
                f"{row.provider}: not in this machine's onnxruntime; measured where "
                f"'{elsewhere}' is ticked under Where"
                if elsewhere
                else f"{row.provider}: {row.reason or 'available'}"
            )
            if row.works or elsewhere:
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                item.setCheckState(
                    Qt.CheckState.Checked
                    if row.provider == "CPUExecutionProvider"
                    else Qt.CheckState.Unchecked
                )
            else:
                item.setFlags(Qt.ItemFlag.NoItemFlags)
            self.providers.addItem(item)

    def apply_preferences(self, prefs: Preferences) -> None:
        """Default threads and checked providers from the user's preferences."""
        self.threads.setText(",".join(str(t) for t in prefs.threads))
        for i in range(self.providers.count()):
            item = self.providers.item(i)
            if item is not None and item.flags() & Qt.ItemFlag.ItemIsUserCheckable:
                wanted = item.data(Qt.ItemDataRole.UserRole) in prefs.providers
                item.setCheckState(Qt.CheckState.Checked if wanted else Qt.CheckState.Unchecked)

    def _checked(self, widget: QListWidget) -> list[str]:
        items = [widget.item(i) for i in range(widget.count())]
        return [
            str(i.data(Qt.ItemDataRole.UserRole))
            for i in items
            if i is not None and i.checkState() == Qt.CheckState.Checked
        ]

    def _option(self, name: str) -> tuple[Any, QWidget]:
        """The declared field ``name`` of the benchmark form and its widget."""
        f, _, widget = self.bench_options[name]
        return f, widget

    def _hint_shapes(self, spec: object) -> None:
        """The Shapes field's example in this model's own words (its first input, as the
        inputs it runs on have it), not another model's."""
        entry = spec.inputs[0] if isinstance(spec, InputSpecification) and spec.inputs else None
        example = (
            f"{entry.name}={entry.shape_text()}"
            if entry is not None and entry.shape
            else "INPUT=1x3x224x224"
        )
        self.shapes.setPlaceholderText(f"fixed shapes, e.g. {example} (optional)")

    def bench_widget(self, name: str) -> QWidget:
        """The form's widget for BenchRecipe's declared option ``name`` (``runs``, …)."""
        return self._option(name)[1]

    def bench_recipe(self) -> BenchRecipe:
        """The benchmark as the form stands (raises ValueError, naming the field, on a thread
        list or shape that does not follow the grammar)."""
        try:
            threads = parse_counts(self.threads.text())
        except ValueError as exc:
            raise ValueError(f"Threads: {exc}") from exc
        try:
            shapes = tuple(
                checked_text(parse_named_shape)(s)
                for s in self.shapes.text().split(",")
                if s.strip()
            )
        except ValueError as exc:
            raise ValueError(f"Shapes: {exc}") from exc
        machines = tuple(self._checked(self.machines))
        if not machines:
            raise ValueError("Where: check this machine or a device")
        return BenchRecipe(
            devices=() if machines == ("local",) else machines,
            models=tuple(self._checked(self.models)),
            providers=tuple(self._checked(self.providers)),
            threads=threads,
            shapes=shapes,
            **{
                name: widget_value(f, widget) for name, (f, _, widget) in self.bench_options.items()
            },
        )

    def _request_bench(self) -> None:
        try:
            recipe = self.bench_recipe()
        except ValueError as exc:
            self.profile_view.placement.setText(str(exc))
            return
        if recipe.models and recipe.providers:
            self.bench_requested.emit(recipe)

    def _request_profile(self) -> None:
        providers = tuple(self._checked(self.providers)) or ("CPUExecutionProvider",)
        machine = next(iter(self._checked(self.machines)), "local")
        self.profile_requested.emit(
            ProfileRecipe(
                model=str(self.model_path),
                providers=providers,
                batch=int(widget_value(*self._option("batch"))),
                device="" if machine == "local" else machine,
                **{
                    name: widget_value(f, widget)
                    for name, (f, _, widget) in self.profile_options.items()
                },
            )
        )

    # ----- latency results -------------------------------------------------------------------
    def show_results(
        self,
        results: list[LatencyRow],
        verdicts: list[str] | None = None,
        failures: list[str] | None = None,
    ) -> None:
        """Show a benchmark's rows in the Latency tab and bring the tab forward."""
        self.latency.show_results(results, verdicts, failures)
        self.tabs.setCurrentWidget(self._latency)

    def _measured(self, median_ms: float, where: str) -> None:
        self.edge_cloud.set_measured(median_ms, where)

    # ----- profile -----------------------------------------------------------------------------
    def show_profile(self, profile: Profile) -> None:
        """Show ``profile`` in the Per-op profile tab and bring the tab forward."""
        self.profile_view.show_profile(profile)
        self.tabs.setCurrentIndex(1)
