"""Execution providers: what each is called, which package brings it, and a colour for plots."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProviderInfo:
    """Static facts about one onnxruntime execution provider."""

    name: str  # ORT's name, e.g. "CUDAExecutionProvider"
    short: str  # what people say, e.g. "cuda"
    package: str  # the pip package that brings it
    colour: str


PROVIDERS: dict[str, ProviderInfo] = {
    p.name: p
    for p in [
        ProviderInfo("CPUExecutionProvider", "cpu", "onnxruntime", "#4f8fc0"),
        ProviderInfo("CUDAExecutionProvider", "cuda", "onnxruntime-gpu", "#76b900"),
        ProviderInfo(
            "TensorrtExecutionProvider", "tensorrt", "onnxruntime-gpu (with TensorRT)", "#2e7d32"
        ),
        ProviderInfo("OpenVINOExecutionProvider", "openvino", "onnxruntime-openvino", "#0068b5"),
        ProviderInfo("DmlExecutionProvider", "dml", "onnxruntime-directml", "#7e57c2"),
        ProviderInfo("CoreMLExecutionProvider", "coreml", "onnxruntime (macOS builds)", "#ff9800"),
        ProviderInfo("NnapiExecutionProvider", "nnapi", "onnxruntime-android", "#a4c639"),
        ProviderInfo("QNNExecutionProvider", "qnn", "onnxruntime-qnn", "#d32f2f"),
        ProviderInfo(
            "XnnpackExecutionProvider", "xnnpack", "onnxruntime (mobile/web builds)", "#8d6e63"
        ),
        ProviderInfo("DnnlExecutionProvider", "dnnl", "onnxruntime built with oneDNN", "#00796b"),
        ProviderInfo("ROCMExecutionProvider", "rocm", "onnxruntime-rocm", "#c62828"),
        ProviderInfo("MIGraphXExecutionProvider", "migraphx", "onnxruntime-migraphx", "#ad1457"),
        ProviderInfo("WebGpuExecutionProvider", "webgpu", "onnxruntime-web", "#5e35b1"),
        ProviderInfo(
            "AzureExecutionProvider", "azure", "onnxruntime (remote inference)", "#9e9e9e"
        ),
    ]
}


def resolve_provider(text: str) -> str:
    """``cuda`` / ``CUDA`` / ``CUDAExecutionProvider`` -> ``CUDAExecutionProvider``."""
    lowered = text.strip().lower()
    for info in PROVIDERS.values():
        if lowered in (
            info.short,
            info.name.lower(),
            info.name.lower().removesuffix("executionprovider"),
        ):
            return info.name
    if lowered.endswith("executionprovider"):
        return text.strip()
    return text.strip()[:1].upper() + text.strip()[1:] + "ExecutionProvider"


def short_name(provider: str) -> str:
    """``CUDAExecutionProvider`` -> ``cuda``."""
    info = PROVIDERS.get(provider)
    return info.short if info else provider.removesuffix("ExecutionProvider").lower()


def provider_colour(provider: str) -> str:
    """A stable colour for plots and overlays."""
    info = PROVIDERS.get(provider)
    return info.colour if info else "#9e9e9e"


def package_for(provider: str) -> str:
    """The package a user installs to get ``provider``."""
    info = PROVIDERS.get(provider)
    return info.package if info else "a custom onnxruntime build"
