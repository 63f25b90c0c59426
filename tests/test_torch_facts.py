"""The generated torch table and the astroid stubs built from it.

The table is checked against a fresh regeneration from the installed torch
(CI installs it), spot-checked for the entries rules rely on, and the loader
and stubs are checked never to import torch.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import astroid
import pytest
from astroid import nodes

from graphmend_lint.analysis.torch_facts import FACTS_PATH, KINDS, load_facts, split_kind
from graphmend_lint.analysis.torch_facts.generate import build_facts, changed_entries, find_torch_root, render
from graphmend_lint.analysis.torch_stubs import STUB_MODULES, preload_torch_stubs

REPO_ROOT = Path(__file__).resolve().parents[1]


# -- the table is current -------------------------------------------------------------


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_shipped_table_matches_installed_torch() -> None:
    root = find_torch_root()
    assert root is not None
    fresh = render(build_facts(root))
    shipped = FACTS_PATH.read_text(encoding="utf-8")
    changed = changed_entries(json.loads(shipped), json.loads(fresh))
    assert shipped == fresh, f"regenerate torch_facts.json; differing entries: {changed[:20]}"


def test_changed_entries_names_what_differs() -> None:
    shipped = {"torch_version": "1", "functions": {"torch.a": "tensor", "torch.b": "int"}}
    fresh = {"torch_version": "2", "functions": {"torch.a": "tensor", "torch.c": "bool"}}
    assert changed_entries(shipped, fresh) == ["functions.torch.b", "functions.torch.c", "torch_version"]


def test_every_kind_is_known() -> None:
    facts = load_facts()
    tables = [facts.functions, facts.tensor_methods, facts.tensor_attributes, facts.nn_modules]
    tables += [facts.module_attributes, facts.named_tuple_fields]
    for table in tables:
        for name, kind in table.items():
            assert split_kind(kind) <= set(KINDS), (name, kind)


# -- spot checks ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("qualname", "kind"),
    [
        ("torch.randn", "tensor"),
        ("torch.tensor", "tensor"),
        ("torch.as_tensor", "tensor"),
        ("torch.from_numpy", "tensor"),
        ("torch.cat", "tensor"),
        ("torch.zeros_like", "tensor"),
        ("torch.norm", "tensor"),  # torch.functional, from # type: comments on overloads
        ("torch.split", "tuple_tensor"),  # torch.functional overrides the C++ binding
        ("torch.chunk", "tuple_tensor"),
        ("torch.is_tensor", "bool"),  # torch/__init__.py, TypeIs annotation
        ("torch.is_nonzero", "bool"),
        ("torch.numel", "int"),
        ("torch.get_default_dtype", "dtype"),
        ("torch.nn.functional.relu", "tensor"),
        ("torch.nn.functional.gelu", "tensor"),  # re-exported from torch._C._nn
        ("torch.nn.functional.conv2d", "tensor"),  # re-exported from torch
        ("torch.nn.functional.logsigmoid", "tensor"),  # ``log_sigmoid as logsigmoid``
        ("torch._dynamo.graph_break", "none"),
        ("torch.compiler.is_compiling", "bool"),
        # C bindings without stubs: the docstring's signature line says the result
        ("torch.fft.rfftfreq", "tensor"),
        ("torch.linalg.norm", "tensor"),  # ``linalg.norm(A, ...) -> Tensor``
        ("torch.linalg.svd", "tuple_tensor"),
        ("torch.special.expit", "tensor"),  # the signature opens the first part of a concatenated docstring
    ],
)
def test_function_kinds(qualname: str, kind: str) -> None:
    assert load_facts().function_kind(qualname) == kind


@pytest.mark.parametrize("qualname", ["torch.where", "torch.nonzero", "torch.max", "torch.unique"])
def test_overloads_returning_tensors_or_tuples_are_mixed(qualname: str) -> None:
    # where(cond) and nonzero(as_tuple=True) return tuples; the stubs say so.
    assert load_facts().function_kind(qualname) == "mixed:tensor|tuple_tensor"


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("sum", "tensor"),
        ("any", "tensor"),
        ("item", "number"),  # annotated ``Number`` (int | float | bool)
        ("tolist", "other"),
        ("size", "mixed:int|size"),  # size() is a Size, size(dim) an int
        ("stride", "mixed:int|size"),
        ("dim", "int"),
        ("numel", "int"),
        ("__gt__", "tensor"),
        ("__bool__", "bool"),
        ("__len__", "int"),  # _tensor.py, unannotated: ``return self.shape[0]``
        ("__getitem__", "tensor"),
        ("__contains__", "bool"),
        ("__eq__", "mixed:bool|tensor"),  # the ``object -> bool`` overload is kept
        ("split", "tuple_tensor"),
        ("unique", "mixed:tensor|tuple_tensor"),
        ("norm", "tensor"),
        ("backward", "none"),
        ("detach", "tensor"),  # ``_C._add_docstr(_C.TensorBase.detach, ...)``
    ],
)
def test_method_kinds(name: str, kind: str) -> None:
    assert load_facts().method_kind(name) == kind


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("shape", "size"),
        ("dtype", "dtype"),
        ("device", "device"),
        ("ndim", "int"),
        ("is_cuda", "bool"),
        ("requires_grad", "bool"),
        ("T", "tensor"),
        ("data", "tensor"),
        ("grad", "mixed:none|tensor"),
    ],
)
def test_attribute_kinds(name: str, kind: str) -> None:
    assert load_facts().attribute_kind(name) == kind


def test_unknown_names_are_none() -> None:
    facts = load_facts()
    assert facts.function_kind("torch.no_such_function") is None
    assert facts.method_kind("no_such_method") is None
    assert facts.attribute_kind("no_such_attribute") is None


def test_nn_modules_and_constants() -> None:
    facts = load_facts()
    assert facts.nn_modules["Linear"] == "tensor"
    assert facts.nn_modules["LazyLinear"] == "tensor"  # forward inherited from Linear
    assert facts.nn_modules["MultiheadAttention"] == "tuple_tensor"
    assert "Module" not in facts.nn_modules
    assert facts.module_attributes["torch.float32"] == "dtype"
    assert facts.named_tuple_fields["values"] == "tensor"


def test_split_kind() -> None:
    assert split_kind("tensor") == {"tensor"}
    assert split_kind("mixed:int|size") == {"int", "size"}


# -- no torch import --------------------------------------------------------------------


def test_loader_and_stubs_do_not_import_torch() -> None:
    code = (
        "import sys; from graphmend_lint.analysis.torch_facts import load_facts; load_facts(); "
        "from graphmend_lint.analysis.torch_stubs import preload_torch_stubs; preload_torch_stubs(); "
        "import astroid; astroid.extract_node('import torch\\ntorch.randn(3)').inferred(); "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)


# -- astroid inference through the stubs ---------------------------------------------------


def _inferred(code: str) -> list[Any]:
    """What astroid infers for the ``#@`` node of ``code``, with the stubs loaded."""
    preload_torch_stubs()
    node = astroid.extract_node(code)
    assert isinstance(node, nodes.NodeNG)
    return node.inferred()


