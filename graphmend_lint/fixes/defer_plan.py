"""Plan the deferral of one function's side effects, on its astroid tree.

Decides, for each print/log call, what is evaluated at the call and what is
left to the epilogue (:class:`Leaf`), whether the call sits in a loop or needs
a flag, and which returns get an epilogue; or raises :class:`Decline` with the
reason deferring would change behaviour. :mod:`graphmend_lint.fixes.defer`
documents the rewrite as a whole; :mod:`graphmend_lint.fixes.defer_rewrite`
writes it with libcst.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from astroid import nodes

from graphmend_lint.analysis.mutations import (
    Event,
    Mutations,
    affects,
    contains,
    fresh_tensor,
    own_nodes,
    paths_read,
    read_path,
    reads_metadata,
)
from graphmend_lint.analysis.scope import TracedFunction
from graphmend_lint.analysis.side_effects import (
    dotted,
    host_format_operands,
    is_percent_format,
)
from graphmend_lint.analysis.values import Kind
from graphmend_lint.context import FileAnalysis

_BLOCKED_KEYWORDS = frozenset({"exc_info", "stack_info"})


class Decline(Exception):
    """Deferring would change behaviour or would not remove the break; says why."""


@dataclass(frozen=True)
class Leaf:
    """A sub-expression evaluated at the original point and read back in the epilogue."""

    node: nodes.NodeNG
    snapshot: bool  # capture ``.detach().clone()``: the tensor is mutated in place later


@dataclass
class Site:
    """One deferred call."""

    number: int
    call: nodes.Call
    statement: nodes.Expr
    loop: nodes.NodeNG | None  # outermost loop of the function holding the call
    leaves: list[Leaf] = field(default_factory=list)
    flag: bool = False  # some epilogue cannot know whether the call ran: record it


class Reach(enum.Enum):
    """Whether a call has run when control reaches one epilogue."""

    NEVER = "never"
    ALWAYS = "always"
    MAYBE = "maybe"


@dataclass
class Plan:
    """What the rewrite does to one function."""

    function: nodes.FunctionDef
    sites: list[Site]
    returns: list[nodes.Return]  # returns that get an epilogue
    epilogue_at_end: bool

    def locations(self) -> list[nodes.Return | None]:
        """Every epilogue: before each listed return, and ``None`` for the function's end."""
        return [*self.returns, *([None] if self.epilogue_at_end else [])]


