"""Timers and benchmarking; the CUDA path runs on CPU against a fake ``torch.cuda``."""

from __future__ import annotations

import pytest

from graphmend_lint.verify.bench import (
    BenchOptions,
    CpuTimer,
    CudaTimer,
    bench_compiled,
    bench_eager,
    steady,
    timer_for,
)


class FakeCuda:
    """Records what the CUDA timer does; each event pair reports ``step_ms`` more than the last."""

    def __init__(self, step_ms: float = 2.0) -> None:
        self.log: list[str] = []
        self.step_ms = step_ms
        self.pairs = 0
        cuda = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                assert enable_timing, "timing events must be created with enable_timing=True"
                self.recorded = False

            def record(self) -> None:
                self.recorded = True
                cuda.log.append("record")

            def synchronize(self) -> None:
                cuda.log.append("event-sync")

            def elapsed_time(self, end: "Event") -> float:
                assert self.recorded and end.recorded
                cuda.pairs += 1
                return cuda.step_ms * cuda.pairs

        self.Event = Event

    def synchronize(self) -> None:
        self.log.append("sync")


def test_cuda_timer_uses_events_and_milliseconds():
    cuda = FakeCuda(step_ms=250.0)
    calls = []
    seconds = CudaTimer(cuda).elapsed_s(lambda: calls.append("call"))
    assert seconds == pytest.approx(0.25)
    assert cuda.log == ["record", "record", "event-sync"]
    assert calls == ["call"]


def test_bench_compiled_on_the_cuda_path():
    cuda = FakeCuda(step_ms=1.0)
    compiled_calls = []

    def fake_compile(fn):
        def compiled(*args, **kwargs):
            cuda.log.append("run")
            compiled_calls.append((args, kwargs))
            return fn(*args, **kwargs)

        return compiled

    options = BenchOptions(iters=5, warmup=2)
    latency = bench_compiled(lambda x, k=0: x + k, ((1,), {"k": 2}), options, CudaTimer(cuda), fake_compile)
    # cold start: wall clock between two synchronisations around the first call
    assert cuda.log[:3] == ["sync", "run", "sync"]
    assert len(compiled_calls) == 1 + 2 + 5
    assert compiled_calls[0] == ((1,), {"k": 2})
    # samples are 1..5 ms: median 3, p90 the 5th of 5
    assert (latency.steady_ms, latency.p90_ms) == (3.0, 5.0)
    assert latency.cold_s is not None and latency.cold_s >= 0


def test_timer_for_picks_the_device():
    assert isinstance(timer_for("cpu"), CpuTimer)
    cuda_timer = timer_for("cuda:1")
    assert isinstance(cuda_timer, CudaTimer) and cuda_timer.device == "cuda:1"


def test_cpu_steady_and_eager():
    options = BenchOptions(iters=4, warmup=1)
    calls = []
    latency = bench_eager(lambda: calls.append(1), ((), {}), options, CpuTimer())
    assert len(calls) == 5 and latency.cold_s is None
    assert 0 <= latency.steady_ms <= latency.p90_ms


def test_steady_rejects_no_iterations():
    with pytest.raises(ValueError):
        steady(CpuTimer(), lambda: None, iters=0, warmup=0)


def test_gc_is_paused_while_sampling_only():
    import gc

    seen = []
    latency = steady(CpuTimer(), lambda: seen.append(gc.isenabled()), iters=3, warmup=2)
    assert seen == [True, True, False, False, False]
    assert gc.isenabled() and latency.steady_ms >= 0
