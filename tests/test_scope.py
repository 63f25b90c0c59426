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


def test_a_decorator_a_factory_call_made_and_a_helper_built_is_traced() -> None:
    """torchaudio's ``dropping_support = deprecated(message)``: the decorator is a name bound to a factory's
    call, and it returns the wrapper another function builds around the decorated one."""
    source = """
    import torch
    def wrap_deprecated(func, message):
        def wrapped(*args, **kwargs):
            return func(*args, **kwargs)
        return wrapped
    def deprecated(message):
        def decorator(func):
            wrapped = wrap_deprecated(func, message)
            return wrapped
        return decorator
    dropping_support = deprecated("gone")
    @dropping_support
    def oscillator_bank(x):
        return x
    @torch.compile
    def f(x):
        return oscillator_bank(x)
    """
    assert traced(source) == {"f", "oscillator_bank", "wrap_deprecated.wrapped"}


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


@pytest.mark.parametrize(
    "alias",
    [
        "torch.compiler.disable",
        "getattr(getattr(torch, 'compiler', None), 'disable', None) or nullwrap",  # timm's disable_compiler
        "getattr(compiler, 'disable')",
    ],
)
def test_an_alias_of_disable_stops_reachability_and_is_recorded(alias: str) -> None:
    source = f"""
    import torch
    from torch import compiler
    def nullwrap(fn):
        return fn
    disable_compiler = {alias}
    def inner(x):
        return x
    @disable_compiler
    def skipped(x):
        return inner(x)
    @torch.compile
    def f(x):
        return skipped(x)
    """
    facts = scope_of(source)
    assert {f.qualname for f in facts.functions} == {"f"}
    assert facts.disabled == ((10, 0),)


@pytest.mark.parametrize(
    "alias",
    ["nullwrap or torch.compiler.disable", "getattr(torch.compiler, 'enable', None)", "pick(torch.compiler.disable)"],
)
def test_what_is_not_provably_disable_keeps_tracing(alias: str) -> None:
    source = f"""
    import torch
    def nullwrap(fn):
        return fn
    def pick(fn):
        return nullwrap
    wrap = {alias}
    @wrap
    def helper(x):
        return x
    @torch.compile
    def f(x):
        return helper(x)
    """
    facts = scope_of(source)
    assert "helper" in {f.qualname for f in facts.functions} and not facts.disabled


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



def test_seed_sinks_name_what_a_later_seed_can_still_reach() -> None:
    source = """
import torch
from torch import nn
from transformers.utils import ModelOutput
from .shared import rotate

class Block(nn.Module):
    def forward(self, x):
        return self.dropout(x)

class Out(ModelOutput):
    pass

def helper(x):
    return x
"""
    sinks = scope_of(source, "modules").seed_sinks
    assert sinks.takes("helper", False)  # an untraced function
    assert sinks.takes("Out", False)  # its base's __call__ is a seed this run did not make
    assert sinks.takes("rotate", False)  # a re-export forwards the seed
    assert sinks.takes("Block.forward", True)  # a decorator seed may reach the wrappers it returns
    assert not sinks.takes("Block.forward", False)  # traced already
    assert not sinks.takes("Block", False)  # calling it runs the traced forward (nn.Module is torch's)
    assert not sinks.takes("Block.dropout", False)  # an attribute, no function of this file


