"""The rule catalog against Dynamo: every ``bad_*`` program breaks, every ``fixed_*`` twin does not.

Each pair is measured by the corpus harness (``tests/corpus``) in fresh worker
processes, so no other test's logging or Dynamo settings can change the
result. A break counts when Dynamo *logs* it (the ``graph_breaks`` artifact),
wherever it happens in the function: a call moved to the end of a function
still breaks there. For every pair:

* the bad program logs at least one break;
* the fixed program logs none and ``torch.compile(..., fullgraph=True)`` runs
  on every input set (unless :data:`BREAKS_LEFT` names the breaks the fix
  cannot remove, with the reason);
* eagerly, the fixed program returns, raises, prints, logs and warns exactly
  what the bad one does, on every input set.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_catalog import PAIRS, _id

pytest.importorskip("torch")
from tests.corpus.pool import run_tasks  # noqa: E402

#: Pairs whose fixed program still breaks, with the breaks left and why no fix removes them.
BREAKS_LEFT: dict[str, str] = {}
#: Codes whose fixed programs raise ``RuntimeError`` under compile where the original raised another
#: type, on the input sets declared in ``RAISING_INPUTS``: GM104's opt-in ``compiled-exception``, and
#: GM105's ``assert a and b`` made one device-side check (both unsafe fixes).
COMPILED_RUNTIME_ERROR = {"GM104", "GM105"}
#: Codes whose bad programs fail to compile instead of breaking: GM519's tensor method on the ndarray NumPy gives
#: under Dynamo (GB4315, no break logged; ``test_break_causes_dynamo`` asserts the error, ``Case.compile_error``).
COMPILE_ERRORS = {"GM519"}


@pytest.fixture(scope="module")
def measured() -> dict[str, dict[str, Any]]:
    tasks = [
        {"name": _id(bad).replace("/", "_").removesuffix(".py"), "path": str(bad), "behaviour": True,
         "variants": {"fixed": str(fixed)}}
        for bad, fixed in PAIRS
    ]
    return run_tasks(tasks, timeout=600)


def _answer(measured: dict[str, dict[str, Any]], bad: Any) -> dict[str, Any]:
    answer = measured[_id(bad).replace("/", "_").removesuffix(".py")]
    assert "failure" not in answer, answer.get("failure")
    assert answer["original"]["error"] is None, answer["original"]["error"]
    return answer


@pytest.mark.dynamo
@pytest.mark.parametrize(("bad", "fixed"), PAIRS, ids=[_id(b) for b, _ in PAIRS])
def test_bad_program_breaks(measured: dict[str, dict[str, Any]], bad: Any, fixed: Any) -> None:
    original = _answer(measured, bad)["original"]
    if bad.parent.name in COMPILE_ERRORS:
        assert not original["sites"], f"{_id(bad)} now logs a break: drop its code from COMPILE_ERRORS"
        return
    assert original["sites"] or original["foreign_sites"], "a bad_ program must log a graph break"


@pytest.mark.dynamo
@pytest.mark.parametrize(("bad", "fixed"), PAIRS, ids=[_id(b) for b, _ in PAIRS])
def test_fixed_program_logs_no_break_and_compiles_fullgraph(
    measured: dict[str, dict[str, Any]], bad: Any, fixed: Any
) -> None:
    variant = _answer(measured, bad)["variants"]["fixed"]
    if _id(bad) in BREAKS_LEFT:
        assert variant["sites"], f"{_id(bad)} no longer breaks: drop it from BREAKS_LEFT"
        return
    assert variant["sites"] == [] and variant["foreign_sites"] == []  # foreign: logged inside a library it calls
    expected: list[str | None] = [None] * len(variant["fullgraph"])  # None: traced and ran
    if bad.parent.name in COMPILED_RUNTIME_ERROR:
        for index in variant["declared_raises"]:
            failure = variant["fullgraph"][int(index)]
            expected[int(index)] = failure if failure and failure.startswith("RuntimeError:") else "RuntimeError"
    assert variant["fullgraph"] == expected


@pytest.mark.dynamo
@pytest.mark.parametrize(("bad", "fixed"), PAIRS, ids=[_id(b) for b, _ in PAIRS])
def test_fixed_program_behaves_the_same_eagerly(measured: dict[str, dict[str, Any]], bad: Any, fixed: Any) -> None:
    assert _answer(measured, bad)["variants"]["fixed"]["eager_differences"] == []
