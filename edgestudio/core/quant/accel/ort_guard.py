"""Whether the indexed stand-ins may replace onnxruntime's quantization helpers: only on the
onnxruntime version they were written and tested against, and only while each function they
replace (or rely on) has the source it had then."""

from __future__ import annotations

import functools
import hashlib
import inspect
from collections.abc import Callable
from typing import Any

SUPPORTED_VERSION = "1.32.0"

# sha256 (first 16 hex) of each replaced function's source in the supported version: a change
# means our stand-in may no longer match what it replaces.
EXPECTED_SOURCE = {
    "quant_utils.find_by_name": "40cf7740b42609de",
    "ONNXModel.get_initializer": "9246321687c546d4",
    "ONNXModel.find_node_by_name": "7473866402fc5a00",
    "ONNXModel.replace_input_of_all_nodes": "dc01c5a634a1e3c1",
    "ONNXModel.replace_output_of_all_nodes": "c50ea5ed645ee813",
    "ONNXModel.replace_input_of_nodes": "3c7b558cd10d1a6e",
    "ONNXModel.replace_output_of_nodes": "226ca0ba267f2200",
    "ONNXModel.replace_node_input": "161a2ad57d6b1ee7",
    "ONNXModel.replace_node_output": "bcca3f179f2f42bb",
    "ONNXModel.initializer_extend": "97d3149606630924",
    "ONNXModel._check_init": "7ff484d0442990d9",
    "ONNXModel.remove_initializer": "af14720c5446adb6",
    "ONNXModel.remove_node": "f32022433395cf13",  # watched, not replaced: we rely on it
    "ONNXModel.input_name_to_nodes": "e507ed8b6d71f027",
    "ONNXModel.output_name_to_node": "b154751fe1ea52cd",
    "MinMaxCalibrater.augment_graph": "fce1d4bdb6e14d7a",
    "MinMaxCalibrater.collect_data": "c9854d7ec050ac98",
    "CalibraterBase.create_inference_session": "ced245cd08569f7f",
    "onnx_model._clean_initializers_helper": "a9b3358dff2116bd",
    "MinMaxCalibrater.compute_data": "e8e499dd5f2cb16a",  # watched, not replaced: we rely on it
    "HistogramCalibrater.collect_data": "13d0ad2597cf338a",
    # watched, not replaced: the histogram stand-in relies on what these compute
    "HistogramCalibrater.augment_graph": "e1c7d3d55540a3c8",
    "HistogramCollector.collect": "70326b61d1af419c",
    "HistogramCollector.collect_value": "3d41ddc2b4448d1f",
    "HistogramCollector.collect_absolute_value": "b29451ab578d706c",
    "quant_utils.save_and_reload_model_with_shape_infer": "a786368a762a611d",
    # watched, not replaced: the in-memory reload does what these do
    "quant_utils.load_model_with_shape_infer": "595bdf9400f3c31b",
    "quant_utils.add_infer_metadata": "06ce23b138366e59",
    "ONNXModel.topological_sort": "1feb35a3069478d3",
}
# Modules that import find_by_name by name (their own reference must be replaced too).
FIND_BY_NAME_USERS = (
    "quant_utils",
    "onnx_model",
    "base_quantizer",
    "onnx_quantizer",
    "qdq_quantizer",
    "operators.conv",
    "operators.matmul",
)
# ... and those that import save_and_reload_model_with_shape_infer by name.
RELOAD_USERS = ("quant_utils", "base_quantizer", "onnx_quantizer", "quantize", "shape_inference")


@functools.cache
def source_hash(func: Callable[..., Any]) -> str | None:
    """The function's source hash; None where there is no source (a packaged app ships only
    bytecode, of the very onnxruntime version it was built and tested with). Kept per function
    object: reading and hashing twenty sources costs ~30 ms per quantization otherwise."""
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError):
        return None
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def replaced_functions() -> dict[str, Callable[..., Any]]:
    """Each function the stand-ins replace (or rely on), by the name EXPECTED_SOURCE uses."""
    from onnxruntime.quantization import calibrate, onnx_model, quant_utils

    model_cls = onnx_model.ONNXModel
    return {
        "quant_utils.find_by_name": quant_utils.find_by_name,
        "ONNXModel.get_initializer": model_cls.get_initializer,
        "ONNXModel.find_node_by_name": model_cls.find_node_by_name,
        "ONNXModel.replace_input_of_all_nodes": model_cls.replace_input_of_all_nodes,
        "ONNXModel.replace_output_of_all_nodes": model_cls.replace_output_of_all_nodes,
        "ONNXModel.replace_input_of_nodes": model_cls.replace_input_of_nodes,
        "ONNXModel.replace_output_of_nodes": model_cls.replace_output_of_nodes,
        "ONNXModel.replace_node_input": model_cls.replace_node_input,
        "ONNXModel.replace_node_output": model_cls.replace_node_output,
        "ONNXModel.initializer_extend": model_cls.initializer_extend,
        "ONNXModel._check_init": model_cls._check_init,
        "ONNXModel.remove_initializer": model_cls.remove_initializer,
        "ONNXModel.remove_node": model_cls.remove_node,
        "ONNXModel.input_name_to_nodes": model_cls.input_name_to_nodes,
        "ONNXModel.output_name_to_node": model_cls.output_name_to_node,
        "MinMaxCalibrater.augment_graph": calibrate.MinMaxCalibrater.augment_graph,
        "MinMaxCalibrater.collect_data": calibrate.MinMaxCalibrater.collect_data,
        "CalibraterBase.create_inference_session": (
            calibrate.CalibraterBase.create_inference_session
        ),
        "onnx_model._clean_initializers_helper": onnx_model._clean_initializers_helper,
        "MinMaxCalibrater.compute_data": calibrate.MinMaxCalibrater.compute_data,
        "HistogramCalibrater.collect_data": calibrate.HistogramCalibrater.collect_data,
        "HistogramCalibrater.augment_graph": calibrate.HistogramCalibrater.augment_graph,
        "HistogramCollector.collect": calibrate.HistogramCollector.collect,
        "HistogramCollector.collect_value": calibrate.HistogramCollector.collect_value,
        "HistogramCollector.collect_absolute_value": (
            calibrate.HistogramCollector.collect_absolute_value
        ),
        "quant_utils.save_and_reload_model_with_shape_infer": (
            quant_utils.save_and_reload_model_with_shape_infer
        ),
        "quant_utils.load_model_with_shape_infer": quant_utils.load_model_with_shape_infer,
        "quant_utils.add_infer_metadata": quant_utils.add_infer_metadata,
        "ONNXModel.topological_sort": model_cls.topological_sort,
    }


def unsupported_reason() -> str | None:
    """Why the accelerated path cannot be used with the installed onnxruntime (None: it can)."""
    try:
        import onnxruntime
    except ImportError:
        return "onnxruntime is not installed"
    if onnxruntime.__version__ != SUPPORTED_VERSION:
        return (
            f"it was written for onnxruntime {SUPPORTED_VERSION}, this is {onnxruntime.__version__}"
        )
    try:
        targets = replaced_functions()
    except (ImportError, AttributeError) as exc:
        return f"onnxruntime's quantization module changed ({exc})"
    for name, func in targets.items():
        got = source_hash(func)
        if got is not None and got != EXPECTED_SOURCE.get(name):
            return f"onnxruntime's {name} is not the version it was written for"
    return None