def test_a_file_is_linted_again_only_for_seeds_that_reach_more(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``self.dropout(x)`` in a subclass seeds the base's attribute: nothing for the base's file to re-lint."""
    import graphmend_lint.engine as engine

    package = tmp_path / "proj"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text(
        "import torch\nfrom torch import nn\n\nclass Base(nn.Module):\n    def forward(self, x):\n"
        "        return self.dropout(x)\n\ndef scale(x):\n    if x.sum() > 0:\n        x = x * 0.5\n    return x\n"
    )
    (package / "model.py").write_text(
        "import torch\nfrom .base import Base\n\nclass Model(Base):\n    def forward(self, x):\n"
        "        return self.dropout(x) + 1\n"
    )
    analysed: list[str] = []
    analyze = engine.analyze
    monkeypatch.setattr(engine, "analyze", lambda source, path, *rest: analysed.append(Path(path).name) or analyze(source, path, *rest))
    settings = Settings(root=str(tmp_path), scope="modules")
    assert run([str(package)], settings, jobs=1, use_cache=False).diagnostics == []
    assert sorted(analysed) == ["__init__.py", "base.py", "model.py"]

    (package / "model.py").write_text((package / "model.py").read_text().replace("+ 1", "+ scale(x)").replace("Base\n", "Base, scale\n", 1))
    analysed.clear()
    found = [(Path(d.path).name, d.start.line, d.code) for d in run([str(package)], settings, jobs=1, use_cache=False).diagnostics]
    assert found == [("base.py", 9, "GM101")]
    assert sorted(analysed) == ["__init__.py", "base.py", "base.py", "model.py"]

# -- issue 14 §1: every entry form real code uses ---------------------------------------------------------------

ENTRY_MODEL = MODEL + """
def g_helper(x):
    return x
"""


@pytest.mark.parametrize(
    "entry",
    [
        "c = torch.compile(backend='eager')(unrelated)",
        "opts = dict(backend='eager')\nc = torch.compile(**opts)(unrelated)",
        "import functools\ncc = functools.partial(torch.compile, backend='eager')\nc = cc(unrelated)",
        "from functools import partial\ncc = partial(torch.compile, fullgraph=True)\n@cc\ndef h(x):\n    return unrelated(x)",
        "from functools import partial\n@partial(torch.compile, fullgraph=True)\ndef h(x):\n    return unrelated(x)",
        "my_compile = torch.compile\nc = my_compile(unrelated)",
        "import torch._dynamo\nc = torch._dynamo.optimize('eager')(unrelated)",
        "opt = torch._dynamo.optimize('eager')\n@opt\ndef h(x):\n    return unrelated(x)",
        "c = torch.compiler.compile(unrelated)",
        "def main():\n    c = torch.compile(mode='max-autotune')(unrelated)",
        "import torch._dynamo\nreport = torch._dynamo.explain(unrelated)(torch.ones(2))",
    ],
    ids=["curried", "curried-kwargs", "partial-call", "partial-decorator", "partial-inline-decorator", "alias",
         "dynamo-optimize-call", "dynamo-optimize-alias", "torch-compiler-compile", "curried-in-function",
         "dynamo-explain"],
)
def test_curried_and_option_forms(entry: str) -> None:
    assert "unrelated" in traced(ENTRY_MODEL + entry)


def test_a_configured_compile_function_is_found_in_a_file_that_never_spells_compile() -> None:
    """The quick text check that skips files with no compiling call knows configured compile functions."""
    source = "import torch\nfrom mylib import accelerate\ndef f(x):\n    return x.relu()\nc = accelerate(f)\n"
    tree = ast.parse(source)
    facts = analyze_scope(
        tree, ImportTable.from_tree(tree, "pkg.mod"), "mod.py", "compiled", (), ("mylib.accelerate",), source
    )
    assert {f.qualname for f in facts.functions} == {"f"}


NET = {"Net.forward", "Block.forward", "Block.act"}


@pytest.mark.parametrize(
    "entry",
    [
        "c = torch.compile(Net().half())",
        "c = torch.compile(Net().to('cpu').eval())",
        "c = torch.compile(Net().cuda())",
        "c = torch.compile(Net().float().train(False))",
        "m = Net()\nm = m.to('cpu')\nm = m.float()\nc = torch.compile(m)",
        "m = Net().eval()\nm.compile()",
        "m = Net()\nm.compile(backend='eager')",
        "def make():\n    return Net(), (1,)\nm, args = make()\nm = torch.compile(m)",
        "def make():\n    model = Net()\n    return model.eval()\nm = make()\nc = torch.compile(m)",
        "def make():\n    return {'x': 1}, Net()\n_, m = make()\nc = torch.compile(m)",
        "class Factory:\n    @classmethod\n    def build(cls):\n        return Net()\nc = torch.compile(Factory.build())",
        "def train():\n    model = Net()\n    model = torch.compile(model)",
        "def train(model):\n    model = torch.compile(model)\ndef main():\n    train(Net())",
        "def train(model, steps=1):\n    return torch.compile(model)\ntrain(steps=2, model=Net())",
        "class Trainer:\n    def __init__(self):\n        self.model = Net()\n    def setup(self):\n        self.model = torch.compile(self.model)",
        "if __name__ == '__main__':\n    model = Net()\n    model = torch.compile(model)",
        "models = [Net()]\nfor m in models:\n    c = torch.compile(m)",
    ],
    ids=["half", "to-eval", "cuda", "float-train", "rebound-chain", "method-compile-chain", "method-compile-options",
         "factory-tuple", "factory-variable", "factory-second-element", "classmethod-factory", "inside-train",
         "train-parameter", "train-keyword", "attribute-in-method", "main-guard", "loop-variable"],
)
def test_module_forms_reach_the_module(entry: str) -> None:
    assert traced(MODEL + entry) == NET


@pytest.mark.parametrize(
    "entry",
    [
        "def train(model, batches):\n    model.train()\n    compiled = torch.compile(model)",
        "def fit(layer):\n    return torch.compile(layer.eval(), mode='max-autotune')",
        "def step(model, batch):\n    model.forward = torch.compile(model.forward)",
    ],
    ids=["uncalled-train", "uncalled-chain", "forward-attribute"],
)
def test_a_compiled_value_nothing_resolves_compiles_the_files_modules(entry: str) -> None:
    """Training code compiles a parameter no call passes: the file's own modules are what it can compile."""
    assert traced(MODEL + entry) == NET


def test_a_compiled_lambda_traces_what_it_calls() -> None:
    assert traced(MODEL + "c = torch.compile(lambda x: unrelated(x) + 1)") == {"unrelated"}
    assert traced(MODEL + "c = torch.compile(lambda x: Net()(x))") == NET | {"Net.__init__"}


def test_a_class_built_in_traced_code_has_its_init_traced() -> None:
    """Dynamo traces the ``__init__`` of an object traced code builds (PSMNet's ``disparityregression(n)(x)`` in
    ``forward``: GB0007 at its ``Variable``); a class built only outside traced code is not."""
    built = "import torch\n\n\nclass Box:\n    def __init__(self, t):\n        self.t = t\n\n\ndef f(x):\n    return Box(x).t\n"
    assert traced(built + "c = torch.compile(f)") == {"f", "Box.__init__"}
    assert traced(built + "b = Box(1)\nc = torch.compile(unrelated)\ndef unrelated(x):\n    return x\n") == {"unrelated"}


def test_forward_hooks_of_a_traced_module_are_traced() -> None:
    """Calling the module runs its hooks, and Dynamo traces them with its ``forward``; a hook on a module
    nothing compiles is not traced."""
    hooks = "def pre(module, args):\n    return None\ndef post(module, args, out):\n    return out\n"
    compiled = "m = Net()\nm.block.register_forward_pre_hook(pre)\nm.register_forward_hook(post)\nc = torch.compile(m)"
    assert traced(MODEL + hooks + compiled) == NET | {"pre", "post"}
    eager = "m = Net()\nm.register_forward_hook(post)\nc = torch.compile(unrelated)"
    assert traced(MODEL + hooks + eager) == {"unrelated"}


def test_a_resolved_or_method_compile_does_not_fall_back() -> None:
    assert traced(MODEL + "def f(x):\n    return x\nc = torch.compile(f)") == {"f"}
    assert traced(MODEL + "def go(m):\n    m.compile()") == set()


def test_an_isinstance_test_says_which_modules_a_loop_compiles() -> None:
    """torchtune's ``compile_model``: the loop walks an unknown model's modules; the test picks the compiled ones."""
    loop = "def compile_model(model):\n    for m in reversed(list(model.modules())):\n        if {test}:\n            m.compile(backend='inductor')"
    assert traced(MODEL + loop.format(test="isinstance(m, Block)")) == {"Block.forward", "Block.act"}
    assert traced(MODEL + loop.format(test="isinstance(m, Net) or isinstance(m, Block)")) == NET
    assert traced(MODEL + loop.format(test="isinstance(m, (Net, Block)) and m.training")) == NET
    derived = "class Wide(Block):\n    pass\n"
    assert "Block.forward" in traced(MODEL + derived + loop.format(test="isinstance(m, Block)"))
    as_function = "def go(model):\n    for m in model.modules():\n        if isinstance(m, Block):\n            c = torch.compile(m)"
    assert traced(MODEL + as_function) == {"Block.forward", "Block.act"}


@pytest.mark.parametrize(
    "entry",
    [
        "def go(model):\n    for m in model.modules():\n        if not isinstance(m, Block):\n            m.compile()",
        "def go(model):\n    for m in model.modules():\n        if isinstance(m, Block):\n            pass\n        else:\n            m.compile()",
        "def go(model):\n    for m in model.modules():\n        if isinstance(m, Block) or m.training:\n            m.compile()",
        "def go(model, other):\n    for m in model.modules():\n        if isinstance(other, Block):\n            m.compile()",
        "def go(model):\n    for m in model.modules():\n        if isinstance(m, nn.Linear):\n            m.compile()",
    ],
    ids=["negated", "else-branch", "or-with-other-test", "other-name", "imported-class"],
)
def test_an_isinstance_test_that_does_not_pin_the_class_compiles_nothing(entry: str) -> None:
    assert traced(MODEL + entry) == set()


def test_reading_a_property_in_traced_code_traces_its_body() -> None:
    """torchtune's ``self.attn.kv_cache.size``: ``kv_cache`` is ``None`` in ``__init__`` and a ``KVCache`` that
    ``setup_cache`` builds; ``size`` is a property whose body calls ``.item()`` (GB0124 logged there)."""
    source = """
import torch
from torch import nn

class KVCache(nn.Module):
    @property
    def size(self):
        return self.cache_pos[0].item()
    def capacity(self):
        return 4
    @size.setter
    def size(self, value):
        self.cache_pos[0] = value

class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.kv_cache = None
    def setup_cache(self):
        self.kv_cache = KVCache()

class Layer(nn.Module):
    def __init__(self, attn):
        super().__init__()
        self.attn = attn
    def forward(self, x):
        {body}
        return x

layer = torch.compile(Layer(Attention()))
"""
    assert "KVCache.size" in traced(source.replace("{body}", "empty = self.attn.kv_cache.size == 0"))
    not_read = traced(source.replace("{body}", "self.attn.kv_cache.size = 0"))  # a store runs the setter
    assert {"KVCache.size", "KVCache.capacity"}.isdisjoint(not_read)
    eager = "if not torch.compiler.is_compiling():\n            n = self.attn.kv_cache.size"
    assert "KVCache.size" not in traced(source.replace("{body}", eager))
    # an attribute that holds what a property returned: the property ran in ``__init__``, not here
    held = source.replace("        self.attn = attn\n", "        self.attn = attn\n        self.size = KVCache().size\n")
    assert "KVCache.size" not in traced(held.replace("{body}", "n = self.size"))


def test_compiled_objects_passed_into_compiled_code() -> None:
    direct = "@torch.compile\ndef step(model, x):\n    return model(x)\nstep(Net(), 1)"
    through_alias = "def step(model, x):\n    return model(x)\ncompiled = torch.compile(step)\ncompiled(Net(), 1)"
    keyword = "@torch.compile\ndef step(x, model=None):\n    return model(x)\nstep(1, model=Net())"
    for entry in (direct, through_alias, keyword):
        assert traced(MODEL + entry) == NET | {"step"}
    function_argument = "@torch.compile\ndef run(fn, x):\n    return fn(x)\nrun(unrelated, 1)"
    assert traced(MODEL + function_argument) == {"run", "unrelated"}


PROCESSORS = """
import torch
from typing import Optional

class LogitsProcessor:
    def __call__(self, ids, scores):
        raise NotImplementedError

class WatermarkLogitsProcessor(LogitsProcessor):
    def __call__(self, ids, scores):
        return self.bias(scores)
    def bias(self, scores):
        return scores + 1

class ModelEmaV3(torch.nn.Module):
    def update(self, model):
        return model
"""


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        # a compiled step calls what its caller passes; no call here says what: the parameter's name does
        ("@torch.compile\ndef step(ids, scores, logits_processor):\n    return logits_processor(ids, scores)",
         {"LogitsProcessor.__call__", "WatermarkLogitsProcessor.__call__", "WatermarkLogitsProcessor.bias"}),
        ("@torch.compile\ndef step(ids, scores, proc: Optional['WatermarkLogitsProcessor'] = None):\n"
         "    return proc(ids, scores)",
         {"WatermarkLogitsProcessor.__call__", "WatermarkLogitsProcessor.bias"}),
        ("@torch.compile\ndef step(ids, scores, proc: WatermarkLogitsProcessor | None):\n    return proc(ids, scores)",
         {"WatermarkLogitsProcessor.__call__", "WatermarkLogitsProcessor.bias"}),
        # a version suffix is left out of the parameter's name
        ("@torch.compile\ndef ema_step(model_ema, model):\n    return model_ema.update(model)", {"ModelEmaV3.update"}),
    ],
    ids=["snake-case-name-and-subclasses", "optional-string-annotation", "union-annotation", "version-suffix"],
)
def test_parameters_no_call_explains_are_read_by_annotation_and_name(entry: str, expected: set[str]) -> None:
    assert traced(PROCESSORS + entry) == expected | {entry.split("def ")[1].split("(")[0]}


