"""The census's first pass: the original code of many model types in ONE process, eval and train mode.

``hf_census.py --stage scan`` runs this in a subprocess of the measured
interpreter; it is a *filter*, not the measurement of record. A fresh
process per model (verify's arm) costs about 30 s on the 2-core VM, most of
it importing torch and transformers; here the imports are paid once, so the
800 types of transformers 5.23 fit in a session. What a shared process could
change is contained: Dynamo is reset before every measurement (inside
:func:`graphmend_lint.verify.breaks.capture_breaks`), the RNG is re-seeded,
and transformers' ``warning_once`` memo is forgotten between models so a
warning seen by an earlier model still reaches Dynamo. The models whose scan
logs a break are then verified one by one in fresh processes
(``--stage verify``), and the report takes their counts from there.

``torch.compile(fullgraph=True)`` is not tried here (it is measured by the
verify stage for every breaking model): a model with one graph, no logged
site and no skipped frame is reported as such.

Usage: ``python census_scan.py CACHE_DIR TIMEOUT_S HF_CONFIG_JSON TARGET...`` with
each TARGET ``hf:<type>:<Class>`` and ``HF_CONFIG_JSON`` a ``{key: value}`` of
config fields for every model (``--hf-config``, e.g. MoE experts); writes ``CACHE_DIR/scan-<mode>/<type>.json``
for each target and mode, and names the target it is working on in
``CACHE_DIR/scan-current.txt`` so that the parent can tell which one
crashed the process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import platform
import signal
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MODES = ("eval", "train")


class Timeout(Exception):
    """The model ran past its time (SIGALRM)."""


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def expire(signum: int, frame: Any) -> None:
        raise Timeout(f"timed out after {seconds}s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def forget_warning_memos() -> None:
    """transformers' ``logger.warning_once`` is an ``lru_cache``: clear it so every model warns afresh."""
    from transformers.utils import logging as hf_logging

    for name in ("warning_once", "info_once"):
        memo = getattr(hf_logging, name, None)
        if hasattr(memo, "cache_clear"):
            memo.cache_clear()


def breaks_json(report: Any) -> dict[str, Any]:
    """A verify arm's ``breaks`` (``graphmend_lint/verify/arm.py``); fullgraph is not checked in the scan."""
    from graphmend_lint.verify.arm import breaks_json as arm_breaks_json

    return {**arm_breaks_json(report), "fullgraph": None}


def fresh_workload(target: str, train: bool, hf_config: dict[str, Any]) -> Any:
    """The model built again under the seed, as verify's arm does before each phase.

    Reusing the eagerly-run model would hide breaks: big_bird switches its
    attention module on the first call when the input is too short for block
    sparse attention, and under Dynamo that switch is what breaks (measured:
    4 logged sites on a fresh model, 0 on the one that already ran).
    """
    import torch

    from graphmend_lint.verify.targets import HfOptions, build_workload, parse_target
    from graphmend_lint.verify.training import set_train_mode

    torch.manual_seed(0)
    forget_warning_memos()
    config = tuple((None, key, value) for key, value in hf_config.items())
    workload = build_workload(dataclasses.replace(parse_target(target), hf=HfOptions(config)))
    if train:
        set_train_mode(workload.callable)
    return workload


def measure(target: str, mode: str, hf_config: dict[str, Any]) -> dict[str, Any]:
    """``{"arm": breaks}`` or ``{"error": "<phase> failed: ..."}`` for one target in one mode."""
    import torch

    from graphmend_lint.verify.breaks import capture_breaks_over
    from graphmend_lint.verify.targets import TargetError
    from graphmend_lint.verify.training import backward_gradients

    train = mode == "train"
    grad_mode = torch.enable_grad if train else torch.no_grad
    phase = "factory"
    try:
        workload = fresh_workload(target, train, hf_config)
        phase = "callable"
        with grad_mode():
            for args, kwargs in workload.inputs:
                torch.manual_seed(0)
                value = workload.callable(*args, **kwargs)
                if train:
                    phase = "backward"
                    backward_gradients(workload.callable, value)
                    phase = "callable"
        phase = "factory"
        workload = fresh_workload(target, train, hf_config)  # lazily initialised state must meet Dynamo as it meets a user
        phase = "dynamo"
        forget_warning_memos()
        with grad_mode():
            report = capture_breaks_over(workload.callable, workload.inputs, before_each=lambda: torch.manual_seed(0))
    except TargetError as error:
        return {"error": str(error)}
    except Exception as error:  # one model's failure is that model's skip reason
        message = f"{type(error).__name__}: {error}".strip()
        return {"error": f"{phase} failed: {message}"[:2000], "traceback": traceback.format_exc()[-3000:]}
    return {"arm": breaks_json(report)}


def main(argv: list[str]) -> int:
    cache_dir, timeout, hf_config, targets = Path(argv[0]), int(argv[1]), json.loads(argv[2]), argv[3:]
    import torch  # noqa: F401  (paid once, before the first model is timed)

    for target in targets:
        model_type = target.split(":")[1]
        (cache_dir / "scan-current.txt").write_text(target)
        for mode in MODES:
            started = time.perf_counter()
            try:
                with time_limit(timeout):
                    result = measure(target, mode, hf_config)
            except Timeout as error:
                result = {"error": str(error)}
            gc.collect()
            key = {"target": target, "mode": mode, "timeout_s": timeout, "method": "shared process",
                   "hf_config": hf_config}
            data = {"key": key, "host": platform.node(), "seconds": time.perf_counter() - started, **result}
            path = cache_dir / f"scan-{mode}" / f"{model_type}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(data, indent=1) + "\n")
    (cache_dir / "scan-current.txt").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
