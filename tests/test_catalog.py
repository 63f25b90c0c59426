"""The rule catalog (``rules/GMxxx/``): every program runs, and every fixed program is the fixer's output.

Each ``fixed_X.py`` must be exactly what ``fix_source`` (with unsafe fixes,
and the settings of a ``graphmend-lint.toml`` beside it, as the command line
would read them) makes of ``bad_X.py``, so the docs, which embed these pairs,
never drift from the code; and fixing a fixed program again changes nothing.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import pytest

from graphmend_lint import fix_source
from graphmend_lint.config import load_settings

CATALOG = Path(__file__).resolve().parents[1] / "rules"
PAIRS = sorted(
    (bad, bad.with_name(bad.name.replace("bad_", "fixed_", 1)))
    for bad in CATALOG.glob("GM*/bad_*.py")
    if bad.with_name(bad.name.replace("bad_", "fixed_", 1)).exists()
)
PROGRAMS = sorted(CATALOG.glob("GM*/*.py"))


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


@pytest.mark.parametrize(("bad", "fixed"), PAIRS, ids=[_id(b) for b, _ in PAIRS])
def test_fixed_program_is_the_fixers_output(bad: Path, fixed: Path) -> None:
    settings = load_settings(start=bad)
    result = fix_source(bad.read_text(), str(bad), config=settings, unsafe=True)
    assert result.source == fixed.read_text()
    assert fix_source(result.source, str(fixed), config=settings, unsafe=True).source == result.source


def test_every_rule_with_a_fix_has_a_catalog_pair() -> None:
    from graphmend_lint.rules import all_rules

    with_pairs = {bad.parent.name for bad, _ in PAIRS}
    missing = [r.code for r in all_rules() if r.fixable() and r.code not in with_pairs]
    assert missing == []


@pytest.mark.parametrize("program", PROGRAMS, ids=[_id(p) for p in PROGRAMS])
def test_program_runs_eagerly(program: Path) -> None:
    """``make()`` builds the callable and its inputs; every input set runs, or raises what ``RAISING_INPUTS`` declares."""
    torch = pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location(f"catalog_{program.parent.name}_{program.stem}", program)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    saved = torch._dynamo.config.get_config_copy()  # some programs switch Dynamo settings on at import
    try:
        spec.loader.exec_module(module)
        if not hasattr(module, "make"):
            pytest.fail(f"{_id(program)} has no make()")
        torch.manual_seed(0)
        fn, inputs = module.make()
        assert inputs, "make() must return at least one input set"
        raising = getattr(module, "RAISING_INPUTS", {})
        for index, args in enumerate(inputs):
            if index in raising:
                with pytest.raises(Exception) as caught:
                    fn(*args)
                assert type(caught.value).__name__ == raising[index]
            else:
                fn(*args)
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # writing back deprecated keys warns
            torch._dynamo.config.load_config(saved)