@pytest.mark.parametrize(
    "entry",
    [
        "@torch.compile\ndef step(ids, scores, processor):\n    return processor(ids, scores)",  # no such class
        "@torch.compile\ndef step(ids, scores, logits_processor: int):\n    return logits_processor(ids, scores)",
        "class Net(torch.nn.Module):\n    def forward(self, logits_processor):\n        return logits_processor(1, 2)\n"
        "c = torch.compile(Net())",  # forward's arguments come from the module's caller
        # a call site says what the parameter holds: the name adds nothing
        "def helper(ids, scores):\n    return scores\n"
        "@torch.compile\ndef step(ids, scores, logits_processor):\n    return logits_processor(ids, scores)\n"
        "step(1, 2, helper)",
    ],
    ids=["unknown-name", "annotation-wins", "forward-parameter", "call-site-wins"],
)
def test_parameters_are_not_read_by_name_when_something_else_says(entry: str) -> None:
    assert not traced(PROCESSORS + entry) & {"LogitsProcessor.__call__", "WatermarkLogitsProcessor.__call__"}


HOOKS = """
import functools
import types
import torch

class Hook:
    def new_forward(self, module, x):
        return self.log(x)
    def log(self, x):
        return x

def wrapped(module, x):
    return x
"""


@pytest.mark.parametrize(
    ("install", "expected"),
    [
        ("def register(module, hook):\n    module.forward = functools.partial(hook.new_forward, module)\n"
         "register(Net().block, Hook())", {"Hook.new_forward", "Hook.log"}),
        ("def register(module):\n    module.forward = types.MethodType(wrapped, module)", {"wrapped"}),
        ("def register(module):\n    setattr(module, 'forward', functools.update_wrapper(functools.partial(wrapped, module), wrapped))",
         {"wrapped"}),
        ("def register(module):\n    original = module.forward\n"
         "    module.forward = functools.wraps(original)(functools.partial(wrapped, module))", {"wrapped"}),
    ],
    ids=["partial-of-hook-method", "method-type", "setattr-update-wrapper", "wraps"],
)
def test_replaced_forwards_run_where_modules_are_called(install: str, expected: set[str]) -> None:
    """Hook registries (diffusers') replace a submodule's forward: calling it in compiled code runs the replacement."""
    source = MODEL + HOOKS + install + "\nc = torch.compile(Net())"
    assert traced(source) == NET | expected
    assert traced(MODEL + HOOKS + install) == set()  # nothing compiled, nothing reached
    assert expected <= traced(MODEL + HOOKS + install, "modules")


