"""GM301-GM403 against real Dynamo (torch 2.13, CPU): breaks where the linter says, gone after the fix.

For every catalog program the measured break sites must be exactly those in
``CASES`` (so lint lines and Dynamo lines are checked against one table). For
every bad/fixed pair the break count drops and the outputs agree on every input
set of ``make()`` (which include all-false and empty masks) within
``RTOL``/``ATOL``, with the same dtype, both eagerly and compiled. Behaviour the
fixes change on purpose is asserted explicitly at the end.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from test_host_sync_catalog import CASES, CATALOG, fix_pairs  # noqa: E402

from graphmend_lint.verify.breaks import BreakReport, capture_breaks_over  # noqa: E402

pytestmark = pytest.mark.dynamo

#: Masked sums change the order floats are added in; nothing else is inexact.
RTOL, ATOL = 1e-5, 1e-6


def load(name: str) -> ModuleType:
    """Import a catalog program by path under a unique module name."""
    path = CATALOG / name
    module_name = "_host_sync_" + name.replace("/", "_").removesuffix(".py")
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def measure(name: str) -> tuple[BreakReport, set[tuple[int, str]]]:
    fn, inputs = load(name).make()
    report = capture_breaks_over(fn, [(tuple(args), {}) for args in inputs])
    here = {(site.line, site.gb_id) for site in report.sites if site.filename == str(CATALOG / name)}
    return report, here


@pytest.fixture(scope="module")
def reports() -> dict[str, tuple[BreakReport, set[tuple[int, str]]]]:
    """Every program measured once (Dynamo is the slow part)."""
    return {name: measure(name) for name in sorted(CASES)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_dynamo_breaks_exactly_where_the_case_says(name: str, reports) -> None:
    report, here = reports[name]
    assert here == set(CASES[name].breaks)
    assert {site.filename for site in report.sites} <= {str(CATALOG / name)}, "a break outside the program"
    assert bool(report.skipped_frames) is CASES[name].frame_skipped


@pytest.mark.parametrize(("bad", "fixed"), fix_pairs())
def test_fix_removes_the_breaks(bad: str, fixed: str, reports) -> None:
    assert reports[bad][0].break_count > 0
    assert reports[fixed][0].break_count == 0
    assert reports[fixed][0].graph_count == 1


def _assert_same(expected: Any, actual: Any) -> None:
    if isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected) and len(actual) == len(expected)
        for e, a in zip(expected, actual):
            _assert_same(e, a)
        return
    assert actual.dtype == expected.dtype
    torch.testing.assert_close(actual, expected, rtol=RTOL, atol=ATOL, equal_nan=True)


@pytest.mark.parametrize(("bad", "fixed"), fix_pairs())
def test_fixed_program_computes_the_same_outputs(bad: str, fixed: str) -> None:
    bad_fn, inputs = load(bad).make()
    fixed_fn, fixed_inputs = load(fixed).make()
    compiled = torch.compile(fixed_fn, backend="aot_eager")
    with torch.no_grad():
        for args, fixed_args in zip(inputs, fixed_inputs, strict=True):
            expected = bad_fn(*args)
            _assert_same(expected, fixed_fn(*fixed_args))
            _assert_same(expected, compiled(*fixed_args))


def test_the_inputs_cover_all_false_and_empty_masks() -> None:
    """The masked-reduction programs really exercise the edge cases the docs talk about."""
    _, sums = load("GM401/bad_masked_sum.py").make()
    errors = [(pred - target).abs() > 0.5 for pred, target in sums]
    assert any(m.numel() and not m.any() for m in errors) and any(m.numel() == 0 for m in errors)
    _, means = load("GM401/bad_masked_mean.py").make()
    valid = [~torch.isnan(scores) for (scores,) in means]
    assert any(m.numel() and not m.any() for m in valid) and any(m.numel() == 0 for m in valid)


# -- behaviour the fixes change on purpose (documented in the rules' Fix safety) ---------


def test_masked_max_of_an_empty_selection_raises_before_and_is_minus_inf_after() -> None:
    bad_fn, _ = load("GM401/bad_masked_max.py").make()
    fixed_fn, _ = load("GM401/fixed_masked_max.py").make()
    x = torch.randn(2, 4)
    with torch.no_grad():
        for model in (bad_fn, fixed_fn):  # every activation is -1: the selection is empty
            model.proj.weight.zero_()
            model.proj.bias.fill_(-1.0)
        with pytest.raises(RuntimeError):
            bad_fn(x)
        assert fixed_fn(x).item() == float("-inf")


def test_failing_assert_keeps_assertionerror_eagerly_and_is_runtimeerror_compiled() -> None:
    bad_fn, _ = load("GM301/bad_assert_item.py").make()
    fixed_fn, _ = load("GM301/fixed_assert_item.py").make()
    x, too_long = torch.randn(2, 3, 4), torch.tensor([4, 1])
    for fn in (bad_fn, fixed_fn):
        with pytest.raises(AssertionError):
            fn(x, too_long)
    torch._dynamo.reset()
    with pytest.raises(RuntimeError, match="assertion error"):
        torch.compile(fixed_fn, backend="aot_eager")(x, too_long)
