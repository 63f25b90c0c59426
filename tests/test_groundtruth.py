"""Ground truth: GM101-GM104 flag exactly the lines where Dynamo breaks on control flow.

Every program in ``tests/groundtruth/programs`` is linted statically and run
through real Dynamo (``explain`` plus the ``graph_breaks`` log) on inputs that
take every branch. The expected lines come from Dynamo at test time, never from
a hand-written list. Precision and recall over the whole set must be >= 0.95.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from graphmend_lint import lint_source

torch = pytest.importorskip("torch")
from graphmend_lint.verify.breaks import capture_breaks_over  # noqa: E402

PROGRAMS = sorted((Path(__file__).parent / "groundtruth" / "programs").glob("*.py"))
CONTROL_FLOW_RULES = {"GM101", "GM102", "GM103", "GM104"}
DATA_DEPENDENT_BRANCHING = "GB0170"
MINIMUM_SCORE = 0.95


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"groundtruth_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def static_lines(path: Path) -> set[int]:
    diagnostics = lint_source(path.read_text(), str(path))
    return {d.start.line for d in diagnostics if d.code in CONTROL_FLOW_RULES}


def dynamic_lines(path: Path) -> set[int]:
    module = _load(path)
    fn, inputs = module.make()
    report = capture_breaks_over(fn, [(tuple(args), {}) for args in inputs])
    resolved = path.resolve()
    return {
        site.line
        for site in report.sites
        if site.gb_id == DATA_DEPENDENT_BRANCHING and Path(site.filename).resolve() == resolved
    }


@pytest.fixture(scope="module")
def measurements() -> dict[str, tuple[set[int], set[int]]]:
    return {path.name: (static_lines(path), dynamic_lines(path)) for path in PROGRAMS}


def test_corpus_is_large_enough() -> None:
    positives = [p for p in PROGRAMS if p.name.startswith("pos_")]
    negatives = [p for p in PROGRAMS if p.name.startswith("neg_")]
    assert len(positives) >= 30 and len(negatives) >= 30


@pytest.mark.dynamo
def test_corpus_labels_agree_with_dynamo(measurements: dict[str, tuple[set[int], set[int]]]) -> None:
    """pos_ programs really break on control flow; neg_ programs really don't."""
    wrong = [
        name
        for name, (_, dynamic) in measurements.items()
        if bool(dynamic) != name.startswith("pos_")
    ]
    assert wrong == []


@pytest.mark.dynamo
def test_static_findings_match_dynamo_lines(measurements: dict[str, tuple[set[int], set[int]]]) -> None:
    true_positives = false_positives = false_negatives = 0
    disagreements = []
    for name, (static, dynamic) in sorted(measurements.items()):
        true_positives += len(static & dynamic)
        false_positives += len(static - dynamic)
        false_negatives += len(dynamic - static)
        if static != dynamic:
            disagreements.append(f"{name}: linter {sorted(static)} vs dynamo {sorted(dynamic)}")
    precision = true_positives / max(true_positives + false_positives, 1)
    recall = true_positives / max(true_positives + false_negatives, 1)
    summary = f"precision={precision:.3f} recall={recall:.3f} tp={true_positives}\n" + "\n".join(disagreements)
    print(summary)
    assert true_positives > 0
    assert precision >= MINIMUM_SCORE and recall >= MINIMUM_SCORE, summary
