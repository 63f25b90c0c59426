"""The in-memory fixing import hook (no torch)."""

from __future__ import annotations

import importlib
import linecache
import sys
import textwrap
from pathlib import Path

import pytest

from graphmend_lint.config import Settings
from graphmend_lint.verify.hook import LinterTransform, ReplaceTransform, identity, in_scope, installed
from graphmend_lint.verify.static import settle


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """A package ``<unique>`` with a module ``mod`` on sys.path; forgotten after the test."""
    name = f"hookpkg_{tmp_path.name.replace('-', '_')}"
    root = tmp_path / name
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "mod.py").write_text(textwrap.dedent("""
        def value():
            return "original"

        def where():
            import inspect
            return inspect.currentframe().f_code.co_filename, inspect.currentframe().f_lineno
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name, root / "mod.py"
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]


def test_scope_matching():
    assert in_scope("transformers.models.bert.modeling_bert", ["transformers.models.bert"])
    assert in_scope("a", ["a"])
    assert not in_scope("transformers.models.bertish", ["transformers.models.bert"])


def shout(source: str, filename: str) -> str:
    """Changes the value and shifts every line by two, so stale line numbers would show."""
    return "\n\n" + source.replace('"original"', '"fixed"') if '"original"' in source else source


def test_transform_runs_in_memory_under_the_original_filename(package):
    name, path = package
    before = path.read_text()
    with installed([name], shout) as finder:
        mod = importlib.import_module(f"{name}.mod")
    assert mod.value() == "fixed"
    assert path.read_text() == before  # nothing written
    filename, line = mod.where()
    assert filename == str(path)
    assert linecache.getline(str(path), line).strip().startswith("return inspect.currentframe()")  # fixed text
    assert [(m.name, m.changed) for m in finder.loaded] == [(name, False), (f"{name}.mod", True)]
    assert str(path) in finder.filenames


def test_modules_out_of_scope_are_untouched(package):
    name, _ = package
    with installed([f"{name}.other"], shout) as finder:
        mod = importlib.import_module(f"{name}.mod")
    assert mod.value() == "original" and finder.loaded == []


def test_already_imported_scope_module_is_an_error(package):
    name, _ = package
    importlib.import_module(f"{name}.mod")
    with pytest.raises(RuntimeError, match="already imported"):
        with installed([name], identity):
            pass


def test_hook_is_removed_afterwards(package):
    name, _ = package
    with installed([name], identity) as finder:
        assert sys.meta_path[0] is finder
    assert finder not in sys.meta_path


def test_replace_transform_keys_real_paths(tmp_path):
    target = tmp_path / "a.py"
    replace = ReplaceTransform({str(target.resolve()): "new"})
    assert replace("old", str(target)) == "new"
    assert replace("old", str(tmp_path / "b.py")) == "old"


def test_linter_transform_applies_the_linters_fixes_and_records_them(tmp_path):
    source = textwrap.dedent("""
        import torch

        def step(x):
            y = x * 2
            print("y", y.shape)
            return y + 1
    """)
    filename = str(tmp_path / "prog.py")
    seeds = settle({filename: source}, Settings(), ["prog.step"]).seeds
    transform = LinterTransform(Settings(), unsafe=True, seeds=seeds)
    fixed = transform(source, filename)
    assert "print" in fixed and fixed != source
    assert transform.applied == {filename: ("GM201",)}
    # without the entry, nothing in this file is compiled, so nothing is fixed
    assert LinterTransform(Settings(), unsafe=True)(source, filename) == source


def test_seeds_reach_scope_modules_the_entry_calls_into(tmp_path):
    """A module imported alone is still fixed where the compiled callable reaches it from another module."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    model = textwrap.dedent("""
        import torch
        from pkg.helpers import scale

        def step(x):
            return scale(x) + 1
    """)
    helpers = textwrap.dedent("""
        import torch

        def scale(x):
            if x.sum() > 0:
                y = x * 2
            else:
                y = x - 2
            return y
    """)
    texts = {str(package / "model.py"): model, str(package / "helpers.py"): helpers}
    settled = settle(texts, Settings(), ["pkg.model.step"])
    assert [s.qualname for s in settled.seeds[str(package / "helpers.py")]] == ["pkg.helpers.scale"]
    assert [d.code for d in settled.outcomes[str(package / "helpers.py")].diagnostics] == ["GM101"]
    fixed = LinterTransform(Settings(), unsafe=True, seeds=settled.seeds)(helpers, str(package / "helpers.py"))
    assert "torch.where(x.sum() > 0, x * 2, x - 2)" in fixed
