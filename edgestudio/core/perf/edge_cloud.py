"""Edge vs cloud: when does running on the device beat sending the input to a server?"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EdgeCloudInputs:
    """Measured edge latency and the user's network and server figures."""

    edge_ms: float
    rtt_ms: float = 40.0
    upload_mbit_s: float = 10.0
    payload_kb: float = 150.0
    queue_ms: float = 5.0
    cloud_ms: float = 2.0


def upload_ms(payload_kb: float, upload_mbit_s: float) -> float:
    """Time to send ``payload_kb`` kilobytes at ``upload_mbit_s`` megabit/s (1 kB = 8 kbit)."""
    return payload_kb * 8.0 / upload_mbit_s if upload_mbit_s > 0 else float("inf")


def cloud_total_ms(i: EdgeCloudInputs, payload_kb: float | None = None) -> float:
    """Round trip + upload + queue + server inference."""
    kb = i.payload_kb if payload_kb is None else payload_kb
    return i.rtt_ms + upload_ms(kb, i.upload_mbit_s) + i.queue_ms + i.cloud_ms


def break_even_payload_kb(i: EdgeCloudInputs) -> float | None:
    """The payload above which the edge wins (None: the cloud never wins, or always wins)."""
    slack = i.edge_ms - i.rtt_ms - i.queue_ms - i.cloud_ms  # what the upload may cost
    if slack <= 0:
        return None  # even an empty payload is slower in the cloud
    return slack * i.upload_mbit_s / 8.0


def verdict(i: EdgeCloudInputs) -> str:
    """One sentence for the panel."""
    cloud = cloud_total_ms(i)
    if i.edge_ms <= cloud:
        penalty = i.edge_ms - i.cloud_ms
        why = (
            f"network and queue cost {cloud - i.cloud_ms:.3g} ms, more than the device's "
            f"compute penalty of {penalty:.3g} ms"
            if penalty > 0
            else "the device computes faster than the server does, before any network cost"
        )
        return (
            f"Edge wins: {i.edge_ms:.3g} ms on the device vs {cloud:.3g} ms through the "
            f"cloud ({why})."
        )
    even = break_even_payload_kb(i)
    where = f" Above {even:.0f} kB of input the edge would win." if even is not None else ""
    return (
        f"Cloud wins: {cloud:.3g} ms vs {i.edge_ms:.3g} ms on the device; the device's "
        f"compute penalty ({i.edge_ms - i.cloud_ms:.3g} ms) exceeds network and queue "
        f"({cloud - i.cloud_ms:.3g} ms).{where}"
    )
