"""GM505: a comprehension whose own frame Dynamo may have to compile, over a non-tuple iterable."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.break_sites import bound_to_module
from graphmend_lint.analysis.assigned_values import bound_values
from graphmend_lint.analysis.module_attributes import constructor_of
from graphmend_lint.analysis.values import Kind, ValueOracle, enclosing_class
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic
from graphmend_lint.fixes.tuple_iterable import tuple_iterable_fix
from graphmend_lint.rules.base import Example, Rule, RuleOption
from graphmend_lint.rules.break_sites import BreakFinder, Verdict, break_finder
from graphmend_lint.rules.gb_types import gb_types

COMPREHENSIONS = (nodes.ListComp, nodes.SetComp, nodes.DictComp)
#: Callables whose result iterates as a tuple or range iterator, which Dynamo steps through.
_TUPLE_LIKE_CALLS = frozenset({"tuple", "range"})
_SKIPPED_BODY = (nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)
#: Methods whose result iterates a dict's keys, values or items.
_MAPPING_VIEWS = frozenset({"items", "keys", "values"})
#: Builtins whose iterator wraps another one.
_PAIRING_CALLS = frozenset({"zip", "enumerate"})
#: Module containers, which iterate a dict of submodules.
_MODULE_CONTAINERS = frozenset({"ModuleList", "ModuleDict", "Sequential", "ParameterList", "ParameterDict"})
_DISPLAYS = (nodes.Dict, nodes.Set, nodes.DictComp, nodes.SetComp)
_CAPTURING = "keys = {{f'output_{{k}}': getattr(self, f'output_{{k}}', False) for k in {flags}}}"
_HEADER = (
    "import torch\nfrom torch import nn\n\nFLAGS = {{'hidden_states': 1}}\n\n\nclass Wrapped(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n        self.inner = nn.{layer}(4, 4)\n"
    "        self.output_hidden_states = False\n\n    def forward(self, x: torch.Tensor):\n"
    "        {comprehension}\n        try:\n            out = self.inner(x)\n        finally:\n"
    "            keys.clear()\n        return out\n\n\nmodel = torch.compile(Wrapped())\n"
)
_DISPATCH = (
    "import torch\nfrom torch import nn\n\n\nclass Criterion(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.losses = ['count']\n        self.weights = {{'count': 2.0}}\n\n"
    "    def loss_count(self, x):\n        return {{'count': x * x.sum().item()}}\n\n"
    "    def get_loss(self, name, x):\n        table = {{'count': self.loss_count}}\n        return table[name](x)\n\n"
    "    def forward(self, x):\n        out = {{}}\n        for name in self.losses:\n"
    "            part = self.get_loss(name, x)\n            part = {{k: part[k] * self.weights[k] for k in {keys}}}\n"
    "            out.update(part)\n        return out\n\n\nmodel = torch.compile(Criterion())\n"
)
_SIZES = (
    "import torch\nimport torch.nn.functional as F\n\n\n@torch.compile\n"
    "def f(x: torch.Tensor, hs: torch.Tensor, ws: torch.Tensor):\n"
    "    return [F.interpolate(x, size=(h, w)) for h, w in {pairs}]\n"
)
_ITEMS = (
    "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, weights: list, scales: dict):\n"
    "    return [(x * w).sum().item() for w in {sizes}]\n"
)

_HELPER = (
    "import torch\n\n\ndef helper(t):\n    return t.tolist()\n\n\n@torch.compile\n"
    "def f(x: torch.Tensor, sizes: list):\n    return [helper(c) for i, c in {pairs}]\n"
)

_LOOP = (
    "import torch\n\nITEMS = [1.0, 2.0]\n\n\ndef helper(t):\n    return float(t.sum())\n\n\n@torch.compile\n"
    "def f(x: torch.Tensor):\n    h = x.abs()\n    for _ in range(2):\n        h = h + helper(x)\n"
    "    return [h * v for v in {items}]\n"
)

_PLAIN_LOOP = (
    "import torch\n\n\nclass Loop:\n    def __init__(self):\n        self.micro = 2\n\n"
    "    def step(self, batch: torch.Tensor, cond: dict):\n        for i in range(0, batch.shape[0], self.micro):\n"
    "            part = {k: v[i : i + self.micro] for k, v in cond.items()}\n"
    "            print(float(batch[i:].sum()), len(part))\n        return batch\n\n\nstep = torch.compile(Loop().step)\n"
)
_TORCH_AFTER_LOOP = (
    "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, n: int):\n    rows = [[] for _ in range(n)]\n"
    "    for i in range(n):\n        if x[i].sum() > 0:\n            rows[i].append(x[i])\n"
    "    return [torch.stack(r) for r in {rows} if r]\n"
)


def _steps_as_tuple(values: ValueOracle, iterable: nodes.NodeNG) -> bool:
    """Dynamo can step the iterable's iterator in any frame: a tuple, a range or a tensor (measured).

    A list display is one too: CPython compiles ``for v in [a, b]`` (in a
    comprehension as in a loop) to iterate a tuple. So is a ``torch.Size``
    (``x.shape``, ``x.size()``, a slice of either), a tuple subclass
    (measured, torch 2.13: no GB4347 over ``[a, len(ws)]``, ``y.shape``,
    ``y.size()[::-1]``).
    """
    if isinstance(iterable, (nodes.Tuple, nodes.List)):
        return True
    if isinstance(iterable, nodes.Subscript) and isinstance(iterable.slice, nodes.Slice):
        iterable = iterable.value  # x.shape[1:]
    if isinstance(iterable, nodes.Attribute) and iterable.attrname == "shape":
        return True
    if isinstance(iterable, nodes.Call) and isinstance(iterable.func, nodes.Attribute) and iterable.func.attrname == "size":
        if not iterable.args and values.is_tensor(iterable.func.expr):
            return True
    if isinstance(iterable, nodes.Call) and isinstance(iterable.func, nodes.Name):
        return iterable.func.name in _TUPLE_LIKE_CALLS
    return values.kind(iterable) is Kind.TENSOR


def _iterates_mapping_or_set(values: ValueOracle, iterable: nodes.NodeNG) -> bool:
    """*iterable* is a dict, a set, a view of a dict, ``zip``/``enumerate`` of anything, or a module container.

    When the comprehension's own body breaks, Dynamo compiles its frame on
    its own, and there it steps a list, ``sorted``/``reversed`` of one, a
    tuple or a string (measured, torch 2.13: no GB4347), but not these
    (GB4347 over dicts, ``.items()``/``.keys()``/``.values()``, sets,
    ``zip``, ``nn.ModuleList``; ``enumerate`` breaks there too, GB8335). An
    iterable of unknown type is not reported.
    """
    if isinstance(iterable, _DISPLAYS):
        return True
    if isinstance(iterable, nodes.Call):
        func = iterable.func
        if isinstance(func, nodes.Attribute):
            return func.attrname in _MAPPING_VIEWS
        return isinstance(func, nodes.Name) and func.name in _PAIRING_CALLS
    if not isinstance(iterable, (nodes.Name, nodes.Attribute)):
        return False
    constructor = constructor_of(values, iterable)  # self.layers = nn.ModuleList(...)
    if constructor is not None:
        return constructor.rpartition(".")[2] in _MODULE_CONTAINERS or constructor in {"dict", "set"}
    bound = bound_values(iterable) if isinstance(iterable, nodes.Name) else None
    return bool(bound) and all(isinstance(value, _DISPLAYS) for value in bound)


def _dynamo_compiles(values: ValueOracle, comprehension: nodes.NodeNG) -> bool:
    """Dynamo will compile the comprehension's own frame: it holds something of torch's.

    Dynamo compiles a frame only when it finds torch in it
    (``has_tensor_in_frame``): a global naming the torch module or one of its
    submodules, or NumPy (``torch.stack(...)`` in DETR's and GroundingDINO's
    comprehensions: GB4347, measured), or a local or free variable holding a
    tensor or an ``nn.Module`` (``self`` of a module class, or of no class
    of this file: a decorator's wrapper). guided-diffusion's
    ``{k: v[i : i + self.microbatch] for k, v in cond.items()}`` on a plain
    ``TrainLoop`` holds neither and runs eagerly (measured: no break).
    """
    targets = [generator.target for generator in comprehension.generators]
    bound = {name.name for target in targets for name in target.nodes_of_class(nodes.AssignName)}
    for name in comprehension.nodes_of_class(nodes.Name):
        if name.name in bound or name.scope() is not comprehension:
            continue
        if name.name == "self":
            klass = enclosing_class(name)  # none for a decorator's wrapper: transformers' capture_outputs
            if klass is None or values.is_module_class(klass):
                return True
        elif values.kind(name) is Kind.TENSOR:
            return True
        elif bound_to_module(name) and _torch_or_numpy(values.qualified_name(name) or ""):
            return True
    return False


def _torch_or_numpy(module: str) -> bool:
    return module in {"torch", "numpy"} or module.startswith(("torch.", "numpy."))


def frame_skipping_construct(breaks: BreakFinder, function: nodes.FunctionDef) -> tuple[str, int] | None:
    """What in *function* can make Dynamo run it eagerly, as ``(what, line)``; ``None`` when nothing can.

    A graph break inside a ``try`` block (in the block, or in code of this
    file it calls; code this file does not hold counts as possibly
    breaking), or inside a ``for``/``while`` body (in the body, or in code of
    this file it calls: torchaudio's RNN-T beam search, whose ``while`` loop
    calls a method that indexes a list with a tensor), leaves Dynamo no place
    to resume: it gives up on the frame (measured). A break inside another
    comprehension does not: Dynamo resumes after it (measured), unless that
    comprehension walks ``enumerate(...)``, whose iterator Dynamo cannot
    rebuild (GB8335): DETR's matcher breaks so at
    ``[linear_sum_assignment(c[i]) for i, c in enumerate(...)]`` and again
    (GB4347) in the comprehension on the next line (measured).
    """
    for node in function.nodes_of_class((nodes.Try, nodes.For, nodes.While), skip_klass=_SKIPPED_BODY):
        if isinstance(node, nodes.Try):
            if any(breaks.verdict(statement) is not Verdict.CLEAN for statement in node.body):
                return "anything in the `try`", node.lineno
        elif any(breaks.verdict(statement) is Verdict.BREAKS for statement in node.body):
            return "the loop", node.lineno
    for node in function.nodes_of_class(COMPREHENSIONS, skip_klass=_SKIPPED_BODY):
        iterable = node.generators[0].iter
        walks_enumerate = isinstance(iterable, nodes.Call) and isinstance(iterable.func, nodes.Name)
        if walks_enumerate and iterable.func.name == "enumerate":
            if breaks.breaking_node(node) is not None or breaks.breaking_call(node) is not None:
                return "the comprehension over `enumerate`", node.lineno
    return None


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in str(text).split(".")[:2] if part.isdigit())


class ComprehensionFrame(Rule):
    """## What it does
    Flags a list, set or dict comprehension over anything but a tuple (a
    list display, a shape), a `range` or a tensor (a dict, its `.items()`, a
    list, `zip(...)`, `enumerate(...)`, ...) in compiled code, when Dynamo will compile the
    comprehension's frame on its own:

    * the comprehension's body breaks the graph (`.item()`, a mask
      read, a print..., itself or in a function of this file it calls:
      DETR's `[linear_sum_assignment(c[i]) for i, c in enumerate(C.split(sizes, -1))]`,
      GB8335, measured) and it iterates a dict, a set, a dict view
      (`.items()`, `.keys()`, `.values()`), `zip(...)`, `enumerate(...)` or a
      module container (`nn.ModuleList`): over a list, `sorted(...)`, a tuple
      or a string Dynamo steps that frame (measured, no GB4347), and over
      an iterable of unknown type the rule stays quiet, or
    * Dynamo compiles its frame (it names torch or NumPy, or holds a tensor
      or `self` of an `nn.Module`: Dynamo's `has_tensor_in_frame`), and its
      function also holds what makes Dynamo give up on a whole frame: a
      `try` block calling code that breaks (or code this file does not
      show), a loop whose body breaks (itself, or in code of this file it
      calls), or a comprehension over `enumerate(...)` whose body breaks.
      (A break inside another comprehension does not: Dynamo resumes after
      it, measured.)

    The second case is transformers' output-capturing wrapper
    (`utils/output_capturing.py`, `recordable_keys = {... for k in
    capturable_flags}` before `try: outputs = func(self, ...)`), which breaks
    in every model whose forward breaks anywhere.

    ## Why is this bad
    On Python 3.11 and older a comprehension runs in a frame of its own that
    receives an iterator over its first iterable. When Dynamo cannot inline
    it (its body breaks), or runs its function eagerly (a break inside a
    `try` or a loop leaves no place to resume), it compiles that frame
    separately, and there it can step only through tuple, range and tensor
    iterators: over anything else it breaks again (GB4347, "Missing
    tp_iternext"; measured on torch 2.13 / Python 3.11 for dicts, `.items()`,
    `.keys()`, lists, sets, `zip`, `enumerate`, `sorted` and strings when the
    function runs eagerly; after a break in the body only for dicts, their
    views, sets, `zip` and module containers). A list display
    (`for v in [a, b]`) is compiled to a tuple, and a `torch.Size`
    (`x.shape`, `x.size()`) is one: neither breaks.

    ## Example
    ```python
    def forward(self, x):
        keys = {f"output_{k}": getattr(self, f"output_{k}", False) for k in FLAGS}
        try:
            out = self.lstm(x)[0]    # breaks: Dynamo gives up on forward
        finally:
            keys.clear()
        return out
    ```

    ## Use instead
    ```python
        keys = {f"output_{k}": getattr(self, f"output_{k}", False) for k in tuple(FLAGS)}
    ```

    ## Fix safety
    The fix wraps the first iterable in `tuple(...)`: same items, same
    order, taken before the first item is evaluated. It removes this break
    only; the one that made Dynamo compile the frame stays. It is **safe**
    when the comprehension's expressions make no calls, attribute reads or
    assignments (nothing can mutate the iterable while it is iterated), and
    **unsafe** otherwise: an expression that mutates the iterable would see
    the change, or raise "changed size during iteration", only in the
    original.

    ## Known limitations
    Whether the code a `try` calls breaks is followed only into this file;
    a wrapper whose `try` calls code of another file is flagged whether or
    not that code breaks (the fix is harmless then).
    """

    code = "GM505"
    name = "comprehension-frame-iterator"
    summary = "a comprehension over a non-tuple breaks in its own frame when Dynamo skips the function"
    dynamo_gb = gb_types("GB4347", "GB8335")
    options = {
        "target-version": RuleOption(
            "3.11",
            "the oldest Python the code runs on; from 3.12 comprehensions are inlined into their function "
            "(PEP 709) and the rule is silent",
        )
    }
    valid = (
        _HEADER.format(layer="LSTM", comprehension=_CAPTURING.format(flags="tuple(FLAGS)")),
        _HEADER.format(layer="LSTM", comprehension="keys = {f'output_{k}': False for k in FLAGS}"),
        _HEADER.format(layer="Linear", comprehension=_CAPTURING.format(flags="FLAGS")),
        _ITEMS.format(sizes="tuple(weights)"),
        # its own body breaks, but Dynamo steps a list, a sorted list, a shape in the comprehension's frame (measured)
        _ITEMS.format(sizes="weights") + _ITEMS.format(sizes="sorted(weights)").replace("def f", "def g"),
        _ITEMS.format(sizes="x.shape[1:]"),
        # nothing of torch's in the comprehension's frame (a plain object's `self`, ints): Dynamo runs it
        # eagerly without compiling it (guided-diffusion's training loop, measured)
        _PLAIN_LOOP,
    )
    invalid = (
        # D-FINE's criterion: a loss it dispatches through a dict of methods breaks inside the loop, so Dynamo runs
        # `forward` eagerly and compiles the dict comprehension's frame on its own (GB4347 there, measured)
        Example(_DISPATCH.format(keys="part"), fixed=_DISPATCH.format(keys="tuple(part)"), unsafe=True),
        Example(
            _HEADER.format(layer="LSTM", comprehension=_CAPTURING.format(flags="FLAGS")),
            fixed=_HEADER.format(layer="LSTM", comprehension=_CAPTURING.format(flags="tuple(FLAGS)")).replace(
                "nn\n\n", "nn\n\ntorch._dynamo.config.allow_rnn = True\n\n", 1  # GM501's unsafe fix, same round
            ),
            unsafe=True,
        ),
        Example(
            _HEADER.format(layer="GRU", comprehension="keys = [x for _ in FLAGS.items()]"),
            fixed=_HEADER.format(layer="GRU", comprehension="keys = [x for _ in tuple(FLAGS.items())]"),
        ),
        Example(_ITEMS.format(sizes="scales.values()"), fixed=_ITEMS.format(sizes="tuple(scales.values())"), unsafe=True),
        # the body calls a helper that breaks: GB8335 over enumerate (DETR's Hungarian matcher, measured)
        Example(
            _HELPER.format(pairs="enumerate(x.split(sizes, -1))"),
            fixed=_HELPER.format(pairs="tuple(enumerate(x.split(sizes, -1)))"),
            unsafe=True,
        ),
        # the loop calls a helper that breaks: Dynamo runs f eagerly (torchaudio's RNN-T beam search, measured)
        Example(_LOOP.format(items="ITEMS"), fixed=_LOOP.format(items="tuple(ITEMS)")),
        # naming torch is enough for Dynamo to compile the comprehension's frame (GroundingDINO, measured)
        Example(_TORCH_AFTER_LOOP.format(rows="rows"), fixed=_TORCH_AFTER_LOOP.format(rows="tuple(rows)"), unsafe=True),
        # a tensor given as a size breaks inside the comprehension (ViLT's position embeddings, measured)
        Example(
            _SIZES.format(pairs="zip(hs, ws)"),
            fixed=_SIZES.format(pairs="tuple(zip(hs, ws))").replace(
                "as F\n\n", "as F\n\ntorch._dynamo.config.capture_scalar_outputs = True\n\n", 1  # GM301's switch, same round
            ),
            unsafe=True,
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        if _version(ctx.options.get("target-version", "3.11")) >= (3, 12):
            return
        breaks = break_finder(ctx)
        for comprehension, traced in ctx.traced_nodes(*COMPREHENSIONS):
            function = comprehension.frame()
            if not isinstance(function, nodes.FunctionDef):
                continue
            if _steps_as_tuple(ctx.values, comprehension.generators[0].iter):
                continue
            # only over these does a break in the body alone make the comprehension's own frame break again
            over_mapping = _iterates_mapping_or_set(ctx.values, comprehension.generators[0].iter)
            inside = breaks.breaking_node(comprehension) if over_mapping else None
            called = breaks.breaking_call(comprehension) if over_mapping and inside is None else None
            if inside is not None:
                why = f"the graph break inside it (line {inside.lineno}) makes Dynamo compile its frame on its own"
            elif called is not None:
                why = f"the graph break in the code it calls (line {called.lineno}) makes Dynamo compile its frame on its own"
            else:
                skipping = _dynamo_compiles(ctx.values, comprehension) and frame_skipping_construct(
                    breaks, function
                )
                if not skipping:
                    continue
                what, line = skipping
                why = (
                    f"if {what} at line {line} breaks the graph, Dynamo runs this function eagerly "
                    "and compiles the comprehension's frame on its own"
                )
            message = f"comprehension over a non-tuple iterable: {why}, which breaks again there (Python <= 3.11)"
            yield ctx.report(comprehension, message, traced, tuple_iterable_fix(ctx.analysis, comprehension))
