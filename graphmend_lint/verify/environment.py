"""The machine, device and versions a measurement was taken on.

Break counts depend on the torch and transformers versions, timings on the
device; a report without them cannot be compared with another one.
"""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from typing import Any


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _cpu_name() -> str:
    """The CPU model from /proc/cpuinfo where there is one, else what platform knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as stream:
            for line in stream:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe(device: str) -> dict[str, Any]:
    """A JSON-able description of this process's environment for ``device``."""
    import torch

    if device.startswith("cuda"):
        device_name = torch.cuda.get_device_name(torch.device(device))
    else:
        device_name = f"{_cpu_name()} ({os.cpu_count()} cores)"
    return {
        "torch": torch.__version__,
        "transformers": _version("transformers"),
        "python": platform.python_version(),
        "device": device,
        "device_name": device_name,
        "torch_threads": torch.get_num_threads(),
        "machine": f"{platform.node()} {platform.system()} {platform.machine()}",
        "executable": sys.executable,
    }
