"""Hand a comprehension a tuple to iterate: ``{... for k in tuple(flags)}``.

On Python 3.11 and older a list, set or dict comprehension runs in a frame of
its own that receives an iterator over its first iterable. When Dynamo ends
up compiling that frame on its own, it can only step through tuple and range
iterators; over anything else it stops (GB4347, "Missing tp_iternext").
``tuple(iterable)`` makes the iterator a tuple iterator with the same items
in the same order.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix
from graphmend_lint.fixes.host_sync import node_text

_COMPREHENSION_PARTS = ("elt", "key", "value")


def _only_reads(comprehension: nodes.NodeNG) -> bool:
    """The comprehension's own expressions make no calls, attribute reads or assignments.

    Then nothing it evaluates per item can change the iterable, so taking all
    items first (``tuple``) cannot change what it sees.
    """
    parts = [getattr(comprehension, part, None) for part in _COMPREHENSION_PARTS]
    parts += [condition for generator in comprehension.generators for condition in generator.ifs]
    parts += [generator.iter for generator in comprehension.generators[1:]]
    risky = (nodes.Call, nodes.Attribute, nodes.NamedExpr, nodes.Yield, nodes.Await)
    return not any(isinstance(part, risky) or any(part.nodes_of_class(risky)) for part in parts if part is not None)


def tuple_iterable_fix(analysis: FileAnalysis, comprehension: nodes.NodeNG) -> Fix:
    """Wrap the first iterable in ``tuple(...)``.

    Safe when the comprehension only reads (see :func:`_only_reads`);
    unsafe otherwise: an expression that mutates the iterable while it is
    iterated would see the change (or raise "changed size during
    iteration") in the original, and not after the fix.
    """
    iterable = comprehension.generators[0].iter
    safe = _only_reads(comprehension)
    wrapped = f"tuple({node_text(analysis, iterable)})"
    return Fix(
        edits=(Edit(analysis.start_of(iterable), analysis.end_of(iterable), wrapped),),
        applicability=Applicability.SAFE if safe else Applicability.UNSAFE,
        message="Iterate a tuple, which Dynamo can step through in the comprehension's own frame",
    )
