"""What one call of a program does, observed from outside: returns, exception, stdout, log records, warnings.

A fix must not change any of these in eager mode. Values are snapshotted right
after the call (tensors detached and cloned), so later calls cannot mutate them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import logging
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

#: Tolerances for "the same number": fixes may reassociate float sums (documented as unsafe).
RTOL = 1e-5
ATOL = 1e-6
#: Dynamo and inductor log through loggers under these names; they are not the program's output.
_FRAMEWORK_LOGGERS = ("torch", "filelock", "urllib3")


@dataclass
class Outcome:
    """Everything one call made visible."""

    value: Any = None
    error: tuple[str, str] | None = None  # (exception type name, first line of its message)
    stdout: str = ""
    records: list[tuple[str, str, str]] = field(default_factory=list)  # (logger, level, message)
    warned: list[tuple[str, str]] = field(default_factory=list)  # (category, message)


class _RecordCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.records: list[tuple[str, str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if not record.name.startswith(_FRAMEWORK_LOGGERS):
            self.records.append((record.name, record.levelname, record.getMessage()))


@contextlib.contextmanager
def _observed(outcome: Outcome) -> Iterator[None]:
    """Capture stdout, log records reaching the root logger, and warnings, into ``outcome``."""
    collector = _RecordCollector()
    root = logging.getLogger()
    root.addHandler(collector)
    buffer = io.StringIO()
    try:
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(buffer):
            warnings.simplefilter("always")
            yield
    finally:
        root.removeHandler(collector)
        outcome.stdout = buffer.getvalue()
        outcome.records = collector.records
        outcome.warned = [(w.category.__name__, str(w.message)) for w in caught if not _torch_warning(w)]


def _torch_warning(caught: warnings.WarningMessage) -> bool:
    """A warning torch itself raised, not the program: from a file of the torch package, or from its C++
    core (``... (Triggered internally at .../python_variable_methods.cpp)``), which blames the Python frame
    that called into it. Many C++ warnings are ``TORCH_WARN_ONCE``, once per process: the program measured
    first in a worker shows ``.item()``'s "Converting a tensor with requires_grad=True to a scalar", and
    its fixed copy, measured next in the same process, does not."""
    in_torch = caught.filename.replace("\\", "/").split("/site-packages/")[-1].startswith("torch/")
    return in_torch or "(Triggered internally at " in str(caught.message) or _tensor_array_wrap(caught)


def _tensor_array_wrap(caught: warnings.WarningMessage) -> bool:
    """NumPy 2's deprecation of the signature of ``Tensor.__array_wrap__``, which every NumPy ufunc of a tensor
    (``np.sqrt(t)``) raises in the program's frame: a note on torch's method, not the program's own warning.
    A fix that computes with ``torch.sqrt`` instead (GM519) makes it go, and changes nothing else."""
    message = str(caught.message)
    return caught.category is DeprecationWarning and message.startswith("__array_wrap__ must accept context")


def observe(fn: Callable[..., Any], args: tuple[Any, ...]) -> Outcome:
    """Call ``fn(*args)`` and record what it did; an exception is recorded, not raised."""
    outcome = Outcome()
    with _observed(outcome):
        try:
            outcome.value = snapshot(fn(*args))
        except Exception as error:  # the program's own behaviour, compared later
            message = str(error).strip().splitlines()
            outcome.error = (type(error).__name__, message[0] if message else "")
    return outcome


def snapshot(value: Any) -> Any:
    """A comparable copy of a return value: containers rebuilt, tensors detached and cloned."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"<dataclass>": type(value).__name__, **{f.name: snapshot(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, dict):
        return {key: snapshot(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(snapshot(item) for item in value) if type(value) in (list, tuple) else tuple(snapshot(item) for item in value)
    if isinstance(value, (int, float, complex, str, bytes, bool, type(None))):
        return value
    if isinstance(value, torch.nn.Module):
        return f"<module {type(value).__name__}>"
    return f"<{type(value).__name__}>"


def value_difference(expected: Any, actual: Any, path: str = "result") -> str | None:
    """Where two snapshots differ (``None`` when equal within RTOL/ATOL, NaNs equal)."""
    if isinstance(expected, torch.Tensor) or isinstance(actual, torch.Tensor):
        if not (isinstance(expected, torch.Tensor) and isinstance(actual, torch.Tensor)):
            return f"{path}: {type(expected).__name__} vs {type(actual).__name__}"
        if expected.dtype != actual.dtype or expected.shape != actual.shape:
            return f"{path}: {expected.dtype}{list(expected.shape)} vs {actual.dtype}{list(actual.shape)}"
        if expected.is_floating_point() or expected.is_complex():
            same = torch.allclose(expected, actual, rtol=RTOL, atol=ATOL, equal_nan=True)
        else:
            same = torch.equal(expected, actual)
        return None if same else f"{path}: tensor values differ"
    if type(expected) is not type(actual):
        return f"{path}: {type(expected).__name__} vs {type(actual).__name__}"
    if isinstance(expected, dict):
        if list(expected) != list(actual):
            return f"{path}: keys {list(expected)} vs {list(actual)}"
        return next((d for key in expected if (d := value_difference(expected[key], actual[key], f"{path}[{key!r}]"))), None)
    if isinstance(expected, (list, tuple)):
        if len(expected) != len(actual):
            return f"{path}: length {len(expected)} vs {len(actual)}"
        return next((d for i, (e, a) in enumerate(zip(expected, actual)) if (d := value_difference(e, a, f"{path}[{i}]"))), None)
    if isinstance(expected, float) and expected != expected and actual != actual:
        return None  # both NaN
    if isinstance(expected, float):
        return None if abs(expected - actual) <= ATOL + RTOL * abs(expected) else f"{path}: {expected!r} vs {actual!r}"
    return None if expected == actual else f"{path}: {expected!r} vs {actual!r}"


def outcome_differences(expected: Outcome, actual: Outcome, compare_values: bool = True) -> list[str]:
    """Every visible difference between two calls: exception, value, stdout, log records, warnings."""
    differences = []
    if expected.error != actual.error:
        differences.append(f"exception {expected.error} vs {actual.error}")
    elif compare_values and expected.error is None:
        if (difference := value_difference(expected.value, actual.value)) is not None:
            differences.append(difference)
    if expected.stdout != actual.stdout:
        differences.append(f"stdout {expected.stdout[:120]!r} vs {actual.stdout[:120]!r}")
    if expected.records != actual.records:
        differences.append(f"log records {expected.records[:3]} vs {actual.records[:3]}")
    if expected.warned != actual.warned:
        differences.append(f"warnings {expected.warned[:3]} vs {actual.warned[:3]}")
    return differences
