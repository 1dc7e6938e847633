"""The device list: addresses, names, storage (no SSH needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgestudio.core.remote.devices import (
    DeviceError,
    device_named,
    load_devices,
    make_device,
    parse_address,
    remove_device,
    save_devices,
)


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("ssh://pi@raspberrypi.local", ("pi", "raspberrypi.local", 22)),
        ("ssh://pi@10.0.0.7:2222", ("pi", "10.0.0.7", 2222)),
        ("jetson.lan", ("", "jetson.lan", 22)),
        ("ubuntu@[fe80::1]:22", ("ubuntu", "fe80::1", 22)),
    ],
)
def test_addresses(address: str, expected: tuple[str, str, int]) -> None:
    assert parse_address(address) == expected


@pytest.mark.parametrize(
    ("name", "address", "words"),
    [
        ("pi", "http://pi", "not an ssh:// address"),
        ("pi", "ssh://pi@host:99999", "port"),
        ("pi", "ssh://", "names no host"),
        ("local", "ssh://pi@host", "this machine"),
        ("a b", "ssh://pi@host", "cannot name a device"),
    ],
)
def test_bad_devices_say_why(name: str, address: str, words: str) -> None:
    with pytest.raises(DeviceError, match=words):
        make_device(name, address)


def test_devices_are_stored_per_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    from edgestudio.core.remote import devices

    monkeypatch.setattr(devices, "made_environments", dict)  # only the user's devices here
    assert load_devices() == {}
    pi = make_device("pi", "ssh://pi@host:2200", python="/opt/venv/bin/python")
    save_devices({"pi": pi})
    assert device_named("pi") == pi and pi.address == "ssh://pi@host:2200"
    with pytest.raises(DeviceError, match="devices: pi"):
        device_named("jetson")
    remove_device("pi")
    assert load_devices() == {}
    (tmp_path / "edgestudio" / "devices.json").write_text("{not json")
    with pytest.raises(DeviceError, match="damaged"):
        load_devices()


def test_reports_say_where_each_latency_was_measured() -> None:
    from edgestudio.core.perf.perf_results import Latency, LatencyRow
    from edgestudio.core.serialise import from_json, to_json
    from edgestudio.core.workspace.report import ReportData, render_html

    rows = [
        LatencyRow("m.onnx", "CPUExecutionProvider", 1, median_ms=2.0, runtime="1.32.0"),
        LatencyRow(
            "m.onnx", "CPUExecutionProvider", 1, median_ms=9.0, device="pi5", runtime="1.22.1"
        ),
    ]
    assert from_json(list[LatencyRow], to_json(rows)) == rows  # workspaces keep them
    html = render_html(
        ReportData(title="m", summary={}, latency=Latency(rows, [], ["pi5: link lost"]))
    )
    assert "pi5 (onnxruntime 1.22.1)" in html and "this machine (onnxruntime 1.32.0)" in html
    assert "pi5: link lost" in html