def _is_tensor(value: Any) -> bool:
    return isinstance(value, astroid.Instance) and value.qname() == "torch.Tensor"


@pytest.mark.parametrize(
    "code",
    [
        "import torch\ntorch.randn(3) #@",
        "import torch as T\nT.randn(3) #@",
        "from torch import nn\nnn.functional.relu(x) #@",
        "import torch.nn.functional as F\nF.relu(x) #@",
        "from torch.nn import functional as F\nF.relu(x) #@",
        "import torch\ntorch.nn.functional.relu(x) #@",
        "from torch import nn\nnn.Linear(3, 4)(x) #@",
        "import torch\ntorch.ones(3).sum() #@",
        "import torch\nx = torch.ones(3)\n(x + 1).abs() #@",
        "import torch\nx = torch.ones(3)\nx[0] #@",
        "import torch\nx = torch.ones(3)\nx.T #@",
        "import torch\nhead, tail = torch.ones(4).split(2)\nhead #@",
        "import torch\ntorch.ones(4).topk(2).indices #@",
        "from torch import nn\nout, weights = nn.MultiheadAttention(4, 2)(q, k, v)\nout #@",
        "from torch import nn\nnn.Parameter(x).sum() #@",
    ],
)
def test_tensor_expressions_infer_to_the_stub_tensor(code: str) -> None:
    inferred = _inferred(code)
    assert inferred and all(_is_tensor(value) for value in inferred), inferred


def test_scalars_have_a_type_but_no_value() -> None:
    inferred = _inferred("import torch\ntorch.ones(3).dim() #@")
    assert [(type(v).__name__, v.pytype()) for v in inferred] == [("Instance", "builtins.int")]
    assert {v.pytype() for v in _inferred("import torch\ntorch.ones(3).item() #@")} == {
        "builtins.int",
        "builtins.float",
        "builtins.bool",
        "builtins.complex",
    }


def test_metadata_and_mixed_kinds() -> None:
    assert [v.qname() for v in _inferred("import torch\ntorch.ones(3).shape #@")] == ["torch.Size"]
    assert [v.pytype() for v in _inferred("import torch\ntorch.ones(3).shape[0] #@")] == ["builtins.int"]
    assert [v.qname() for v in _inferred("import torch\ntorch.float16 #@")] == ["torch.dtype"]
    size = _inferred("import torch\ntorch.ones(3).size() #@")
    assert sorted(v.pytype() for v in size) == ["builtins.int", "torch.Size"]
    assert _inferred("import torch\ntorch.ones(3).tolist() #@") == [astroid.Uninferable]


def test_functions_keep_their_qualified_names() -> None:
    assert [v.qname() for v in _inferred("import torch\ntorch._dynamo.graph_break #@")] == ["torch._dynamo.graph_break"]
    assert [v.qname() for v in _inferred("from torch.nn.modules import Linear\nLinear #@")] == ["torch.nn.Linear"]


def test_user_module_calls_its_forward() -> None:
    code = """
from torch import nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
    def forward(self, x):
        return self.fc(x)
Net()(x) #@
"""
    assert any(_is_tensor(value) for value in _inferred(code))


def test_preload_is_idempotent_and_replaces_a_real_torch() -> None:
    preload_torch_stubs()
    cache = astroid.MANAGER.astroid_cache
    first = [cache[name] for name in STUB_MODULES]
    preload_torch_stubs()
    assert [cache[name] for name in STUB_MODULES] == first
    cache["torch"] = astroid.parse("REAL = True", module_name="torch")
    preload_torch_stubs()
    assert "Tensor" in cache["torch"].locals
