"""``edgestudio device add | list | check | remove``: the target devices reached over SSH."""

from __future__ import annotations

import argparse
import sys

from edgestudio.cli.job_ui import EXIT_JOB_FAILED, EXIT_OK, add_timeout_arg, execute_job
from edgestudio.cli.json_option import add_json_option
from edgestudio.cli.output import print_table
from edgestudio.core.formatting import human_bytes
from edgestudio.core.job_api.arguments import add_spelled
from edgestudio.core.perf.bench_recipes import DeviceCheckRecipe
from edgestudio.core.remote.device_info import DeviceInfo
from edgestudio.core.remote.devices import (
    Device,
    DeviceError,
    add_device,
    device_named,
    load_devices,
    make_device,
    remove_device,
)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``device`` and its actions."""
    p = subparsers.add_parser(
        "device",
        help="target devices reached over SSH (add, list, check, remove)",
        description="Devices to benchmark and profile on (`bench --device NAME`). A device is "
        "reached over SSH with your agent or keys (never a stored password); its host key is "
        "checked as OpenSSH does. It needs Python 3.8+ with numpy and onnxruntime. A device "
        "can also be another Python environment on this machine (env:PYTHON): `make "
        "openvino-env` makes one with OpenVINO's onnxruntime, listed as 'openvino'.",
    )
    actions = p.add_subparsers(
        dest="action", metavar="ACTION", required=True, help="add, list, check or remove"
    )
    a = actions.add_parser("add", help="add (or replace) a device and check it")
    a.add_argument("name", help="a short name, e.g. pi5")
    a.add_argument(
        "address",
        help="ssh://user@host[:port], or env:PYTHON for another Python environment here "
        "(an onnxruntime build that cannot live beside the app's)",
    )
    a.add_argument(
        "--python",
        default="python3",
        help="the device's Python with onnxruntime (default %(default)s)",
    )
    a.add_argument("--key", default="", help="a private key file (default: agent, ~/.ssh keys)")
    _trust_args(a)
    add_json_option(a, "the device's check")
    a.set_defaults(func=run_add)
    lst = actions.add_parser("list", help="the devices you added")
    lst.set_defaults(func=run_list)
    c = actions.add_parser("check", help="what a device has: CPU, memory, Python, onnxruntime")
    add_spelled(c, DeviceCheckRecipe)
    _trust_args(c)
    add_json_option(c, "the device's check")
    add_timeout_arg(c, "the check")
    c.set_defaults(func=run_check, make_recipe=check_recipe_from_args)
    r = actions.add_parser("remove", help="forget a device")
    r.add_argument("name", help="the device's name")
    r.set_defaults(func=run_remove)


def _trust_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--trust-host-key",
        metavar="FINGERPRINT",
        help="trust the device's host key if it is this one (SHA256:…); without it "
        "you are asked, on a terminal",
    )


def confirm_host_key(device: Device, expected: str | None) -> bool:
    """Make sure the device's host key is trusted: asks for an unknown one (or compares it with
    ``expected``), refuses a changed one. False when the user did not trust it."""
    from edgestudio.core.remote.runner_calls import run_async
    from edgestudio.core.remote.ssh_link import (
        HostKeyChangedError,
        host_key_state,
        trust_host_key,
    )

    if device.environment:  # a Python on this machine: no host key to trust
        return True
    state, key = run_async(host_key_state(device))
    if state == "trusted":
        return True
    if state == "changed":
        raise HostKeyChangedError(device)
    fingerprint = key.get_fingerprint()
    print(
        f"The authenticity of {device.name} ({device.host}:{device.port}) can't be "
        f"established.\n{key.get_algorithm()} key fingerprint is {fingerprint}."
    )
    if expected is not None:
        if expected.strip() != fingerprint:
            print(
                f"edgestudio: error: that is not {expected}: the host key was not trusted",
                file=sys.stderr,
            )
            return False
    elif not sys.stdin.isatty():
        print(
            "edgestudio: error: not trusted (no terminal to ask on): compare the fingerprint "
            "with the device's (`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` on it) "
            "and pass --trust-host-key FINGERPRINT",
            file=sys.stderr,
        )
        return False
    elif input("Trust it and continue (yes/no)? ").strip().lower() not in ("y", "yes"):
        return False
    trust_host_key(device, key)
    print(f"Trusted {device.name}'s host key {fingerprint}.")
    return True


def print_device_info(info: DeviceInfo) -> None:
    """The device check as a table, then its problems with their fixes."""
    memory = human_bytes(info.memory_bytes) if info.memory_bytes else "?"
    free = human_bytes(info.free_bytes) if info.free_bytes is not None else "?"
    rows = [
        ["address", info.address],
        ["os", info.os],
        ["cpu", f"{info.cpu} ({info.machine}, {info.cores} cores)"],
        ["cpu features", ", ".join(info.cpu_flags) or "none of those EdgeStudio looks for"],
        ["memory", memory],
        ["python", f"{info.python} ({info.python_path})"],
        ["numpy", info.numpy or "missing"],
        ["onnxruntime", info.onnxruntime or "missing"],
        ["providers", ", ".join(info.providers) or "-"],
        ["onnxruntime-qnn", info.qnn or "- (target compile --device needs it)"],
        ["cache", f"{info.cache} ({free} free)"],
    ]
    print_table(["", info.name], rows, title=f"Device {info.name}")
    for problem in info.problems:
        print(f"unusable: {problem}")
    if info.usable:
        print(f"{info.name} can run models: `edgestudio bench MODEL --device local,{info.name}`")


def _check(device: Device, args: argparse.Namespace) -> int:
    if not confirm_host_key(device, args.trust_host_key):
        return EXIT_JOB_FAILED
    code, job = execute_job(DeviceCheckRecipe(device=device.name), args, show_report=False)
    if job is not None and job.report is not None:
        info = job.report.result
        print_device_info(info)
        if info.problems:
            return EXIT_JOB_FAILED
    return code


def check_recipe_from_args(args: argparse.Namespace) -> DeviceCheckRecipe:
    """The check the parsed arguments describe."""
    return DeviceCheckRecipe(device=args.device)


def run_add(args: argparse.Namespace) -> int:
    """Add the device (after its host key is trusted) and check it."""
    device = make_device(args.name, args.address, args.python, args.key)
    if not confirm_host_key(device, args.trust_host_key):
        print("edgestudio: the device was not added", file=sys.stderr)
        return EXIT_JOB_FAILED
    add_device(device)
    print(f"Added {device.name} ({device.address}, Python {device.python}).")
    return _check(device, args)


def run_check(args: argparse.Namespace) -> int:
    """Check the device called ``args.device``."""
    return _check(device_named(args.device), args)


def run_list(args: argparse.Namespace) -> int:
    """The devices as a table."""
    devices = load_devices()
    if not devices:
        print("No devices yet: edgestudio device add NAME ssh://user@host")
        return EXIT_OK
    print_table(
        ["name", "address", "python", "key"],
        [[d.name, d.address, d.python, d.key or "agent / default"] for d in devices.values()],
    )
    return EXIT_OK


def run_remove(args: argparse.Namespace) -> int:
    """Forget a device."""
    try:
        remove_device(args.name)
    except DeviceError as exc:
        print(f"edgestudio: error: {exc}", file=sys.stderr)
        return EXIT_JOB_FAILED
    print(f"Removed {args.name}.")
    return EXIT_OK