def test_submodule_methods_and_constructor_arguments() -> None:
    source = MODEL + """
class Encoder(nn.Module):
    def embed(self, x):
        return x
    def forward(self, x):
        return x
class Wrapper(nn.Module):
    def __init__(self, inner, encoder):
        super().__init__()
        self.inner = inner
        self.encoder = encoder
    def forward(self, x):
        return self.inner(self.encoder.embed(x))
c = torch.compile(Wrapper(Block(), encoder=Encoder()))
"""
    assert traced(source) == {"Wrapper.forward", "Encoder.embed", "Block.forward", "Block.act"}


def test_submodules_unpacked_from_one_factory_call() -> None:
    """transformers' Perceiver: ``self.position_embeddings, self.positions_projection = build(...)``."""
    source = MODEL + """
class Fourier(nn.Module):
    def forward(self, x):
        return x
class Trainable(nn.Module):
    def forward(self, x):
        return x
def build(kind):
    if kind == "fourier":
        encoding = Fourier()
    else:
        encoding = Trainable()
    return encoding, Block()
class Pre(nn.Module):
    def __init__(self):
        super().__init__()
        self.position_embeddings, self.projection = build("fourier")
    def forward(self, x):
        return self.projection(self.position_embeddings(x))
c = torch.compile(Pre())
"""
    assert traced(source) == {"Pre.forward", "Fourier.forward", "Trainable.forward", "Block.forward", "Block.act"}


def test_sequential_and_attention_tables() -> None:
    source = MODEL + """
ATTENTION = {"eager": Block, "other": Net}
class Layer(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.attn = ATTENTION[kind]()
    def forward(self, x):
        return self.attn(x)
a = torch.compile(nn.Sequential(Block(), Block()))
b = torch.compile(Layer("eager"))
"""
    assert traced(source) == {"Layer.forward", "Net.forward", "Block.forward", "Block.act"}


