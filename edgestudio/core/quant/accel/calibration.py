"""Calibration for onnxruntime's quantizer, same ranges with less time and bounded memory.

Stand-ins installed by :func:`edgestudio.core.quant.accel.accelerator.accelerated` for ORT's
calibrators:

- MinMax: the reduce nodes are added once (ORT inserted them one tensor at a time) and are
  themselves the outputs; each sample is folded into a running minimum and maximum (ORT keeps
  every sample's reductions).
- Entropy, Percentile, Distribution: ORT keeps every calibrated tensor of every sample and builds
  its histograms once over all of them (memory grows with samples × activations). The same
  one-shot call is made while the kept tensors fit :data:`HISTOGRAM_KEEP_BYTES`; beyond that they
  are dropped and a second pass over the data adds up per-sample histograms over the global
  range found by the first pass — the same bins and counts, since a histogram over fixed edges
  is a sum of per-sample histograms.
- The calibration session is built without memory-pattern planning (super-linear on graphs with
  thousands of added outputs; it changes buffer placement, never a value).

Each keeps ORT's results exactly; the identity tests compare the written models byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

HISTOGRAM_KEEP_BYTES = 256 * 2**20  # calibrated tensors kept for ORT's one-shot histograms


def augment_graph(self: Any) -> None:
    """ORT's MinMaxCalibrater.augment_graph, with the same reductions, outputs and names,
    appended once instead of inserted one tensor at a time (each insertion scanned the graph for
    the tensor's first consumer and rebuilt every value-info map). Where the reduce nodes stand
    in the node list does not change what they compute; the outputs keep ORT's order, which is
    how the calibrator pairs them up.

    Where our streaming collector reads the outputs (see :func:`streaming_minmax`), each
    reduction is itself the output: ORT's Reshape to [-1] after it is a row-major flattening the
    collector does in numpy, with the same values in the same order. Half as many added nodes
    make the calibration session ~2.5× quicker to build and each run quicker on big graphs."""
    import uuid

    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    tensors, _ = self.select_tensors_to_calibrate(self.model)
    flatten_in_numpy = _streams(self)
    reshape_shape_name = str(uuid.uuid4())
    if not flatten_in_numpy:
        reshape_shape = numpy_helper.from_array(np.array([-1], dtype=np.int64), reshape_shape_name)
        self.model.graph.initializer.append(reshape_shape)
    graph = self.model.graph
    value_infos = {vi.name: vi for vi in graph.value_info}
    value_infos.update({o.name: o for o in graph.output})
    value_infos.update({i.name: i for i in graph.input})

    def get_op_version(op_type: str) -> int:
        for opset_import in self.model.opset_import:
            if onnx.defs.has(op_type, opset_import.domain):
                return int(opset_import.version)
        raise RuntimeError(f"Model does not contain a version for '{op_type}'.")

    new_nodes, new_outputs = [], []
    for tensor_name in tensors:
        for reduce_op_name in ("ReduceMin", "ReduceMax"):
            reduce_output = tensor_name + "_" + reduce_op_name
            intermediate_output = reduce_output + "_Reshape"
            reduce_node = helper.make_node(
                reduce_op_name,
                [tensor_name],
                [reduce_output if flatten_in_numpy else intermediate_output],
                keepdims=1,
                name=reduce_output,
            )
            if tensor_name not in value_infos:
                raise ValueError(
                    f"Unable to guess tensor type for tensor {tensor_name!r}, "
                    "running shape inference before quantization may resolve this issue."
                )
            onnx_type = value_infos[tensor_name].type.tensor_type.elem_type
            if self.per_channel:
                rank = len(value_infos[tensor_name].type.tensor_type.shape.dim)
                axes = [0, *range(2, rank)]
                if get_op_version(reduce_op_name) < 18:
                    reduce_node.attribute.append(helper.make_attribute("axes", axes))
                else:
                    axes_name = str(uuid.uuid4())
                    graph.initializer.append(
                        numpy_helper.from_array(np.array(axes, dtype=np.int64), axes_name)
                    )
                    reduce_node.input.append(axes_name)
            new_nodes.append(reduce_node)
            if flatten_in_numpy:
                new_outputs.append(helper.make_tensor_value_info(reduce_output, onnx_type, None))
            else:
                new_nodes.append(
                    helper.make_node(
                        "Reshape",
                        [intermediate_output, reshape_shape_name],
                        [reduce_output],
                        name=intermediate_output,
                    )
                )
                new_outputs.append(helper.make_tensor_value_info(reduce_output, onnx_type, [None]))
    graph.node.extend(new_nodes)
    graph.output.extend(new_outputs)
    if self.use_external_data_format:
        onnx.save(self.model, self.augmented_model_path, save_as_external_data=True)
    else:
        # What onnx.save writes here (its walk over every tensor for ones marked external
        # finds none: the calibrator's model was loaded with its external data), without
        # that walk (70 ms at 4k nodes). Only the calibration session reads the file.
        Path(self.augmented_model_path).write_bytes(self.model.SerializeToString())


def calibration_session(self: Any) -> None:
    """ORT's calibration session, without memory-pattern planning: on a graph with thousands
    of added outputs that planning makes the first run super-linear, and it changes only how
    buffers are allocated, never a value."""
    import onnxruntime

    from edgestudio.core.model.sessions import job_session_options

    sess_options = job_session_options(2)  # ORT's calibrator logs its own warnings
    sess_options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess_options.enable_mem_pattern = False
    self.infer_session = onnxruntime.InferenceSession(
        self.augmented_model_path, sess_options=sess_options, providers=self.execution_providers
    )


def _streams(calibrater: Any) -> bool:
    """Whether our streaming collector reads this calibrater's outputs (moving averages and
    ORT's chunking keep ORT's own collector, and with it ORT's graph)."""
    return not calibrater.moving_average and calibrater.max_intermediate_outputs is None


def streaming_minmax(stock_collect: Callable[..., Any]) -> Callable[..., Any]:
    """ORT's MinMaxCalibrater.collect_data keeps every reduced output of every sample and
    takes nanmin/nanmax over them at the end (memory grows with the sample count). This folds
    each sample into a running np.fmin/np.fmax — the same NaN-ignoring minimum and maximum —
    so the ranges are identical (see :class:`_Fold` and :func:`_ranges_of_one_sample`).
    Moving averages (a different sum order) and ORT's chunking option use the stock code."""

    def collect_data(self: Any, data_reader: Any) -> None:
        names = [o.name for o in self.infer_session.get_outputs()]
        added = names[self.num_model_outputs :]
        if not _streams(self) or set(added) & set(self.model_original_outputs):
            stock_collect(self, data_reader)
            return
        fold = _Fold(names, minima=set(added[0::2]), maxima=set(added[1::2]))
        while True:
            inputs = data_reader.get_next()
            if not inputs:
                break
            fold.add(self.infer_session.run(None, inputs))
        folded = fold.result()
        if folded is not None and not self.symmetric:
            ranges = _ranges_of_one_sample(self, names, folded)
        else:  # ORT's own computation, over the one folded sample
            if folded is not None:
                self.intermediate_outputs.append(folded)
            if len(self.intermediate_outputs) == 0 and self.calibrate_tensors_range is None:
                raise ValueError("No data is collected.")
            ranges = self.compute_data()
        from onnxruntime.quantization.calibrate import TensorsData

        if not isinstance(ranges, TensorsData):
            raise TypeError(f"compute_data must return a TensorsData not {type(ranges)}.")
        self.clear_collected_data()

    return collect_data


class _Fold:
    """The running minimum and maximum of each reduce output over the samples.

    The reductions keep their dimensions (see :func:`augment_graph`): they are flattened as
    ORT's Reshape to [-1] would have. On graphs with thousands of calibrated tensors, folding
    them one by one in Python took longer than running the model: while every sample gives
    each output the same size and all minima (and all maxima) one dtype, each sample's minima
    are joined into one array and folded with a single np.fmin (likewise the maxima). That is
    the same element-wise function on the same pairs in the same order, so the same values;
    otherwise each output is folded on its own."""

    def __init__(self, names: list[str], minima: set[str], maxima: set[str]) -> None:
        self.count = len(names)
        self.min_at = [k for k, n in enumerate(names) if n in minima]
        self.max_at = [k for k, n in enumerate(names) if n in maxima]
        self.folded: list[Any] | None = None  # per output (None: a model output)
        self.joined: tuple[Any, Any] | None = None  # (minima, maxima), while joinable
        self.sizes: list[int] = []

    def add(self, values: list[Any]) -> None:
        """Fold one sample's outputs in."""
        import numpy as np

        if self.folded is None:  # the first sample is the running value
            # ORT hands out new arrays, and only the joined ones are folded in place.
            self.folded = [None] * self.count
            for k in (*self.min_at, *self.max_at):
                self.folded[k] = np.reshape(values[k], -1)
            self.sizes = [self.folded[k].size for k in (*self.min_at, *self.max_at)]
            self.joined = self._join(self.folded)
            return
        if self.joined is not None:
            joined = self._join(values)
            if joined is not None:
                np.fmin(self.joined[0], joined[0], out=self.joined[0])
                np.fmax(self.joined[1], joined[1], out=self.joined[1])
                return
        self._split()
        for positions, fold in ((self.min_at, np.fmin), (self.max_at, np.fmax)):
            for k in positions:
                self.folded[k] = fold(self.folded[k], np.reshape(values[k], -1))

    def result(self) -> list[Any] | None:
        """Each output's folded value (None before any sample)."""
        self._split()
        return self.folded

    def _join(self, values: list[Any]) -> tuple[Any, Any] | None:
        """Each group's outputs in one array; None where they cannot be joined (mixed dtypes,
        or sizes other than the first sample's)."""
        import numpy as np

        groups = []
        sizes: list[int] = []
        for positions in (self.min_at, self.max_at):
            parts = [np.asarray(values[k]).reshape(-1) for k in positions]
            if len({p.dtype for p in parts}) > 1:
                return None  # joining would convert: fold one by one instead
            sizes += map(len, parts)
            groups.append(np.concatenate(parts) if parts else np.empty(0, np.float32))
        if self.sizes and sizes != self.sizes:
            return None
        return groups[0], groups[1]

    def _split(self) -> None:
        """Back to one running value per output (their sizes are those of the first sample)."""
        if self.joined is None or self.folded is None:
            return
        import numpy as np

        sizes = iter(self.sizes)
        for positions, joined in zip((self.min_at, self.max_at), self.joined, strict=True):
            if not positions:
                continue
            ends = np.cumsum([next(sizes) for _ in positions])
            for k, part in zip(positions, np.split(joined, ends[:-1]), strict=True):
                self.folded[k] = part
        self.joined = None


def _ranges_of_one_sample(self: Any, names: list[str], folded: list[Any]) -> Any:
    """ORT's MinMaxCalibrater.compute_data given a single folded sample, without its
    per-tensor ``np.nanmin([value], axis=0)``: over one row that is the row itself (NaN stays
    NaN, as nanmin leaves an all-NaN slice), so each range is the folded value. The tensor
    names, the pairing and the merge with earlier ranges are ORT's."""
    from onnxruntime.quantization.calibrate import CalibrationMethod, TensorsData

    added = names[self.num_model_outputs :]
    value_of = dict(zip(names, folded, strict=True))
    tensor_names = [added[i].rpartition("_")[0] for i in range(0, len(added), 2)]
    pairs = [
        (value_of[added[i]].copy(), value_of[added[i + 1]].copy()) for i in range(0, len(added), 2)
    ]
    ranges = TensorsData(CalibrationMethod.MinMax, dict(zip(tensor_names, pairs, strict=False)))
    if self.calibrate_tensors_range:
        self.calibrate_tensors_range = self.merge_range(self.calibrate_tensors_range, ranges)
    else:
        self.calibrate_tensors_range = ranges
    return self.calibrate_tensors_range


def streaming_histograms(stock_collect: Callable[..., Any]) -> Callable[..., Any]:
    """HistogramCalibrater.collect_data with memory bounded by one sample (see the module's
    docstring). ORT's own code runs where the exact equivalence does not hold: a second call
    (histograms merged across calls) or a reader that cannot rewind."""

    def collect_data(self: Any, data_reader: Any) -> None:
        if self.collector is not None or not callable(getattr(data_reader, "rewind", None)):
            stock_collect(self, data_reader)
            return
        from onnxruntime.quantization.calibrate import HistogramCollector

        session = self.infer_session
        input_names = {arg.name for arg in session.get_inputs()}
        names = [arg.name for arg in session.get_outputs()]
        wanted = [k for k, name in enumerate(names) if name in self.tensors_to_calibrate]
        absolute = self.method == "percentile" and self.symmetric
        ranges = _Ranges(len(wanted))
        kept: list[list[Any]] | None = []
        kept_bytes = 0
        for values in _outputs(session, data_reader, wanted, names, input_names):
            ranges.add(values)
            if kept is None:
                continue
            kept.append(values)
            kept_bytes += sum(v.nbytes for v in values)
            # Our readers know how many samples come: two passes are decided after the first
            # one, so their progress can cover both from the start.
            expected = kept_bytes * getattr(data_reader, "sample_count", 1)
            if kept_bytes > HISTOGRAM_KEEP_BYTES or (
                len(kept) == 1 and expected > HISTOGRAM_KEEP_BYTES
            ):
                kept = None
                if callable(getattr(data_reader, "plan_passes", None)):
                    data_reader.plan_passes(2)
        if ranges.samples == 0:
            raise ValueError("No data is collected.")
        self.collector = HistogramCollector(
            method=self.method,
            symmetric=self.symmetric,
            num_bins=self.num_bins,
            num_quantized_bins=self.num_quantized_bins,
            percentile=self.percentile,
            scenario=self.scenario,
        )
        if kept is not None:  # ORT's own call on what ORT would have kept
            self.collector.collect(
                {names[k]: [sample[j] for sample in kept] for j, k in enumerate(wanted)}
            )
        else:
            data_reader.rewind()
            self.collector.histogram_dict = _summed_histograms(
                session, data_reader, wanted, names, input_names, ranges, self.num_bins, absolute
            )
        self.clear_collected_data()

    return collect_data


def _outputs(
    session: Any, reader: Any, wanted: list[int], names: list[str], input_names: set[str]
) -> Any:
    """Per sample, the calibrated outputs (copied where an output is also an input, as ORT
    does to work around its onnxruntime#21922)."""
    import numpy as np

    while True:
        inputs = reader.get_next()
        if not inputs:
            return
        outputs = session.run(None, inputs)
        yield [np.copy(outputs[k]) if names[k] in input_names else outputs[k] for k in wanted]


class _Ranges:
    """Per tensor, over every sample so far: NaN-ignoring min and max of the values (ORT's
    np.nanmin/np.nanmax over all samples) and the NaN-propagating min and max of their
    absolute values (np.histogram's own range over |values|)."""

    def __init__(self, count: int) -> None:
        self.samples = 0
        self.low: list[Any] = [None] * count
        self.high: list[Any] = [None] * count
        self.abs_low: list[Any] = [None] * count
        self.abs_high: list[Any] = [None] * count
        self.dtype: list[Any] = [None] * count

    def add(self, values: list[Any]) -> None:
        import warnings

        import numpy as np

        self.samples += 1
        for j, value in enumerate(values):
            flat = np.asarray(value).reshape(-1)
            self.dtype[j] = flat.dtype
            if flat.size == 0:
                continue  # ORT's concatenation does not see an empty sample
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN sample
                low, high = np.nanmin(flat), np.nanmax(flat)
            magnitude = np.absolute(flat)
            pairs = (
                (self.low, low, np.fmin),
                (self.high, high, np.fmax),
                (self.abs_low, magnitude.min(), np.minimum),
                (self.abs_high, magnitude.max(), np.maximum),
            )
            for store, new, fold in pairs:
                store[j] = new if store[j] is None else fold(store[j], new)

    def value_range(self, j: int) -> tuple[Any, Any, Any]:
        """(min, max, threshold) as ORT's HistogramCollector.collect_value computes them."""
        import numpy as np

        if self.low[j] is None:
            zero = np.array(0, dtype=self.dtype[j])
            low, high = zero, zero
        else:
            low, high = self.low[j], self.high[j]
        return low, high, np.array(max(abs(low), abs(high)), dtype=self.dtype[j])


def _summed_histograms(
    session: Any,
    reader: Any,
    wanted: list[int],
    names: list[str],
    input_names: set[str],
    ranges: _Ranges,
    num_bins: int,
    absolute: bool,
) -> dict[str, tuple[Any, ...]]:
    """The second pass: per tensor, per-sample histograms over the global range, added up,
    in the tuples ORT's HistogramCollector stores (collect_value / collect_absolute_value)."""
    import numpy as np

    edges: list[tuple[Any, Any]] = []
    for j in range(len(wanted)):
        if absolute:  # np.histogram's own range over the absolute values (0–1 when empty)
            edges.append(
                (0, 1) if ranges.abs_low[j] is None else (ranges.abs_low[j], ranges.abs_high[j])
            )
        else:
            threshold = ranges.value_range(j)[2]
            edges.append((-threshold, threshold))
    counts: list[Any] = [None] * len(wanted)
    bin_edges: list[Any] = [None] * len(wanted)
    for values in _outputs(session, reader, wanted, names, input_names):
        for j, value in enumerate(values):
            flat = np.asarray(value).reshape(-1)
            if absolute:
                flat = np.absolute(flat)
            hist, bin_edges[j] = np.histogram(flat, num_bins, range=edges[j])
            counts[j] = hist if counts[j] is None else counts[j] + hist
    result: dict[str, tuple[Any, ...]] = {}
    for j, k in enumerate(wanted):
        low, high, threshold = ranges.value_range(j)
        if absolute:
            result[names[k]] = (counts[j], bin_edges[j].astype(ranges.dtype[j]), low, high)
        else:
            result[names[k]] = (counts[j], bin_edges[j], low, high, threshold)
    return result