class Planner:
    """Decide, on the astroid tree, how each call is deferred (or raise :class:`Decline`)."""

    def __init__(self, analysis: FileAnalysis, function: nodes.FunctionDef) -> None:
        self.analysis = analysis
        self.function = function
        self.mutations = Mutations(function, analysis.values.qualified_name)

    def plan(self, calls: Sequence[nodes.Call]) -> Plan:
        function = self.function
        if isinstance(function, nodes.AsyncFunctionDef) or function.is_generator():
            raise Decline("the function is a generator or async")
        sites = [self._site(number, call) for number, call in enumerate(calls, 1)]
        returns = [r for r in own_nodes(function) if isinstance(r, nodes.Return)]
        needing = [r for r in returns if any(reach(site, r, function) is not Reach.NEVER for site in sites)]
        for ret in needing:
            if _blocking_ancestor(ret, function) is not None:
                raise Decline(f"the `return` on line {ret.lineno} is inside a `with`, `try` or `while` block")
        plan = Plan(function, sites, needing, not _terminates(function.body))
        for site in sites:
            site.flag = site.loop is None and any(
                reach(site, location, function) is Reach.MAYBE for location in plan.locations()
            )
        return plan

    def _site(self, number: int, call: nodes.Call) -> Site:
        where = f"the call on line {call.lineno}"
        statement = call.parent
        if not isinstance(statement, nodes.Expr):
            raise Decline(f"the value of {where} is used")
        unpacking = any(True for _ in call.nodes_of_class((nodes.Starred, nodes.DictUnpack)))
        if unpacking or any(k.arg is None for k in call.keywords or []):
            # also ``print([a, *rest])``: an unpacking inside an argument cannot be split into captured leaves
            raise Decline(f"{where} passes *args/**kwargs whose contents cannot be captured")
        if isinstance(call.func, nodes.Attribute) and call.func.attrname == "exception" or any(
            k.arg in _BLOCKED_KEYWORDS for k in call.keywords or []
        ):
            raise Decline(f"{where} records the current exception or stack, which differ in the epilogue")
        loop = None
        node = statement.parent
        child: nodes.NodeNG = statement
        while node is not self.function:
            if isinstance(node, (nodes.ExceptHandler,)) or (isinstance(node, nodes.Try) and child in node.finalbody):
                raise Decline(f"{where} is in an `except` or `finally` block")
            if isinstance(node, (nodes.For, nodes.While)) and child in node.body:
                loop = node
            child, node = node, node.parent
        site = Site(number, call, statement, loop)
        arguments = [*call.args, *(k.value for k in call.keywords or [])]
        site.leaves = [leaf for argument in arguments for leaf in self._split(argument, site)]
        return site

    # -- arguments ---------------------------------------------------------------

    def _split(self, node: nodes.NodeNG, site: Site) -> list[Leaf]:
        """Leaves of an argument: what must be evaluated now; the rest waits for the epilogue."""
        if isinstance(node, nodes.Const):
            return []
        if isinstance(node, nodes.JoinedStr):
            return [leaf for value in node.values for leaf in self._split(value, site)]
        if isinstance(node, nodes.FormattedValue):
            spec = self._split(node.format_spec, site) if node.format_spec is not None else []
            return self._split(node.value, site) + spec
        if isinstance(node, (nodes.Tuple, nodes.List)):
            return [leaf for element in node.elts for leaf in self._split(element, site)]
        if isinstance(node, nodes.BinOp) and is_percent_format(node):
            return self._split(node.right, site)
        if isinstance(node, nodes.Call):
            operands = host_format_operands(node)
            if operands is not None:
                return [leaf for operand in operands for leaf in self._split(operand, site)]
        path = read_path(node)
        if path is not None and self._stable(path, site):
            return []
        return [self._capture(node, site)]

    def _stable(self, path: str, site: Site) -> bool:
        """Reading *path* in the epilogue gives what it gave at the call."""
        return self.mutations.stable(path, self._later(site))

    def _capture(self, node: nodes.NodeNG, site: Site) -> Leaf:
        mutated = self.mutations.mutated(self._later(site))
        read = set(paths_read(node))
        if not any(affects(Event(path, True, node), reading) for path in mutated for reading in read):
            return Leaf(node, snapshot=False)
        kind = self.analysis.values.kind(node)
        if kind is Kind.TENSOR:
            return Leaf(node, snapshot=not fresh_tensor(node))
        fresh = isinstance(node, (nodes.Call, nodes.BinOp, nodes.Compare, nodes.BoolOp, nodes.UnaryOp))
        if kind is Kind.STATIC and (fresh or reads_metadata(node)):
            return Leaf(node, snapshot=False)
        raise Decline(
            f"`{node.as_string()}` (line {node.lineno}) is modified later and is not known to be a tensor to snapshot"
        )

    def _later(self, site: Site) -> Iterator[Event]:
        """Events that can run between the call and the epilogue."""
        end = (site.statement.end_lineno, site.statement.end_col_offset)
        for event in self.mutations.events:
            after = (event.node.lineno, event.node.col_offset) >= end
            if after or (site.loop is not None and contains(site.loop, event.node)):
                yield event


