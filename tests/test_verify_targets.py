"""Target parsing, factory normalisation and scope defaults (no torch, no subprocess)."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmend_lint.verify.cli import UsageError, parse_hf_config
from graphmend_lint.verify.targets import (
    HfOptions,
    TargetError,
    default_lint_scope,
    default_scope_modules,
    entry_qualname,
    normalise_factory_result,
    parse_target,
    resolve_reference,
)


def test_file_target_resolves_against_base(tmp_path: Path):
    spec = parse_target("models/net.py::make", tmp_path)
    assert (spec.kind, spec.location, spec.name) == ("file", str(tmp_path / "models" / "net.py"), "make")


def parts(text: str) -> tuple[str, str, str | None]:
    spec = parse_target(text)
    return spec.kind, spec.location, spec.name


def test_module_and_hf_targets():
    assert parts("pkg.sub:make") == ("module", "pkg.sub", "make")
    assert parts("hf:bert") == ("hf", "bert", None)
    assert parts("hf:gpt2:GPT2LMHeadModel") == ("hf", "gpt2", "GPT2LMHeadModel")


@pytest.mark.parametrize("text", ["nothing", "hf:", "file.py::", "::f", "not a module:f"])
def test_bad_targets_are_user_errors(text):
    with pytest.raises(TargetError):
        parse_target(text)


def test_default_scopes():
    hf = parse_target("hf:biogpt")
    assert default_scope_modules(hf)[0] == "transformers.models.biogpt"
    assert "transformers.masking_utils" in default_scope_modules(hf)
    # a type whose code lives in another package is fixed there, not in a package that does not exist
    assert default_scope_modules(parse_target("hf:data2vec-audio"))[0] == "transformers.models.data2vec"
    assert default_scope_modules(parse_target("hf:voxtral_realtime_encoder"))[0] == "transformers.models.voxtral_realtime"
    assert default_lint_scope(hf, "compiled") == "modules"
    assert default_scope_modules(parse_target("pkg.sub:make")) == ("pkg.sub",)
    assert default_lint_scope(parse_target("pkg.sub:make"), "compiled") == "compiled"


def test_file_target_module_name_walks_packages(tmp_path: Path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "net.py").write_text("")
    assert default_scope_modules(parse_target("pkg/net.py::make", tmp_path)) == ("pkg.net",)


def f(x):
    return x


def test_factory_result_forms():
    assert normalise_factory_result((f, (1, 2))).inputs == [((1, 2), {})]
    assert normalise_factory_result((f, 5)).inputs == [((5,), {})]
    assert normalise_factory_result((f, [1], {"k": 2})).inputs == [((1,), {"k": 2})]
    workload = normalise_factory_result({"callable": f, "inputs": [((1,), {}), ([2], {"a": 3})], "atol": 0.1})
    assert workload.inputs == [((1,), {}), ((2,), {"a": 3})]
    assert (workload.atol, workload.rtol) == (0.1, None)


@pytest.mark.parametrize(
    "bad",
    [f, (f,), {"callable": f}, {"callable": f, "inputs": [], "x": 1}, {"callable": f, "inputs": []},
     {"callable": 3, "inputs": [((), {})]}, {"callable": f, "inputs": [(1, 2)]}],
)
def test_bad_factory_results(bad):
    with pytest.raises(TargetError):
        normalise_factory_result(bad)


class Net:
    def __call__(self, x):
        return x

    def method(self, x):
        return x


def test_entry_qualname():
    assert entry_qualname(f) == f"{__name__}.f"
    assert entry_qualname(Net()) == f"{__name__}.Net"
    assert entry_qualname(Net().method) == f"{__name__}.Net.method"
    assert entry_qualname(lambda x: x) is None  # defined in a function: not importable

    def local(x):
        return x

    assert entry_qualname(local) is None


def test_resolve_reference_errors(tmp_path: Path):
    (tmp_path / "verify_ref_mod.py").write_text("value = 3\n")
    assert resolve_reference("verify_ref_mod.py::value", tmp_path) == 3
    with pytest.raises(TargetError, match="no attribute 'missing'"):
        resolve_reference("verify_ref_mod.py::missing", tmp_path)
    with pytest.raises(TargetError, match="no such file"):
        resolve_reference("absent.py::x", tmp_path)
    with pytest.raises(TargetError, match="cannot import module"):
        resolve_reference("no_such_module_xyz:f")


def test_hf_config_values():
    parsed = parse_hf_config(['phi3:rope_scaling={"rope_type": "longrope"}', "hidden_act=gelu", "n=3"])
    assert parsed == (("phi3", "rope_scaling", {"rope_type": "longrope"}), (None, "hidden_act", "gelu"), (None, "n", 3))
    options = HfOptions(parsed)
    assert options.overrides_for("phi3") == {"hidden_act": "gelu", "n": 3, "rope_scaling": {"rope_type": "longrope"}}
    assert options.overrides_for("bert") == {"hidden_act": "gelu", "n": 3}
    with pytest.raises(UsageError):
        parse_hf_config(["novalue"])
