"""GM301-GM403 against real Dynamo (torch 2.13, CPU): breaks where the linter says, gone after the fix.

For every catalog program the measured break sites must be exactly those in
``CASES`` (so lint lines and Dynamo lines are checked against one table). For
every bad/fixed pair the break count drops, the fixed program compiles with
``fullgraph=True``, and the outputs agree on every input set of ``make()``
(which include all-false and empty masks) within the worker's tolerances
(masked sums add floats in another order), with the same dtype, both eagerly
and compiled. Programs are measured in a subprocess
(``catalog_dynamo_worker.py``), because some switch Dynamo settings on at
import. Behaviour the fixes change on purpose is asserted explicitly at the end.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from catalog_cases import measure_catalog  # noqa: E402
from test_host_sync_catalog import CASES, CATALOG, fix_pairs  # noqa: E402

pytestmark = pytest.mark.dynamo


def load(name: str) -> ModuleType:
    """Import a catalog program by path under a unique module name (programs that change no Dynamo setting)."""
    path = CATALOG / name
    module_name = "_host_sync_" + name.replace("/", "_").removesuffix(".py")
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def measured() -> dict[str, Any]:
    """Every program measured once, and every pair compared, in one subprocess (Dynamo is the slow part)."""
    return measure_catalog(sorted(CASES), fix_pairs())


@pytest.mark.parametrize("name", sorted(CASES))
def test_dynamo_breaks_exactly_where_the_case_says(name: str, measured) -> None:
    report = measured["programs"][name]
    assert {tuple(site) for site in report["sites"]} == set(CASES[name].breaks)
    assert report["outside"] == [], "a break outside the program"
    assert bool(report["skipped_frames"]) is CASES[name].frame_skipped


@pytest.mark.parametrize(("bad", "fixed"), fix_pairs())
def test_fix_removes_the_breaks(bad: str, fixed: str, measured) -> None:
    assert measured["programs"][bad]["break_count"] > 0
    assert measured["programs"][fixed]["break_count"] == 0
    assert measured["programs"][fixed]["graph_count"] == 1


@pytest.mark.parametrize(("bad", "fixed"), fix_pairs())
def test_fixed_program_computes_the_same_outputs_and_compiles_fullgraph(bad: str, fixed: str, measured) -> None:
    assert measured["pairs"][(bad, fixed)]["problems"] == []


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
