"""Compile-scope analysis: every entry-point form and every reachability edge."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from graphmend_lint.analysis.imports import ImportTable
from graphmend_lint.analysis.scope import ScopeFacts, analyze_scope
from graphmend_lint.config import Settings
from graphmend_lint.engine import run


def scope_of(source: str, mode: str = "compiled", module: str = "pkg.mod") -> ScopeFacts:
    tree = ast.parse(textwrap.dedent(source))
    return analyze_scope(tree, ImportTable.from_tree(tree, module), "mod.py", mode)


def traced(source: str, mode: str = "compiled") -> set[str]:
    return {f.qualname for f in scope_of(source, mode).functions}


MODEL = """
import torch
from torch import nn

class Block(nn.Module):
    def forward(self, x):
        return self.act(x)
    def act(self, x):
        return x.relu()

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
    def forward(self, x):
        return self.block(x)

def unrelated(x):
    return x
"""


@pytest.mark.parametrize(
    "entry",
    [
        "@torch.compile\ndef f(x):\n    return g(x)\ndef g(x):\n    return x",
        "@torch.compile(dynamic=False)\ndef f(x):\n    return g(x)\ndef g(x):\n    return x",
        "@torch._dynamo.optimize('eager')\ndef f(x):\n    return g(x)\ndef g(x):\n    return x",
        "def f(x):\n    return g(x)\ndef g(x):\n    return x\ncf = torch.compile(f)",
    ],
    ids=["decorator", "decorator-call", "dynamo-optimize", "compile-call"],
)
def test_function_entry_points(entry: str) -> None:
    assert traced("import torch\n" + entry) == {"f", "g"}


@pytest.mark.parametrize(
    ("header", "entry"),
    [
        ("import torch as T", "@T.compile\ndef f(x):\n    return x"),
        ("from torch import compile as tc", "def f(x):\n    return x\nc = tc(f)"),
    ],
    ids=["module-alias", "function-alias"],
)
def test_entry_points_through_aliases(header: str, entry: str) -> None:
    assert traced(header + "\n" + entry) == {"f"}


@pytest.mark.parametrize(
    "entry",
    [
        "compiled = torch.compile(Net())",
        "def main():\n    m = Net()\n    cm = torch.compile(m)",
        "def main():\n    m = Net()\n    m.compile()",
        "def main():\n    m = Net()\n    f = torch.compile(m.forward)",
    ],
    ids=["module-instance", "bound-variable", "method-compile", "forward-method"],
)
def test_module_entry_points_reach_submodules(entry: str) -> None:
    assert traced(MODEL + entry) == {"Net.forward", "Block.forward", "Block.act"}


def test_no_entry_point_means_nothing_is_traced() -> None:
    assert traced(MODEL) == set()


def test_modules_scope_takes_every_forward() -> None:
    assert traced(MODEL, "modules") == {"Net.forward", "Block.forward", "Block.act"}


def test_all_scope_takes_every_function() -> None:
    assert "unrelated" in traced(MODEL, "all")


def test_module_list_iteration_and_indexing() -> None:
    source = MODEL.replace("self.block = Block()", "self.blocks = nn.ModuleList([Block() for _ in range(2)])").replace(
        "return self.block(x)", "for b in self.blocks:\n            x = b(x)\n        return x"
    )
    assert traced(source + "c = torch.compile(Net())") == {"Net.forward", "Block.forward", "Block.act"}
    indexed = source.replace("for b in self.blocks:\n            x = b(x)", "x = self.blocks[0](x)")
    assert traced(indexed + "c = torch.compile(Net())") == {"Net.forward", "Block.forward", "Block.act"}


def test_super_forward_and_call_of_project_module() -> None:
    source = """
    import torch
    from torch import nn
    class Base(nn.Module):
        def forward(self, x):
            return x
    class Child(Base):
        def forward(self, x):
            return super().forward(x) + 1
    class Caller:
        def __call__(self, x):
            return x
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.caller = Caller()
        def forward(self, x):
            return self.caller(x)
    a = torch.compile(Child())
    b = torch.compile(Net())
    """
    assert traced(source) == {"Child.forward", "Base.forward", "Net.forward", "Caller.__call__"}


def test_project_decorator_wrapper_is_traced() -> None:
    source = """
    import torch
    from torch import nn
    def rope_update(forward):
        def update(self, ids):
            return ids
        def wrapper(self, x, ids):
            update(self, ids)
            return forward(self, x, ids)
        return wrapper
    class Rope(nn.Module):
        @rope_update
        def forward(self, x, ids):
            return x
    c = torch.compile(Rope())
    """
    assert traced(source) == {"Rope.forward", "rope_update.wrapper", "rope_update.update"}


def test_disabled_functions_and_eager_only_branches_stop_reachability() -> None:
    source = """
    import torch
    from transformers.utils import is_torchdynamo_compiling
    @torch.compiler.disable
    def logged(x):
        return x
    def eager_only(x):
        return x
    def compiled_only(x):
        return x
    @torch.compile
    def f(x):
        logged(x)
        if not torch.compiler.is_compiling():
            eager_only(x)
        if is_torchdynamo_compiling():
            compiled_only(x)
        else:
            eager_only(x)
        return x
    """
    facts = scope_of(source)
    assert {f.qualname for f in facts.functions} == {"f", "compiled_only"}
    assert facts.is_eager_only(15) and facts.is_eager_only(19) and not facts.is_eager_only(17)


def test_scope_chain_names_the_entry_point() -> None:
    facts = scope_of(MODEL + "compiled = torch.compile(Net())")
    chain = {f.qualname: f.chain for f in facts.functions}["Block.act"]
    assert chain == ("mod.py:20 torch.compile(Net())", "Net.forward", "Block.forward", "Block.act")


def test_recursion_is_bounded() -> None:
    source = "import torch\n@torch.compile\ndef f(x):\n    return g(x)\ndef g(x):\n    return f(x)\n"
    assert traced(source) == {"f", "g"}


def test_helper_in_another_file_is_reached(tmp_path: Path) -> None:
    package = tmp_path / "proj"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text(
        "import torch\n\ndef shrink(x):\n    if x.sum() > 0:\n        x = x * 0.5\n    return x\n\n"
        "def untouched(x):\n    if x.sum() > 0:\n        x = x * 0.5\n    return x\n"
    )
    (package / "train.py").write_text(
        "import torch\nfrom .helpers import shrink\n\ndef step(x):\n    return shrink(x) + 1\n\nc = torch.compile(step)\n"
    )
    report = run([str(package)], Settings(root=str(tmp_path)), jobs=1, use_cache=False)
    found = [(Path(d.path).name, d.start.line, d.code) for d in report.diagnostics]
    assert found == [("helpers.py", 4, "GM101")]
    assert report.diagnostics[0].scope_chain[-1] == "shrink"
