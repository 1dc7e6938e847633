"""Edge-vs-cloud arithmetic."""

import pytest

from edgestudio.core.perf.edge_cloud import (
    EdgeCloudInputs,
    break_even_payload_kb,
    cloud_total_ms,
    upload_ms,
    verdict,
)


def test_totals_and_break_even() -> None:
    i = EdgeCloudInputs(
        edge_ms=60, rtt_ms=20, upload_mbit_s=8, payload_kb=100, queue_ms=5, cloud_ms=5
    )
    assert upload_ms(100, 8) == 100.0  # 800 kbit at 8 Mbit/s
    assert cloud_total_ms(i) == 130.0
    assert break_even_payload_kb(i) == pytest.approx(30.0)  # 30 ms of slack × 8 Mbit/s / 8
    assert cloud_total_ms(i, 30.0) == pytest.approx(60.0)
    assert verdict(i).startswith("Edge wins")


def test_cloud_wins_for_a_slow_device() -> None:
    i = EdgeCloudInputs(edge_ms=500, rtt_ms=20, upload_mbit_s=100, payload_kb=10)
    assert verdict(i).startswith("Cloud wins") and "Above" in verdict(i)
    assert break_even_payload_kb(EdgeCloudInputs(edge_ms=10, rtt_ms=20)) is None