@pytest.mark.parametrize(
    "entry",
    [
        "import re\npattern = re.compile('x')",
        "code = compile('1', 'f', 'eval')",
        "def compile(f):\n    return f\nc = compile(Net())",
        "class Builder:\n    def compile(self):\n        return 1\nBuilder().compile()",
        "m = Net()\nc = torch.compile",
        "import functools\ncc = functools.partial(print, 'x')\ncc(Net())",
        "def make():\n    return Net(), Block()\nm, other = make()\nc = torch.compile(other)",
        "s = 'torch.compile(Net())'",
        "unknown.compile()",
    ],
    ids=["re-compile", "builtin-compile", "local-compile", "other-compile-method", "no-call", "partial-of-other",
         "other-tuple-element", "in-a-string", "unknown-receiver"],
)
def test_lookalikes_are_no_entry_points(entry: str) -> None:
    found = traced(MODEL + entry)
    assert "Net.forward" not in found


def test_reachability_has_no_depth_limit_and_keeps_shortest_chains() -> None:
    helpers = "".join(f"def h{i}(x):\n    return h{i + 1}(x)\n" for i in range(60)) + "def h60(x):\n    return x\n"
    facts = scope_of("import torch\n" + helpers + "@torch.compile\ndef f(x):\n    return h0(x) + h59(x)\n")
    chains = {f.qualname: f.chain for f in facts.functions}
    assert len(chains) == 62
    assert chains["h60"][1:] == ("f", "h59", "h60")


def test_constant_results_are_not_traced() -> None:
    source = """
import functools
import torch
def _make_compile_constant(fn):
    setattr(fn, "_dynamo_marked_constant", True)
    return fn
@functools.lru_cache
@_make_compile_constant
def is_available():
    return probe()
@torch._dynamo.assume_constant_result
def capability():
    return probe()
def probe():
    return open("/proc/version").read()
def cached(x):
    return x
@torch.compile
def f(x):
    if is_available() and capability():
        return functools.lru_cache(cached)(x)
    return x
"""
    assert traced(source) == {"f"}


def test_methods_of_imported_base_classes_become_seeds() -> None:
    source = """
import torch
from transformers.modeling_utils import PreTrainedModel
class Model(PreTrainedModel):
    def forward(self, x):
        self.warn_if_padding(x)
        return self.head(x)
c = torch.compile(Model())
"""
    facts = scope_of(source)
    assert {s.qualname for s in facts.seeds} >= {
        "transformers.modeling_utils.PreTrainedModel.warn_if_padding",
        "transformers.modeling_utils.PreTrainedModel.head",
    }


def test_branches_constant_under_compile_are_not_traced() -> None:
    source = """
import torch
import warnings
def scripted(x):
    return x
def compiled(x):
    return x
@torch.compile
def f(x, aux):
    if torch.jit.is_scripting():
        if not aux:
            warnings.warn("scripted")
        return scripted(x)
    if not torch.jit.is_scripting() and aux:
        x = compiled(x)
    if aux or torch.compiler.is_compiling():
        return x
    else:
        return scripted(x)
"""
    facts = scope_of(source)
    assert {f.qualname for f in facts.functions} == {"f", "compiled"}
    assert all(facts.is_eager_only(line) for line in (11, 12, 13, 19))
    assert not facts.is_eager_only(15)


def test_modules_added_to_containers_are_reached() -> None:
    source = MODEL + """
class Appended(nn.Module):
    def __init__(self, depth):
        super().__init__()
        self.blocks = nn.ModuleList()
        for _ in range(depth):
            self.blocks.append(Block())
    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x
class Built(nn.Module):
    def __init__(self, depth):
        super().__init__()
        layers = []
        for _ in range(depth):
            layers.append(Block())
        self.trunk = nn.Sequential(*layers)
        self.heads = nn.ModuleList(make_heads())
    def forward(self, x):
        return self.heads[0](self.trunk(x))
def make_heads():
    heads = []
    heads.extend([Net()])
    return heads
a = torch.compile(Appended(2))
b = torch.compile(Built(2))
"""
    assert traced(source) >= {"Appended.forward", "Built.forward", "Block.forward", "Block.act", "Net.forward"}
    assert "make_heads" not in traced(source)


def test_modules_handed_to_a_base_init_are_reached() -> None:
    """torchaudio's ``Emformer`` builds its layers and passes them on with ``super().__init__(layers, ...)``;
    the base stores them and loops over them in ``forward``."""
    source = MODEL + """
class Impl(nn.Module):
    def __init__(self, layers, width):
        super().__init__()
        self.layers = layers
    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
class Stack(Impl):
    def __init__(self, depth):
        layers = nn.ModuleList([Block() for _ in range(depth)])
        super().__init__(layers, 4)
m = torch.compile(Stack(2))
"""
    assert {"Impl.forward", "Block.forward"} <= traced(source)
    assert "Block.forward" in traced(source.replace("super().__init__(layers, 4)", "super(Stack, self).__init__(layers, 4)"))
    assert "Block.forward" not in traced(source.replace("super().__init__(layers, 4)", "super().__init__(nn.ModuleList(), 4)"))


def test_members_of_a_container_subclass_are_what_its_init_hands_the_container() -> None:
    """torchani's ``Sequential(nn.ModuleList)`` loops ``for module in self:`` over the ``*modules`` its
    ``__init__`` passes on with ``super().__init__(modules)``; its ``Ensemble`` does the same with a list."""
    source = MODEL + """
class Head(nn.Module):
    def forward(self, x):
        return x
class Chain(nn.ModuleList):
    def __init__(self, *modules):
        super(Chain, self).__init__(modules)
    def forward(self, x):
        for module in self:
            x = module(x)
        return x
class Pool(nn.ModuleDict):
    def __init__(self, blocks):
        super().__init__({str(i): b for i, b in enumerate(blocks)})
    def forward(self, x):
        return sum(m(x) for _, m in self.items())
m = torch.compile(Chain(Pool([Block()]), Head()))
"""
    assert {"Chain.forward", "Pool.forward", "Block.forward", "Head.forward"} <= traced(source)
    unhanded = source.replace("super(Chain, self).__init__(modules)", "super().__init__()")
    assert {"Pool.forward", "Head.forward"}.isdisjoint(traced(unhanded))