def reach(site: Site, location: nodes.Return | None, function: nodes.FunctionDef) -> Reach:
    """Whether *site* has run when control reaches *location* (``None``: the function's end).

    ALWAYS when the location follows the call in the call's own block (only
    ``with`` blocks between them); NEVER when it comes first, or when a block
    holding the call but not the location always returns; MAYBE otherwise.
    A call in a loop is MAYBE wherever it can precede the location (``break``
    can leave a loop body that ends in ``return``; an empty replay list costs
    nothing), and so is a call in a ``try`` body (a handler may resume).
    """
    if location is not None:
        before = (site.statement.end_lineno, site.statement.end_col_offset) <= (location.lineno, location.col_offset)
        if not before and not (site.loop is not None and contains(site.loop, location)):
            return Reach.NEVER
    if site.loop is not None:
        return Reach.MAYBE
    always = True
    child: nodes.NodeNG = site.statement
    while True:
        parent = child.parent
        block = parent.child_sequence(child)
        if location is not None and any(contains(statement, location) for statement in block):
            return Reach.ALWAYS if always else Reach.MAYBE
        if not isinstance(parent, (nodes.Try, nodes.TryStar)) and _terminates(block):
            return Reach.NEVER
        if parent is function:
            return Reach.ALWAYS if always else Reach.MAYBE
        always = always and isinstance(parent, nodes.With)
        child = parent


def _blocking_ancestor(node: nodes.NodeNG, function: nodes.FunctionDef) -> nodes.NodeNG | None:
    parent = node.parent
    while parent is not None and parent is not function:
        if isinstance(parent, (nodes.With, nodes.Try, nodes.TryStar, nodes.While)):
            return parent
        parent = parent.parent
    return None


def _terminates(body: Sequence[nodes.NodeNG]) -> bool:
    """The block never falls off its end (a conservative answer: ``False`` when unsure)."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (nodes.Return, nodes.Raise)):
        return True
    if isinstance(last, nodes.If):
        return bool(last.orelse) and _terminates(last.body) and _terminates(last.orelse)
    if isinstance(last, nodes.With):
        return _terminates(last.body)
    return False


def is_helper(analysis: FileAnalysis, function: nodes.FunctionDef, traced: TracedFunction) -> bool:
    """Another traced function may call *function*: its frame is inlined into the caller's graph.

    Either the scope chain says it was reached through a call (the element
    before it is a function's qualified name, not an entry point's
    description), or it is also an entry point that code of the file can
    reach: a plain call for a function, ``self.name(...)`` for a method, and
    for a module's ``forward`` a mention of its class in another class
    (``self.sub = Block()``, a subclass calling ``super().forward``) or in a
    table (transformers' ``ATTENTION_CLASSES = {"sdpa": ...}``): such a
    module is likely a submodule. Building it at module level or in a plain
    function (``torch.compile(Model())``) does not count.
    """
    if len(traced.chain) >= 2 and re.fullmatch(r"[A-Za-z_][\w.]*", traced.chain[-2]):
        return True
    klass = function.parent if isinstance(function.parent, nodes.ClassDef) else None
    if klass is not None and function.name in {"forward", "__call__"}:
        return any(_submodule_mention(name, klass) for name in analysis.names(klass.name))
    for other, call in analysis.traced_calls_named(function.name):
        if other is function:
            continue
        func = call.func
        if klass is None and isinstance(func, nodes.Name):
            return True
        if klass is not None and other.parent is klass and isinstance(func, nodes.Attribute) and dotted(func.expr) == "self":
            return True
    return False


def _submodule_mention(name: nodes.Name, klass: nodes.ClassDef) -> bool:
    """*name* sits in another class, or in a container literal (a table of classes)."""
    node = name.parent
    while node is not None:
        if isinstance(node, nodes.ClassDef):
            return node is not klass
        if isinstance(node, (nodes.Dict, nodes.List, nodes.Tuple, nodes.Set)):
            return True
        if isinstance(node, nodes.FunctionDef) and not isinstance(node.parent, nodes.ClassDef):
            return False
        node = node.parent
    return False
