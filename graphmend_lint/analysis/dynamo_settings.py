"""The ``torch._dynamo.config`` switches a file turns on, read from its source.

Some breaks exist only under Dynamo's default settings. With
``capture_scalar_outputs`` on, ``t.item()`` is traced as an unbacked symbol
and only a *branch* on the number breaks; with
``capture_dynamic_output_shape_ops`` on, ``nonzero`` and friends are traced
and only a branch on the *size* of their result breaks; with ``allow_rnn`` on,
``nn.LSTM`` is traced. Rules that know which settings are on report the
statement that really breaks instead of one that no longer does.

A setting counts as on when the file assigns ``True`` to it at module level
(``torch._dynamo.config.capture_scalar_outputs = True``, through any import
alias, also inside a module-level ``if``/``try``), or when the rule's option
says so. Assignments inside functions are not read: whether they run before
the compiled call is not something a linter can know.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from astroid import nodes

from graphmend_lint.analysis.values import ValueOracle

CONFIG_MODULE = "torch._dynamo.config"
CAPTURE_SCALAR_OUTPUTS = "capture_scalar_outputs"
CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS = "capture_dynamic_output_shape_ops"
ALLOW_RNN = "allow_rnn"
_CACHE_ATTRIBUTE = "_graphmend_dynamo_settings"


def _module_statements(body: list[nodes.NodeNG]) -> Iterator[nodes.NodeNG]:
    """Module-level statements, looking inside ``if``/``try``/``with`` blocks but not into defs or classes."""
    for statement in body:
        yield statement
        for block in ("body", "orelse", "handlers", "finalbody"):
            inner = getattr(statement, block, None)
            if isinstance(inner, list) and not isinstance(statement, (nodes.FunctionDef, nodes.ClassDef)):
                yield from _module_statements(inner)


def settings_turned_on(values: ValueOracle) -> frozenset[str]:
    """Names of the ``torch._dynamo.config`` switches the file sets to ``True`` at module level."""
    module = values.module
    cached: frozenset[str] | None = getattr(module, _CACHE_ATTRIBUTE, None)
    if cached is not None:
        return cached
    found: set[str] = set()
    for statement in _module_statements(module.body):
        if not isinstance(statement, nodes.Assign):
            continue
        value = statement.value
        if not (isinstance(value, nodes.Const) and value.value is True):
            continue
        for target in statement.targets:
            if isinstance(target, nodes.AssignAttr):
                owner = values.qualified_name(target.expr)
                if owner == CONFIG_MODULE:
                    found.add(target.attrname)
    result = frozenset(found)
    setattr(module, _CACHE_ATTRIBUTE, result)
    return result


def setting_on(values: ValueOracle, options: Mapping[str, Any], setting: str) -> bool:
    """Whether *setting* is on for this file: set in the source, or by the rule option of the same name.

    The option key is the setting's name in kebab case (``capture-scalar-outputs``).
    """
    return bool(options.get(setting.replace("_", "-"), False)) or setting in settings_turned_on(values)
