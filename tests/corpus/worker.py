"""A measuring worker: reads one JSON task per line on stdin, answers one JSON line per task.

Run by ``pool.py`` as ``python -m tests.corpus.worker``, so every batch of
programs is measured in a fresh process that no test's logging or Dynamo
configuration can reach. The protocol uses a private copy of the original
stdout; anything else written to stdout (a program's import-time print, a C
extension) goes to stderr instead.

Task: ``{"name", "path", "lint": bool, "behaviour": bool, "variants": {label: path}}``, and the corpus's
``"digest"`` of the file (echoed in the answer, for ``--reuse-truth``; other callers leave it out).
Answer: ``{"name", "digest", "lint": {scope: [[line, code], ...]}, "original": M, "variants": {label: M}}``
where ``M`` is :func:`_measurement_json` of the file, and each variant also has
``eager_differences`` / ``compiled_differences`` against the original's eager run.
Variants with the same text (``--fix`` and ``--fix --unsafe-fixes`` agree on
about a fifth of the changed programs) are measured once.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any


def _sites_json(sites: Any) -> list[list[Any]]:
    return sorted([s.line, s.gb_id, s.gb_type] for s in sites)


def _measurement_json(measurement: Any) -> dict[str, Any]:
    """``sites``/``traced_lines``: both modes together; the rest is the run as built; ``train``: the training run."""
    train = measurement.train
    return {
        "error": measurement.error,
        "sites": _sites_json(measurement.sites),
        "foreign_sites": sorted([path, line, gb_id] for path, line, gb_id in measurement.foreign_sites),
        "traced_lines": sorted(measurement.traced_lines),
        "error_path_sites": _sites_json(measurement.error_path_sites),
        "fullgraph": measurement.fullgraph,
        "eager_errors": [o.error for o in measurement.eager],
        "declared_raises": measurement.declared_raises,
        "float_dtypes": sorted(measurement.float_dtypes),
        "train": {
            "skipped": train.skipped,
            "error": train.error,
            "unrunnable": train.unrunnable,
            "sites": _sites_json(train.sites),
            "train_only_sites": _sites_json(train.sites - measurement.built_sites),
            "fullgraph": train.fullgraph,
            "eager_errors": [o.error for o in train.eager],
        },
    }


def _differences(original: Any, variant: Any, compiled: bool) -> list[str]:
    """Per input set and mode, how the variant's eager (or compiled) outcomes differ from the original's eager ones."""
    from tests.corpus.behaviour import outcome_differences

    if original.error or variant.error:
        return [] if original.error else [f"variant failed: {variant.error}"]
    runs = [("", original, variant)]
    trained = [(run.train.skipped, run.train.error) for run in (original, variant)]
    if trained[0] != trained[1]:
        return [f"training run: {trained[0]} vs {trained[1]}"]
    if trained[0] == (None, None):
        runs.append(("train ", original.train, variant.train))
    found = []
    for label, expected_run, actual_run in runs:
        outcomes = actual_run.compiled if compiled else actual_run.eager
        for index, (expected, actual) in enumerate(zip(expected_run.eager, outcomes, strict=True)):
            found += [f"{label}input {index}: {d}" for d in outcome_differences(expected, actual)]
    if not compiled and original.import_stdout != variant.import_stdout:
        found.append("import-time stdout differs")
    return found


def handle(task: dict[str, Any]) -> dict[str, Any]:
    from tests.corpus import dynamo, lint

    started = time.perf_counter()
    answer: dict[str, Any] = {"name": task["name"], "digest": task.get("digest")}
    if task.get("lint"):
        try:
            answer["lint"] = lint.findings(Path(task["path"]))
        except Exception as error:  # a linter crash is a result, reported per program
            answer["lint_error"] = f"{type(error).__name__}: {error}"
    module_name = f"corpus_program_{task['name']}"
    behaviour = bool(task.get("behaviour"))
    original = dynamo.measure(Path(task["path"]), module_name, behaviour)
    answer["original"] = _measurement_json(original)
    answer["variants"] = {}
    by_text: dict[bytes, dict[str, Any]] = {}  # a fixed copy equal to one measured already is the same program
    for label, path in task.get("variants", {}).items():
        text = Path(path).read_bytes()
        if text not in by_text:
            variant = dynamo.measure(Path(path), module_name, behaviour=True)
            by_text[text] = {
                **_measurement_json(variant),
                "eager_differences": _differences(original, variant, compiled=False),
                "compiled_differences": _differences(original, variant, compiled=True),
            }
        answer["variants"][label] = by_text[text]
    answer["seconds"] = round(time.perf_counter() - started, 3)
    return answer


def main() -> int:
    import torch

    # The pool runs one worker per core, and the programs' tensors are small: intra-op threads would only
    # contend with the other worker for the same cores.
    torch.set_num_threads(1)
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.captureWarnings(False)
    for line in sys.stdin:
        if line.strip():
            protocol.write(json.dumps(handle(json.loads(line))) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
