"""Ground truth: the linter flags exactly the lines where Dynamo logs a break, for every rule family.

Every program in ``tests/groundtruth/programs`` is linted statically and run
through real Dynamo on inputs that take every branch. The expected lines come
from Dynamo's ``graph_breaks`` log at test time, never from a hand-written
list, and they are measured in fresh worker processes (the corpus harness,
``tests/corpus/pool.py``) so no other test's logging or Dynamo configuration
can change them.

Labels: a ``neg_`` program has ZERO logged breaks of any kind, in any file; a
``pos_`` program has at least one. Precision and recall are computed over all
logged lines and all findings (every family), overall and per family.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `tests.corpus` is imported as a package from the repository root
    sys.path.insert(0, str(REPO))

from tests.corpus import pool, score  # noqa: E402
from tests.corpus.families import claims  # noqa: E402
from tests.corpus.layout import Program  # noqa: E402

PROGRAMS = [Program(path) for path in sorted((Path(__file__).parent / "groundtruth" / "programs").glob("*.py"))]
MINIMUM_SCORE = 0.95
#: Positives whose break no rule flags yet. Each stays an expected failure
#: (strict: it turns red once the linter starts flagging it, so the entry is removed).
SCORED = PROGRAMS


def test_corpus_is_large_enough() -> None:
    positives = [p for p in PROGRAMS if p.name.startswith("pos_")]
    negatives = [p for p in PROGRAMS if p.name.startswith("neg_")]
    assert len(positives) >= 30 and len(negatives) >= 30


@pytest.fixture(scope="module")
def answers() -> dict[str, dict[str, Any]]:
    tasks = [{"name": p.name, "path": str(p.path), "lint": True, "behaviour": False} for p in PROGRAMS]
    return pool.run_tasks(tasks, timeout=120.0)


@pytest.mark.dynamo
def test_every_program_is_measured(answers: dict[str, dict[str, Any]]) -> None:
    broken = {name: a.get("failure") or a["original"]["error"] or a.get("lint_error") for name, a in answers.items()
              if not score.measured(a) or a.get("lint_error")}
    assert broken == {}


@pytest.mark.dynamo
def test_corpus_labels_agree_with_dynamo(answers: dict[str, dict[str, Any]]) -> None:
    """pos_ programs really break; neg_ programs have zero logged breaks of any kind, in any file."""
    wrong = []
    for program in PROGRAMS:
        original = answers[program.name]["original"]
        logged = score.logged_site_count(original)
        if program.name.startswith("neg_") and logged:
            wrong.append(f"{program.name}: negative with {logged} logged break(s): {original['sites']}")
        if program.name.startswith("pos_") and not original["sites"]:
            wrong.append(f"{program.name}: positive without a logged break in its file")
    assert wrong == []


@pytest.mark.dynamo
def test_static_findings_match_dynamo_lines(answers: dict[str, dict[str, Any]]) -> None:
    detected = score.detection(SCORED, answers, "compiled", claims())
    rows = [f"all: {detected.overall.as_json()}"] + [f"{name}: {c.as_json()}" for name, c in detected.families.items()]
    summary = "\n".join(rows + detected.misses + detected.false_alarms)
    print(summary)
    assert detected.overall.logged_found > 0
    assert detected.overall.precision >= MINIMUM_SCORE and detected.overall.recall >= MINIMUM_SCORE, summary
    for name, counts in detected.families.items():
        if counts.flagged:
            assert counts.precision >= MINIMUM_SCORE, f"{name} precision\n{summary}"
        if counts.logged:
            assert counts.recall >= MINIMUM_SCORE, f"{name} recall\n{summary}"