def test_helpers_called_in_lambdas_are_reached() -> None:
    source = "import torch\ndef g(t):\n    return t\n@torch.compile\ndef f(xs):\n    return list(map(lambda t: g(t), xs))\n"
    assert traced(source) == {"f", "g"}


NAMESPACE = """
import types
from types import SimpleNamespace
import torch

def check(x):
    return x
def unused(x):
    return x
utils = {builder}(check=check, unused=unused, scale=2)
diffusion_utils = utils
{rebind}
@torch.compile
def f(x):
    return diffusion_utils.check(x) * utils.scale
"""


@pytest.mark.parametrize(
    ("builder", "rebind", "expected"),
    [
        ("types.SimpleNamespace", "", {"f", "check"}),
        ("SimpleNamespace", "", {"f", "check"}),
        # a name bound twice may be either: no namespace is assumed
        ("types.SimpleNamespace", "diffusion_utils = object()", {"f"}),
        # a local class of that name is no namespace
        ("Holder", "", {"f"}),
    ],
    ids=["types-module", "imported-class", "rebound", "other-class"],
)
def test_functions_a_namespace_holds_are_reached(builder: str, rebind: str, expected: set[str]) -> None:
    holder = "class Holder:\n    def __init__(self, **kw):\n        pass\n" if builder == "Holder" else ""
    assert traced(holder + NAMESPACE.format(builder=builder, rebind=rebind)) == expected


CLASS_HELD_FUNCTION = """
import torch
from torch import nn

def conve(h):
    return h
def distmult(h):
    return h

class Interaction(nn.Module):
    func = None
    def forward(self, h):
        return {call}(h)

class ConvE(Interaction):
    func = conve

class DistMult(Interaction):
    func = distmult

m = torch.compile({built}())
"""


@pytest.mark.parametrize(
    ("call", "built", "expected"),
    [
        ("self.__class__.func", "ConvE", {"Interaction.forward", "conve"}),
        ("type(self).func", "ConvE", {"Interaction.forward", "conve"}),
        ("self.func", "ConvE", {"Interaction.forward", "conve"}),
        # a subclass nothing builds keeps its function out
        ("self.__class__.func", "Interaction", {"Interaction.forward"}),
        ("type(other).func", "ConvE", {"Interaction.forward"}),
    ],
    ids=["dunder-class", "type-of-self", "self", "base-built", "type-of-other"],
)
def test_functions_a_subclass_body_binds_are_reached_through_the_class_of_self(
    call: str, built: str, expected: set[str]
) -> None:
    assert traced(CLASS_HELD_FUNCTION.format(call=call, built=built)) == expected


LAYER_BY_NAME = """
import torch
from torch import nn

class SingleRNN(nn.Module):
    def __init__(self, rnn_type, size):
        super().__init__()
        self.rnn = getattr(nn, rnn_type)(size, size)
    def forward(self, x):
        return self.rnn(x)[0]

class DPRNN(nn.Module):
    def __init__(self, size=4, rnn_type={default}):
        super().__init__()
        self.row = SingleRNN(rnn_type, size)
    def forward(self, x):
        return self.row(x)
"""


@pytest.mark.parametrize(
    ("default", "entry", "expected"),
    [
        ('"LSTM"', "m = torch.compile(DPRNN())", ("torch.nn.LSTM",)),
        ('"LSTM"', "def build(kind):\n    return DPRNN(rnn_type=kind)\nm = torch.compile(build('GRU'))",
         ("torch.nn.GRU",)),
        ('"LSTM"', "m = torch.compile(DPRNN(4, 'GRU'))\nn = DPRNN()", ("torch.nn.GRU", "torch.nn.LSTM")),
        ('"LSTM"', "def build(kind):\n    return DPRNN(rnn_type=kind)\nm = torch.compile(build(input()))", ()),
        ('"LSTM"', "def build(**kw):\n    return DPRNN(**kw)\nm = torch.compile(build())", ()),
        ('"LSTM"', "m = DPRNN()", ()),  # nothing traced: nothing looked up
    ],
    ids=["defaults", "through-a-factory", "two-values", "unknown-argument", "unpacked-keywords", "not-compiled"],
)
def test_getattr_of_a_module_reads_the_strings_passed_down(default: str, entry: str, expected: tuple[str, ...]) -> None:
    """``getattr(nn, rnn_type)``: every literal the file passes down to ``rnn_type`` (GM501 reads a single one)."""
    source = textwrap.dedent(LAYER_BY_NAME).replace("{default}", default) + entry
    facts = scope_of(source)
    assert facts.looked_up(8, 19) == expected


def test_calls_into_record_which_traced_call_runs_which_function() -> None:
    """``self.block(x)`` and ``layer(x)`` over a ``ModuleList`` run ``Block.forward``: value typing reads its
    parameters from those calls."""
    facts = scope_of(
        """
        import torch
        from torch import nn

        class Block(nn.Module):
            def forward(self, x, mask):
                return x

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()
                self.layers = nn.ModuleList([Block() for _ in range(2)])
            def forward(self, x):
                x = self.block(x, x > 0)
                for layer in self.layers:
                    x = layer(x, None)
                return x

        model = torch.compile(Net())
        """
    )
    assert set(facts.calls_of(6, 4)) == {(15, 12), (17, 16)}
    assert facts.calls_of(14, 4) == ()  # nothing in the file calls Net's forward


