"""Differential test of the predicated control-flow fixes (GM101, GM103, GM104) against Dynamo.

For every ground-truth positive and every control-flow catalog program:
fix it with ``fix_source``, then run the original and the fixed program on
inputs that take every branch (an input set a program declares in
``RAISING_INPUTS`` must raise the same exception eagerly in both). The fix must lower the number of break
sites (to zero when every finding was fixed), and outputs, plus
gradients where inputs are differentiable, must stay equal. Programs the fixer
declines must say why.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from graphmend_lint import fix_source, lint_source
from graphmend_lint.config import Settings
from graphmend_lint.diagnostics import Applicability

torch = pytest.importorskip("torch")
from graphmend_lint.verify.breaks import capture_breaks_over  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = sorted((ROOT / "tests" / "groundtruth" / "programs").glob("pos_*.py")) + sorted(
    p for code in ("GM101", "GM103", "GM104", "GM105") for p in (ROOT / "rules" / code).glob("bad_*.py")
)
PREDICATED = {"GM101", "GM103", "GM104", "GM105"}
MINIMUM_FIXED_PROGRAMS = 40
MINIMUM_GRADIENT_CASES = 5
#: GM104 fixes only where a RuntimeError under compile is accepted (its default declines).
SETTINGS = Settings(rule_options=(("GM104", (("compiled-exception", "runtime-error"),)),))


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _break_sites(path: Path, fn: Any, inputs: list[tuple]) -> int:
    """Distinct break sites Dynamo logs in *path* (explain plus the graph_breaks log)."""
    report = capture_breaks_over(fn, [(tuple(args), {}) for args in inputs], before_each=lambda: torch.manual_seed(0))
    return sum(1 for s in report.sites if Path(s.filename).resolve() == path.resolve())


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _flatten(item)]
    return [value]


def _same(left: Any, right: Any) -> bool:
    pairs = list(zip(_flatten(left), _flatten(right), strict=True))
    return all(
        torch.allclose(a, b, equal_nan=True, atol=1e-6) if isinstance(a, torch.Tensor) else a == b for a, b in pairs
    )


def _raised(fn: Any, args: tuple) -> str | None:
    """The name of the exception ``fn(*args)`` raises eagerly (``RAISING_INPUTS`` sets take the raising side)."""
    try:
        fn(*args)
    except Exception as error:
        return type(error).__name__
    return None


def _make(module: ModuleType) -> tuple[Any, list[tuple]]:
    torch.manual_seed(0)
    return module.make()


def _seeded(fn: Any, args: Sequence[Any]) -> Any:
    """``fn(*args)`` from the same RNG state every time: programs that draw (LayerDrop, dropout) compare like for like."""
    torch.manual_seed(0)
    return fn(*args)


def _grads(fn: Any, args: tuple) -> list[Any] | None:
    leaves = [a.detach().clone().requires_grad_() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
    differentiable = [a for a in leaves if isinstance(a, torch.Tensor) and a.requires_grad]
    if not differentiable:
        return None
    outputs = [o for o in _flatten(_seeded(fn, leaves)) if isinstance(o, torch.Tensor) and o.requires_grad]
    if not outputs:
        return None
    return list(torch.autograd.grad(sum(o.sum() for o in outputs), differentiable, allow_unused=True))


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    out_dir = tmp_path_factory.mktemp("predicated")
    table: dict[str, dict[str, Any]] = {}
    for index, path in enumerate(PROGRAMS):
        source = path.read_text()
        result = fix_source(source, str(path), config=SETTINGS, unsafe=True)
        row: dict[str, Any] = {"applied": [d for d in result.applied if d.code in PREDICATED]}
        row["declined"] = [
            d for d in lint_source(source, str(path), config=SETTINGS) if d.code in PREDICATED and d.fix is not None
            and d.fix.applicability is Applicability.DISPLAY_ONLY
        ]
        table[path.name] = row
        if not row["applied"]:
            continue
        fixed_path = out_dir / f"{index:02d}_{path.name}"
        fixed_path.write_text(result.source)
        original, fixed = _load(path, f"orig_{index}"), _load(fixed_path, f"fixed_{index}")
        fn_a, all_inputs = _make(original)
        fn_b, _ = _make(fixed)
        raising = getattr(original, "RAISING_INPUTS", {})
        inputs = [args for index, args in enumerate(all_inputs) if index not in raising]
        row["before"] = _break_sites(path, fn_a, inputs)
        row["after"] = _break_sites(fixed_path, fn_b, inputs)
        row["remaining"] = list(result.remaining)
        with torch.no_grad():
            row["equal"] = all(_same(_seeded(fn_a, args), _seeded(fn_b, args)) for args in inputs) and all(
                _raised(fn_a, all_inputs[index]) == _raised(fn_b, all_inputs[index]) == expected
                for index, expected in raising.items()
            )
        gradients = [(_grads(fn_a, args), _grads(fn_b, args)) for args in inputs]
        row["gradients"] = [(a, b) for a, b in gradients if a is not None and b is not None]
    return table


@pytest.mark.dynamo
def test_enough_programs_are_fixed(results: dict[str, dict[str, Any]]) -> None:
    fixed = [name for name, row in results.items() if row["applied"]]
    assert len(fixed) >= MINIMUM_FIXED_PROGRAMS, f"only {len(fixed)} fixed: {sorted(set(results) - set(fixed))}"


@pytest.mark.dynamo
def test_fix_removes_breaks(results: dict[str, dict[str, Any]]) -> None:
    problems = []
    for name, row in results.items():
        if not row["applied"]:
            continue
        if row["after"] >= row["before"]:
            problems.append(f"{name}: {row['before']} -> {row['after']}")
        elif not row["remaining"] and row["after"] != 0:
            problems.append(f"{name}: all findings fixed but {row['after']} breaks remain")
    assert problems == []


@pytest.mark.dynamo
def test_outputs_equal_on_every_branch(results: dict[str, dict[str, Any]]) -> None:
    assert [name for name, row in results.items() if row["applied"] and not row["equal"]] == []


#: Programs whose fix may change a gradient, each with the documented reason. ``torch.where``
#: backpropagates through both sides, so a side that was not taken can turn a finite gradient into
#: NaN (GM101's *Fix safety*). Only these may differ, and only by NaN where the original had a
#: finite or infinite value.
NAN_THROUGH_WHERE = {
    "bad_elif_chain.py": "`x.log()` on the untaken side sees x <= 0",
    "pos_05_flag_variable.py": "`y / y.max()` on the untaken side divides by zero when y is all zeros",
    "pos_16_all_check.py": "`y.sqrt()` on the untaken side sees negative values",
    "pos_29_and_multiline.py": "`y / (y.max() - y.min())` on the untaken side divides by zero when y is constant",
}


@pytest.mark.dynamo
def test_gradients_equal(results: dict[str, dict[str, Any]]) -> None:
    """Gradients match, except NaN-through-where in the programs listed, and at least five match exactly."""
    exact = 0
    differing: set[str] = set()
    for name, row in results.items():
        for original, fixed in row.get("gradients", []):
            identical = True
            for a, b in zip(original, fixed, strict=True):
                if a is None or b is None:  # unused input: its gradient is zero either way
                    present = a if a is not None else b
                    assert present is None or not present.any(), name
                    continue
                if torch.allclose(a, b, equal_nan=True, atol=1e-5):
                    continue
                identical = False
                differing.add(name)
                both_finite = torch.isfinite(a) & torch.isfinite(b)
                assert torch.allclose(a[both_finite], b[both_finite], atol=1e-5), name
                assert torch.isnan(b[~both_finite]).all(), name  # the fix only adds NaN where a value was
            exact += identical
    assert differing == set(NAN_THROUGH_WHERE), differing
    assert exact >= MINIMUM_GRADIENT_CASES


@pytest.mark.dynamo
def test_every_decline_says_why(results: dict[str, dict[str, Any]]) -> None:
    for row in results.values():
        for diagnostic in row["declined"]:
            assert diagnostic.fix.message.startswith("No automatic fix: ") and len(diagnostic.fix.message) > 25
