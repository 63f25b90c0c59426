"""Measure rule-catalog programs with real Dynamo, in a process of their own.

Run as ``python tests/catalog_dynamo_worker.py`` with a JSON request on stdin:
``{"programs": [path, ...], "pairs": [[bad, fixed], ...]}``. It prints one
JSON object: for each program the break sites Dynamo logged, and for each
pair whether the fixed program computes what the bad one does (eagerly and
compiled) and compiles with ``fullgraph=True``.

A fresh process keeps the measurements independent of the test session, and
``torch._dynamo.config`` is restored after each program, because some
programs turn Dynamo settings on at import (``capture_scalar_outputs``).

A break is attributed to the *innermost frame of the program's own file* in
the stack Dynamo logs. For most breaks that is the line Dynamo names; for a
break Dynamo names inside the standard library (``copy.deepcopy``:
``copy.py``) or torch (``nn.Module.__setattr__``) it is the program line that
called into it, which is where a rule reports.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import logging
import os
import re
import sys
import warnings
from typing import Any

import torch
import torch._dynamo
from torch._logging._internal import log_registry

from graphmend_lint.verify.breaks import capture_breaks_over

RTOL, ATOL = 1e-5, 1e-6
_FRAME_RE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in ', re.MULTILINE)
_HEADER_RE = re.compile(r"in user code at (?P<file>.+):(?P<line>\d+)$", re.MULTILINE)
_GB_RE = re.compile(r"/gb/(gb\d+)\.html", re.IGNORECASE)


class _Messages(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


_MESSAGES = _Messages()
for _name in log_registry.get_artifact_log_qnames():
    if _name.endswith(".__graph_breaks"):
        logging.getLogger(_name).addHandler(_MESSAGES)


def _same_file(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def attributed_sites(messages: list[str], program: str) -> set[tuple[int, str]]:
    """``(line, GB id)`` of each logged break, at the innermost frame in *program*."""
    sites = set()
    for message in messages:
        gb = _GB_RE.search(message)
        if gb is None:
            continue
        frames = [(m["file"], int(m["line"])) for m in _FRAME_RE.finditer(message)]
        own = [line for file, line in frames if _same_file(file, program)]
        header = _HEADER_RE.search(message)
        if own:
            sites.add((own[-1], gb.group(1).upper()))
        elif header and _same_file(header["file"], program):
            sites.add((int(header["line"]), gb.group(1).upper()))
    return sites


def _load(path: str) -> Any:
    name = "catalog_" + re.sub(r"\W", "_", os.path.relpath(path))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def _restored_dynamo_config():
    saved = torch._dynamo.config.get_config_copy()
    try:
        yield
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated keys warn when written back
            torch._dynamo.config.load_config(saved)


def _quiet():
    """Programs print and warn; keep the JSON on stdout clean."""
    stack = contextlib.ExitStack()
    stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("ignore")
    return stack


def measure(path: str) -> dict[str, Any]:
    with _restored_dynamo_config(), _quiet():
        fn, inputs = _load(path).make()
        _MESSAGES.messages.clear()
        input_sets = [(tuple(args), {}) for args in inputs]
        try:
            report = capture_breaks_over(fn, input_sets, before_each=lambda: torch.manual_seed(0))
        except Exception as error:  # compilation failed outright (GB4315): no break to attribute
            gb = _GB_RE.search(str(error))
            return {"compile_error": gb.group(1).upper() if gb else type(error).__name__, "sites": [],
                    "outside": [], "attributed": [], "skipped_frames": [], "break_count": 0, "graph_count": 0}
        messages = list(_MESSAGES.messages)
    inside = [s for s in report.sites if _same_file(s.filename, path)]
    outside = [s for s in report.sites if not _same_file(s.filename, path)]
    return {
        "sites": sorted({(s.line, s.gb_id) for s in inside}),
        "outside": sorted({f"{os.path.basename(s.filename)}:{s.line} {s.gb_id}" for s in outside}),
        "attributed": sorted(attributed_sites(messages, path)),
        "skipped_frames": list(report.skipped_frames),
        "break_count": report.break_count,
        "graph_count": report.graph_count,
        "compile_error": None,
    }


def _same(expected: Any, actual: Any) -> str | None:
    """``None`` when equal (same structure, dtypes, values within tolerance), else why not."""
    if isinstance(expected, (tuple, list)):
        if type(actual) is not type(expected) or len(actual) != len(expected):
            return f"structure {type(expected).__name__}[{len(expected)}] vs {type(actual).__name__}"
        for e, a in zip(expected, actual):
            problem = _same(e, a)
            if problem:
                return problem
        return None
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor) or actual.dtype != expected.dtype:
            return f"dtype {expected.dtype} vs {getattr(actual, 'dtype', type(actual))}"
        try:
            torch.testing.assert_close(actual, expected, rtol=RTOL, atol=ATOL, equal_nan=True)
        except AssertionError as error:
            return str(error).splitlines()[0]
        return None
    return None if expected == actual else f"{expected!r} vs {actual!r}"


def compare(bad: str, fixed: str) -> dict[str, Any]:
    """Outputs of the fixed program, eager and compiled (fullgraph), against the bad one's, input set by input set."""
    problems: list[str] = []
    with _restored_dynamo_config(), _quiet():
        bad_fn, inputs = _load(bad).make()
        fixed_fn, fixed_inputs = _load(fixed).make()
        torch._dynamo.reset()
        compiled = torch.compile(fixed_fn, backend="aot_eager", fullgraph=True)
        for index, (args, fixed_args) in enumerate(zip(inputs, fixed_inputs, strict=True)):
            torch.manual_seed(0)
            expected = bad_fn(*args)
            for label, run in (("eager", fixed_fn), ("fullgraph", compiled)):
                torch.manual_seed(0)
                try:
                    problem = _same(expected, run(*fixed_args))
                except Exception as error:  # a fullgraph failure is a finding, not a crash
                    problem = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
                if problem:
                    problems.append(f"input {index} {label}: {problem}")
    return {"problems": problems}


def main() -> None:
    request = json.load(sys.stdin)
    result = {
        "programs": {path: measure(path) for path in request["programs"]},
        "pairs": {f"{bad}|{fixed}": compare(bad, fixed) for bad, fixed in request["pairs"]},
    }
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