def test_a_callable_object_a_parameter_keeps_is_followed() -> None:
    """NeMo's ``transcribe_step(model, ...)`` calls ``model.decoding(...)``: an instance of a plain class
    whose ``__call__`` runs ``forward`` (its ``.tolist()`` logs GB0124, measured). ``decoding`` is an
    attribute, no method, of any local class."""
    source = """
        import torch
        from torch import nn

        class Decoder:
            def forward(self, x):
                return x.tolist()

            def __call__(self, *args):
                return self.forward(*args)

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.decoding = Decoder()

            def forward(self, x):
                return x

        def step(model, x):
            return model.decoding(model(x))

        compiled = torch.compile(step)
    """
    assert traced(source) == {"step", "Model.forward", "Decoder.__call__", "Decoder.forward"}


def test_a_self_method_a_built_subclass_overrides_is_traced_too() -> None:
    """pytorch-metric-learning: the base's ``forward`` calls ``self.compute_loss``, which the compiled subclass defines."""
    source = (
        "import torch\n"
        "class Base(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return self.compute_loss(x)\n"
        "    def compute_loss(self, x):\n"
        "        raise NotImplementedError\n"
        "class Pair(Base):\n"
        "    def compute_loss(self, x):\n"
        "        return x\n"
        "class NeverBuilt(Base):\n"
        "    def compute_loss(self, x):\n"
        "        return -x\n"
        "loss = torch.compile(Pair())\n"
    )
    assert traced(source) == {"Base.forward", "Base.compute_loss", "Pair.compute_loss"}


def test_getattr_of_a_computed_name_reaches_the_methods_it_can_name() -> None:
    """pytorch-metric-learning's reducers: ``getattr(self, "{}_reduction".format(kind))(losses)``."""
    source = (
        "import torch\n"
        "class Reducer(torch.nn.Module):\n"
        "    def forward(self, losses, kind):\n"
        "        func = self.get_reduction_func(kind)\n"
        "        getattr(self, f'check_{kind}')(losses)\n"
        "        return func(losses)\n"
        "    def get_reduction_func(self, kind):\n"
        "        return getattr(self, '{}_reduction'.format(kind))\n"
        "    def check_pair(self, losses):\n"
        "        pass\n"
        "    def element_reduction(self, losses):\n"
        "        return losses.mean()\n"
        "    def unrelated(self, losses):\n"
        "        return losses\n"
        "class Threshold(Reducer):\n"
        "    def pair_reduction(self, losses):\n"
        "        return losses.sum()\n"
        "reducer = torch.compile(Threshold())\n"
    )
    assert traced(source) == {
        "Reducer.forward", "Reducer.get_reduction_func", "Reducer.check_pair", "Reducer.element_reduction",
        "Threshold.pair_reduction",
    }  # fmt: skip


def test_getattr_of_an_f_string_reaches_the_attributes_the_calls_spell() -> None:
    """DUSt3R's ``getattr(self, f'head{head_num}')`` with ``head_num`` 1 or 2 from the calls: each head, here a
    nested function a factory returns."""
    source = (
        "import torch\n"
        "def wrap(head):\n"
        "    def wrapper(x):\n"
        "        return head(x)\n"
        "    return wrapper\n"
        "def unused(x):\n"
        "    return x\n"
        "class Model(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.head1 = wrap(torch.nn.Linear(2, 2))\n"
        "        self.head3 = unused\n"
        "    def _head(self, num, x):\n"
        "        head = getattr(self, f'head{num}')\n"
        "        return head(x)\n"
        "    def forward(self, x):\n"
        "        return self._head(1, x)\n"
        "model = torch.compile(Model())\n"
    )
    assert traced(source) == {"Model.forward", "Model._head", "wrap.wrapper"}


def test_a_custom_autograd_function_applied_in_compiled_code_traces_forward_and_backward() -> None:
    """guided-diffusion's ``CheckpointFunction.apply``: Dynamo speculates ``backward`` too (GB9186 inside it)."""
    source = (
        "import torch as th\n"
        "class CheckpointFunction(th.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        return x * 2\n"
        "    @staticmethod\n"
        "    def backward(ctx, grad):\n"
        "        return grad * 2\n"
        "class Other:\n"
        "    @staticmethod\n"
        "    def apply(x):\n"
        "        return x\n"
        "    def backward(self):\n"
        "        pass\n"
        "@th.compile\n"
        "def f(x):\n"
        "    return CheckpointFunction.apply(x) + Other.apply(x)\n"
    )
    assert traced(source) == {"f", "CheckpointFunction.forward", "CheckpointFunction.backward", "Other.apply"}


def test_modules_named_by_class_attributes_by_extension_and_by_spelled_strings_are_traced() -> None:
    """demucs: ``augment.Shift(...)`` through ``class augment: Shift = Shift``, ``augments += [...]``, and
    ``getattr(augment, aug.capitalize())(**kw)`` for ``aug in ['scale', 'remix']``."""
    source = (
        "import torch\n"
        "from torch import nn\n"
        "class Shift(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x\n"
        "class Flip(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return -x\n"
        "class Scale(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x * 2\n"
        "class Remix(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x.flip(0)\n"
        "class Unused(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x\n"
        "class augment:\n"
        "    Shift = Shift\n"
        "    Flip = Flip\n"
        "    Scale = Scale\n"
        "    Remix = Remix\n"
        "    Unused = Unused\n"
        "class Mix(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        augments = [augment.Shift()]\n"
        "        augments += [augment.Flip()]\n"
        "        for aug in ['scale', 'remix']:\n"
        "            augments.append(getattr(augment, aug.capitalize())())\n"
        "        self.augment = nn.Sequential(*augments)\n"
        "    def forward(self, x):\n"
        "        return self.augment(x)\n"
        "model = torch.compile(Mix())\n"
    )
    assert traced(source) == {"Mix.forward", "Shift.forward", "Flip.forward", "Scale.forward", "Remix.forward"}


