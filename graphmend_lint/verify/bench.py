"""Latency of a callable, compiled and eager, behind a device-neutral :class:`Timer`.

Cold start is the first compiled call, compilation included, timed on the
wall clock between two device synchronisations (compilation is host work, so
device events alone would not see it). Steady state is the median and 90th
percentile of ``iters`` calls after ``warmup`` calls, timed by the device's
own clock: ``time.perf_counter`` on CPU, ``torch.cuda.Event`` pairs on CUDA
(host timers would only measure kernel launches there).

The CUDA path takes the ``torch.cuda`` namespace as a parameter, so tests
exercise it on CPU with a fake one.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from graphmend_lint.verify.workload import InputSet


class Timer(Protocol):
    """How one device waits for its work and times one call."""

    device: str

    def synchronize(self) -> None:
        """Block until all queued work on the device is done."""

    def elapsed_s(self, call: Callable[[], Any]) -> float:
        """Seconds the device spent on ``call()``."""


class CpuTimer:
    """Host work is synchronous: the wall clock is the device clock."""

    device = "cpu"

    def synchronize(self) -> None:
        return None

    def elapsed_s(self, call: Callable[[], Any]) -> float:
        start = time.perf_counter()
        call()
        return time.perf_counter() - start


class CudaTimer:
    """CUDA events around the call; ``cuda`` is ``torch.cuda`` or a stand-in with the same API."""

    def __init__(self, cuda: Any, device: str = "cuda") -> None:
        self.cuda = cuda
        self.device = device

    def synchronize(self) -> None:
        self.cuda.synchronize()

    def elapsed_s(self, call: Callable[[], Any]) -> float:
        start = self.cuda.Event(enable_timing=True)
        end = self.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1000.0  # elapsed_time is in milliseconds


def timer_for(device: str) -> Timer:
    """The timer for a torch device string (``cpu``, ``cuda``, ``cuda:1``)."""
    if device.startswith("cuda"):
        import torch

        return CudaTimer(torch.cuda, device)
    return CpuTimer()


@dataclass(frozen=True)
class Latency:
    """One arm's timings; ``cold_s`` is None for the eager baseline."""

    cold_s: float | None
    steady_ms: float
    p90_ms: float


@dataclass(frozen=True)
class BenchOptions:
    """``--bench`` settings."""

    backend: str = "inductor"
    mode: str | None = None
    iters: int = 20
    warmup: int = 3


def wall_s(timer: Timer, call: Callable[[], Any]) -> float:
    """Wall-clock seconds of ``call()``, all device work included."""
    timer.synchronize()
    start = time.perf_counter()
    call()
    timer.synchronize()
    return time.perf_counter() - start


def steady(timer: Timer, call: Callable[[], Any], iters: int, warmup: int) -> Latency:
    """Median and p90 (milliseconds) of ``iters`` timed calls after ``warmup`` untimed ones.

    The garbage collector is run, then paused while sampling, as ``timeit``
    does: the fixed arm holds the linter's syntax trees, and collections
    scanning them would otherwise land in its samples and not the original's.
    """
    if iters < 1:
        raise ValueError("iters must be at least 1")
    for _ in range(warmup):
        call()
    timer.synchronize()
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        samples = sorted(timer.elapsed_s(call) * 1000.0 for _ in range(iters))
    finally:
        if was_enabled:
            gc.enable()
    p90 = samples[math.ceil(0.9 * len(samples)) - 1]  # nearest-rank percentile
    return Latency(None, statistics.median(samples), p90)


def bench_compiled(
    fn: Callable[..., Any],
    inputs: InputSet,
    options: BenchOptions,
    timer: Timer,
    compile_fn: Callable[..., Callable[..., Any]] | None = None,
) -> Latency:
    """Cold start and steady state of ``compile_fn(fn)`` on one input set.

    ``compile_fn`` defaults to ``torch.compile`` with the options' backend and
    mode, from a reset Dynamo so the cold start really compiles.
    """
    args, kwargs = inputs
    if compile_fn is None:
        import torch

        torch._dynamo.reset()
        compiled = torch.compile(fn, backend=options.backend, mode=options.mode)
    else:
        compiled = compile_fn(fn)
    cold = wall_s(timer, lambda: compiled(*args, **kwargs))
    warm = steady(timer, lambda: compiled(*args, **kwargs), options.iters, options.warmup)
    return Latency(cold, warm.steady_ms, warm.p90_ms)


def bench_eager(fn: Callable[..., Any], inputs: InputSet, options: BenchOptions, timer: Timer) -> Latency:
    """The uncompiled baseline, timed like the steady state."""
    args, kwargs = inputs
    return steady(timer, lambda: fn(*args, **kwargs), options.iters, options.warmup)
