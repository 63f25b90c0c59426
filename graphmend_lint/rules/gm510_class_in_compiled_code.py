"""GM510: a ``class`` statement executed inside code that torch.compile traces."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.dynamo_settings import setting_on
from graphmend_lint.analysis.values import ValueOracle
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix, Position
from graphmend_lint.fixes.dynamo_setting import enable_setting_fix
from graphmend_lint.rules.base import Example, Rule, RuleOption, switch_example, with_switch
from graphmend_lint.rules.gb_types import gb_types

TRACE_BUILD_CLASS = "enable_trace_load_build_class"
NO_FIX = Fix.advice(
    "no automatic fix: define the class once at module level (pass what it closes over as arguments)",
)
SETTING_FIX = (
    f"Set `torch._dynamo.config.{TRACE_BUILD_CLASS} = True` after the imports: Dynamo then traces the "
    "class statement (process-wide)"
)
_HEADER = "import torch\nfrom torch import nn\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
#: Modules whose global name in a frame's code makes Dynamo compile the frame (``has_tensor_in_frame``).
_TRACE_WORTHY_MODULES = frozenset(
    {"torch", "torch.nn", "torch.nn.functional", "torch.autograd", "torch.fft", "torch.linalg", "torch.special",
     "numpy"}
)  # fmt: skip


def _plain_body(statement: nodes.NodeNG) -> bool:
    """A class-body statement Dynamo was measured to trace once the setting is on: methods, constants, a docstring."""
    if isinstance(statement, (nodes.FunctionDef, nodes.Pass)):
        return True
    if isinstance(statement, nodes.Expr):
        return isinstance(statement.value, nodes.Const)
    if isinstance(statement, (nodes.Assign, nodes.AnnAssign)):
        return statement.value is None or isinstance(statement.value, nodes.Const)
    return False


def traces_with_setting(klass: nodes.ClassDef) -> bool:
    """*klass* is a statement ``enable_trace_load_build_class`` lets Dynamo trace (torch 2.13, measured).

    Measured to trace: no decorator, no ``metaclass=``, bases named (``nn.Module``,
    ``NamedTuple``, ``enum.Enum``), a body of methods and constants. A decorated
    class still breaks inside the decorator (``@dataclass`` sets attributes on
    the type, GB0467), and a body that builds a module breaks in the body.
    """
    return (
        klass.decorators is None
        and not klass.keywords
        and all(isinstance(base, (nodes.Name, nodes.Attribute)) for base in klass.bases)
        and all(_plain_body(statement) for statement in klass.body)
    )


def body_names_a_torch_module(values: ValueOracle, klass: nodes.ClassDef) -> bool:
    """The class body itself (not its methods) reads a module-level ``torch``/``nn``/``numpy`` name.

    Dynamo then compiles the body as a frame of its own when the class
    statement runs eagerly, and fails on its first instruction (GB0082, at
    the body's first line: the first decorator's). ``a: torch.Tensor`` is
    such a read unless ``from __future__ import annotations`` keeps
    annotations unevaluated.
    """
    lazy_annotations = "annotations" in klass.root().future_imports
    for statement in klass.body:
        if isinstance(statement, (nodes.FunctionDef, nodes.ClassDef)):
            continue
        parts = [statement.value] if lazy_annotations and isinstance(statement, nodes.AnnAssign) else [statement]
        for part in parts:
            if part is None:
                continue
            names = [part] if isinstance(part, nodes.Name) else part.nodes_of_class(nodes.Name, skip_klass=nodes.Lambda)
            if any(values.qualified_name(name) in _TRACE_WORTHY_MODULES for name in names):
                return True
    return False


class ClassInCompiledCode(Rule):
    """## What it does
    Flags `class` statements that run in code `torch.compile` traces: a class
    defined inside a compiled function, a `forward`, or a helper they call
    (a local `nn.Module` subclass, a `@dataclass` for an output, a
    `NamedTuple`, a small config holder).

    ## Why is this bad
    A `class` statement calls the builtin `__build_class__`, which Dynamo
    refuses unless `torch._dynamo.config.enable_trace_load_build_class` is
    on (off by default): it ends the graph there and runs the statement
    eagerly (GB8977, "Invalid call to `__build_class__`"; measured, torch
    2.13). When the class body names a torch module (`a: torch.Tensor`),
    Dynamo also fails on the class body itself, at its first line (GB0082):
    for a decorated class that is the decorator's line, reported too.
    Inside a loop the break makes Dynamo give up on the whole function.

    ## Example
    ```python
    @torch.compile
    def f(x):
        class Scale:
            factor = 2
        return x * Scale.factor
    ```

    ## Use instead
    Define the class once, at module level:
    ```python
    class Scale:
        factor = 2

    @torch.compile
    def f(x):
        return x * Scale.factor
    ```

    ## Fix safety
    A class without decorators or `metaclass=`, whose body holds only methods,
    constants and a docstring, gets an unsafe fix that turns
    `torch._dynamo.config.enable_trace_load_build_class` on after the
    module's imports; every finding in the file shares the one line. With it
    Dynamo traces such a class statement (measured, torch 2.13: plain
    classes, `nn.Module` and `NamedTuple` subclasses, enums; outputs equal).
    **Unsafe**: the setting is process-wide and marked experimental in
    Dynamo's config; importing the module now imports `torch._dynamo`;
    eagerly nothing changes. A decorated class (`@dataclass`) still breaks
    inside the decorator with the setting on, so it gets advice only: move
    the class to module level.

    A file that sets the switch at module level, or the rule option, is not
    flagged.
    """

    code = "GM510"
    name = "class-in-compiled-code"
    summary = "a `class` statement in compiled code splits the graph"
    dynamo_gb = gb_types("GB8977", "GB0082")
    options = {
        "enable-trace-load-build-class": RuleOption(
            False,
            "the program turns `torch._dynamo.config.enable_trace_load_build_class` on somewhere the linter "
            "cannot see",
        )
    }
    valid = (
        "import torch\n\n\nclass Scale:\n    factor = 2\n\n\n@torch.compile\ndef f(x):\n    return x * Scale.factor\n",
        with_switch(_HEADER + "    class Scale:\n        factor = 2\n    return x * Scale.factor\n", TRACE_BUILD_CLASS),
        # not compiled
        "import torch\n\n\ndef f(x):\n    class Scale:\n        factor = 2\n    return x * Scale.factor\n",
    )
    invalid = (
        switch_example(_HEADER + "    class Scale:\n        factor = 2\n    return x * Scale.factor\n", TRACE_BUILD_CLASS),
        switch_example(
            "import torch\nfrom torch import nn\n\n\ndef build(x):\n    class Box(nn.Module):\n"
            "        def forward(self, z):\n            return z + 1\n\n    return Box()(x)\n\n\n"
            "@torch.compile\ndef f(x: torch.Tensor):\n    return build(x * 2)\n",
            TRACE_BUILD_CLASS,
        ),
        Example(
            "import dataclasses\n\nimport torch\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
            "    @dataclasses.dataclass\n    class Out:\n        a: torch.Tensor\n\n    return Out(x * 2).a + 1\n"
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        if setting_on(ctx.values, ctx.options, TRACE_BUILD_CLASS):
            return
        for klass, traced in ctx.traced_nodes(nodes.ClassDef):
            fix = enable_setting_fix(ctx.analysis, TRACE_BUILD_CLASS, SETTING_FIX) if traces_with_setting(klass) else None
            message = f"`class {klass.name}` in compiled code: Dynamo does not trace class creation, so the graph breaks"
            diagnostic = ctx.report(klass, message, traced, fix or NO_FIX)
            yield dataclasses.replace(diagnostic, end=_header_end(ctx, klass))
            if klass.decorators is not None and body_names_a_torch_module(ctx.values, klass):
                first = klass.decorators.nodes[0]
                message = (
                    f"`class {klass.name}` names torch in its body: Dynamo also fails on the body, which it compiles "
                    "as a frame of its own starting at this decorator"
                )
                yield ctx.report(first, message, traced, NO_FIX)


def _header_end(ctx: RuleContext, klass: nodes.ClassDef) -> Position:
    """The end of ``class Name``: the finding underlines the statement's head, not its whole body."""
    position = klass.position
    if position is None:
        return ctx.analysis.start_of(klass)
    line = position.end_lineno
    return Position(line, ctx.analysis.source.char_column(line, position.end_col_offset))