def test_modules_added_to_a_module_dict_and_walked_through_items_are_traced() -> None:
    """NVlabs' EDM2 UNet: ``self.enc[name] = Block(...)`` in ``__init__``, ``for name, block in self.enc.items()``
    in ``forward``; ``.values()`` gives the blocks too, ``.keys()`` names only."""
    found = traced(
        "import torch\n"
        "class Block(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x\n"
        "class Head(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x\n"
        "class Other(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x\n"
        "class UNet(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.enc = torch.nn.ModuleDict()\n"
        "        self.enc['b0'] = Block()\n"
        "        self.dec = torch.nn.ModuleDict({'h': Head()})\n"
        "        self.skip = torch.nn.ModuleDict({'o': Other()})\n"
        "    def forward(self, x):\n"
        "        for name, block in self.enc.items():\n"
        "            x = block(x)\n"
        "        for head in self.dec.values():\n"
        "            x = head(x)\n"
        "        for key in self.skip.keys():\n"
        "            key(x)\n"
        "        return x\n"
        "model = torch.compile(UNet())\n"
    )
    assert found == {"UNet.forward", "Block.forward", "Head.forward"}


SOLE_MODEL = """
import torch
from torch import nn

class Block(nn.Module):
    def forward(self, x):
        return x.relu()

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
    def forward(self, x):
        return self.block(x)
"""


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        ("def step(model, x):\n    model.eval()\n    return model(x)\n", {"step", "Net.forward", "Block.forward"}),
        ("def step(net: nn.Module, x):\n    return net(x)\n", {"step", "Net.forward", "Block.forward"}),
        ("def step(ema_model, x):\n    return ema_model(x)\n", {"step", "Net.forward", "Block.forward"}),
        # not named or annotated as a model, but called: the file's model is what it was written to call
        ("def step(fn, x):\n    return fn(x)\n", {"step", "Net.forward", "Block.forward"}),
        # not called: a loss or callback handed on says nothing of what it is
        ("def step(fn, x):\n    return x.relu(), fn\n", {"step"}),
        # a default says what the parameter holds
        ("def step(x, fn=lambda v: v):\n    return fn(x)\n", {"step"}),
    ],
    ids=["model", "annotated-module", "ema-model", "called-other-name", "other-name-not-called", "defaulted"],
)
def test_a_step_functions_model_parameter_is_the_files_sole_model(step: str, expected: set[str]) -> None:
    """``torch.compile(evaluate_step)`` with the model built by a caller the file does not show."""
    assert traced(SOLE_MODEL + step + "c = torch.compile(step)\n") == expected


CRITIC = "class Critic(nn.Module):\n    def forward(self, x):\n        return x\n"


def test_a_compiled_steps_called_parameters_may_be_any_of_the_files_models() -> None:
    """GLPDepth's ``train_step(model, criterion_d, ...)`` with the model and the loss built elsewhere: each
    called parameter may be either root model (``Block`` is built by ``Net``, so it is no root)."""
    step = "def step(model, criterion, x):\n    return criterion(model(x))\nc = torch.compile(step)\n"
    assert traced(SOLE_MODEL + CRITIC + step) == {"step", "Net.forward", "Block.forward", "Critic.forward"}


def test_a_compiled_forwards_optional_called_parameter_may_be_the_files_other_models() -> None:
    """VIBE's compiled ``VIBELoss.forward(..., motion_discriminator=None)`` calls
    ``motion_discriminator(motion)``: a ``None`` default says only that the caller may pass nothing, and
    what it passes is one of the file's other root models (the loss itself is no candidate)."""
    loss = (
        "class Loss(nn.Module):\n    def forward(self, x, critic=None):\n        return critic(x)\n"
        "c = torch.compile(Loss())\n"
    )
    assert traced(SOLE_MODEL + CRITIC + loss) == {"Loss.forward", "Net.forward", "Block.forward", "Critic.forward"}


def test_a_called_parameter_stays_unresolved_where_the_step_has_a_caller_or_the_file_many_models() -> None:
    helper = "def helper(layer, x):\n    return layer(x)\ndef step(x):\n    return helper(x.relu, x)\nc = torch.compile(step)\n"
    assert traced(SOLE_MODEL + CRITIC + helper) == {"step", "helper"}
    many = "".join(CRITIC.replace("Critic", f"Critic{i}") for i in range(3))
    step = "def step(model, x):\n    return model(x)\nc = torch.compile(step)\n"
    assert traced(SOLE_MODEL + many + step) == {"step"}


def test_a_model_a_function_assigns_under_global_is_followed() -> None:
    """PSMNet's ``main()`` runs ``global model`` then ``model = stackhourglass(...)``; the compiled ``test()``
    calls ``model(imgL, imgR)``."""
    source = SOLE_MODEL + (
        "def test(x):\n    return model(x)\n"
        "def main():\n    global model\n    model = Net()\n    return torch.compile(test)\n"
    )
    assert traced(source) == {"test", "Net.forward", "Block.forward"}
