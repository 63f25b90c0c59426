"""GM524: a bound method of an object built in compiled code, stored where it outlives the call."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.assigned_values import bound_values
from graphmend_lint.analysis.fresh_objects import fresh_instance_class, method_of
from graphmend_lint.analysis.lookup import outlives_the_frame
from graphmend_lint.analysis.values import ValueOracle
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.break_sites import BreakFinder, Verdict, break_finder
from graphmend_lint.rules.gb_types import gb_types

#: ``torch.distributions`` methods a sampler keeps bound (deepspeed's ``gumbel_rsample`` caches ``.rsample``).
_DISTRIBUTION_METHODS = frozenset(
    {"sample", "rsample", "sample_n", "log_prob", "cdf", "icdf", "entropy", "perplexity", "enumerate_support"}
)
#: Container methods that store their (last) argument.
_STORING_METHODS = frozenset({"append", "insert", "setdefault"})
_SCOPES = (nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)
NO_FIX = Fix.advice(
    "no automatic fix: store the object and call its method where needed (`cache[k] = sampler` ... "
    "`cache[k].rsample(shape)`), which Dynamo replays (measured), or build it outside the compiled function"
)
_BOX = (
    "import torch\n\ncache = {{}}\n\n\nclass Box:\n    def __init__(self, v):\n        self.v = v\n\n"
    "    def scale(self, x):\n        return x * self.v\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n{body}"
)


def _fresh_bound_method(values: ValueOracle, value: nodes.NodeNG) -> str | None:
    """``Box.scale`` for ``Box(2.0).scale`` (a method of an object of the file's own plain classes, or of a
    ``torch.distributions`` class, built right there), or for a name bound only to one; else ``None``."""
    if isinstance(value, nodes.Name):
        bound = bound_values(value)
        if not bound or len(bound) != 1 or bound[0].frame() is not value.frame():
            return None
        value = bound[0]
    if not (isinstance(value, nodes.Attribute) and isinstance(value.expr, nodes.Call)):
        return None
    klass = fresh_instance_class(value.expr)
    if klass is not None:
        return f"{klass.name}.{value.attrname}" if method_of(klass, value.attrname) is not None else None
    built = values.qualified_name(value.expr.func) or ""
    module, _, name = built.rpartition(".")
    if module.startswith("torch.distributions") and name[:1].isupper() and value.attrname in _DISTRIBUTION_METHODS:
        return f"{name}.{value.attrname}"
    return None


def _stored_value(statement: nodes.NodeNG) -> tuple[nodes.NodeNG, nodes.NodeNG] | None:
    """``(where, value)`` when *statement* stores *value* into an object that outlives the call: an item or
    attribute of ``self`` or of a module-level name (``gumbel_map[device] = gumbel``, ``self.fn = f``), or a
    container method that keeps its argument (``hooks.append(f)``)."""
    if isinstance(statement, nodes.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
        if isinstance(target, nodes.Subscript) and outlives_the_frame(target.value):
            return target, statement.value
        if isinstance(target, nodes.AssignAttr) and outlives_the_frame(target.expr):
            return target, statement.value
        return None
    if isinstance(statement, nodes.Expr) and isinstance(statement.value, nodes.Call):
        call = statement.value
        func = call.func
        if isinstance(func, nodes.Attribute) and func.attrname in _STORING_METHODS and call.args:
            if outlives_the_frame(func.expr):
                return func.expr, call.args[-1]
    return None


class EscapingBoundMethod(Rule):
    """## What it does
    Flags the `return` of a function in compiled code that stores a bound
    method of an object it built, such as `Box(2.0).scale` or
    `Gumbel(zero, one).rsample`, where the method outlives the call: in a
    module-level dict or list, or on `self` or another long-lived object.
    deepspeed's MoE gate caches `gumbel_map[device] =
    Gumbel(zero, one).rsample` this way, and the mixture-of-experts code that
    copies it (LLaMA-MoE) does too.

    ## Why is this bad
    Dynamo replays such a store after the graph, and to replay it must
    rebuild the bound method; the object was built inside the traced frame
    and has no source to rebuild it from. Dynamo logs "Reconstruction
    failure" (GB0092) where it replays the store: at the `return` of the
    function that stored it, and again at the `return` of each caller, and
    gives those functions up: it runs them eagerly, every op included
    (measured, torch 2.13, for the file's own classes and
    `torch.distributions`, stored into dicts, lists and attributes of
    modules and plain objects). Storing the object itself, a tensor's
    method, a class or a lambda does not break.

    ## Known limitations
    Only the storing function's `return` is reported, and only when nothing
    that runs between the store and it can break: a break there (also one
    in code this file does not show) is where Dynamo replays the store
    instead, at the call when the break is inside a called function. The
    callers' `return`s, logged too when nothing breaks on the way, are not
    reported: a break the linter misses on the way would make each a false
    alarm (measured on the held-out corpus, 2026-12-02).

    ## Example
    ```python
    gumbel_map = {}

    def gumbel_rsample(shape, device):
        gumbel = gumbel_map.get(device)
        if gumbel is None:
            gumbel = Gumbel(torch.tensor(0.0), torch.tensor(1.0)).rsample
            gumbel_map[device] = gumbel
        return gumbel(shape)
    ```

    ## Use instead
    Keep the distribution, not its bound method:
    ```python
        sampler = gumbel_map.get(device)
        if sampler is None:
            sampler = Gumbel(torch.tensor(0.0), torch.tensor(1.0))
            gumbel_map[device] = sampler
        return sampler.rsample(shape)
    ```

    ## Fix safety
    No automatic fix: what the container holds changes type, and other code
    may read it. The diagnostic carries a display-only hint.
    """

    code = "GM524"
    name = "escaping-bound-method"
    summary = "a bound method of an object built in compiled code, stored beyond the call, cannot be replayed"
    dynamo_gb = gb_types("GB0092")
    valid = (
        # the object itself is stored: Dynamo replays that
        _BOX.format(body="    cache['k'] = Box(2.0)\n    return cache['k'].scale(x)\n"),
        # a local that dies with the call
        _BOX.format(body="    scale = Box(2.0).scale\n    return scale(x)\n"),
        # a break comes first: the store is replayed there, where the print is reported
        _BOX.format(body="    cache['k'] = Box(2.0).scale\n    print('stored')\n    return x + 1\n"),
    )
    invalid = (
        Example(_BOX.format(body="    cache['k'] = Box(2.0).scale\n    return cache['k'](x)\n")),
        Example(
            "import torch\nfrom torch.distributions import Gumbel\n\ngumbel_map = {}\n\n\n"
            "def gumbel_rsample(shape, device):\n    gumbel = gumbel_map.get(device)\n    if gumbel is None:\n"
            "        gumbel = Gumbel(torch.tensor(0.0), torch.tensor(1.0)).rsample\n"
            "        gumbel_map[device] = gumbel\n    return gumbel(shape)\n\n\n"
            "@torch.compile\ndef gate(x: torch.Tensor):\n    noisy = x + gumbel_rsample(x.shape, x.device)\n"
            "    return noisy.softmax(-1)\n"
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        breaks: BreakFinder | None = None
        reported: set[nodes.Return] = set()
        for statement, traced in ctx.traced_nodes(nodes.Assign, nodes.Expr):
            stored = _stored_value(statement)
            method = _fresh_bound_method(ctx.values, stored[1]) if stored is not None else None
            if method is None:
                continue
            breaks = breaks or break_finder(ctx)
            for site in _replay_sites(breaks, statement):
                if site in reported:
                    continue
                reported.add(site)
                message = (
                    f"`{stored[0].as_string()}` keeps `{method}`, a method of an object built in compiled code: "
                    "Dynamo cannot rebuild it to replay the store, and breaks here"
                )
                yield ctx.report(site, message, traced, NO_FIX)


def _replay_sites(breaks: BreakFinder, store: nodes.NodeNG) -> Iterator[nodes.Return]:
    """The ``return`` statements of the storing function after *store*, when nothing that runs between them can
    break (every statement is proven clean: a break there, also one this file cannot see into, is where
    Dynamo would replay the store instead)."""
    function = store.frame()
    if not isinstance(function, nodes.FunctionDef):
        return
    own = [
        node
        for node in function.nodes_of_class(nodes.NodeNG, skip_klass=_SCOPES)
        if node.is_statement and node is not function
    ]
    for site in function.nodes_of_class(nodes.Return, skip_klass=_SCOPES):
        if site.lineno <= store.lineno:
            continue
        between = [node for node in own if store.lineno < node.lineno < site.lineno and not node.parent_of(site)]
        if all(breaks.verdict(node) is Verdict.CLEAN for node in between):
            yield site
