"""Which bindings of a name reach a use: astroid's ``lookup``, without its cost on names rebound many times.

astroid filters *every* assignment of the name in the function for each
lookup, with a pairwise exclusivity test, so a name rebound ``k`` times and
read ``k`` times costs ``k**2`` tests: a generated forward that rebinds
``x`` 1,000 times took minutes. For such names, in straight-line code, the
bindings that reach a use are the nearest preceding assignment made at the
use's own block level (or an enclosing one), plus the assignments in
branches between it and the use. That is what astroid answers there too; in
loops and unusual scopes astroid is asked as before.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from astroid import nodes
from astroid.nodes import are_exclusive

#: Up to this many assignments of one name in one function, astroid's lookup is cheap enough.
ASTROID_LOOKUP_LIMIT = 24
_LOOPS = (nodes.For, nodes.While, nodes.Comprehension)
_INDEX_ATTRIBUTE = "_graphmend_assignment_order"
_FIELDS_ATTRIBUTE = "_graphmend_block_fields"
_BINDINGS_ATTRIBUTE = "_graphmend_reaching_bindings"


_MAX_BASE_DEPTH = 8


def reaching_bindings(node: nodes.Name | nodes.AssignName) -> list[nodes.NodeNG]:
    """The binding nodes of ``node.name`` that may reach *node*, in source order.

    astroid's answer, less the bindings an ``if``/``else`` before the use
    overwrites on every path (see :func:`_overwritten_before`). Kept on the
    node: rules ask about the same reads again and again, and the tree of a
    file does not change while it is analysed.
    """
    found: list[nodes.NodeNG] | None = getattr(node, _BINDINGS_ATTRIBUTE, None)
    if found is None:
        found = _overwritten_before(astroid_bindings(node), node)
        setattr(node, _BINDINGS_ATTRIBUTE, found)
    return list(found)


def astroid_bindings(node: nodes.Name | nodes.AssignName) -> list[nodes.NodeNG]:
    """astroid's answer: its ``lookup``, or the same answer found linearly for a name rebound many times."""
    found = _straight_line_bindings(node)
    if found is None:
        _, found = node.lookup(node.name)
    return list(found)


def _overwritten_before(found: list[nodes.NodeNG], node: nodes.Name | nodes.AssignName) -> list[nodes.NodeNG]:
    """*found* without the bindings every path to *node* assigns again (or leaves) before reaching it.

    astroid keeps a parameter, or an assignment made before ``if c: x = a``
    ``else: x = b``, among the bindings of a later read of ``x`` (ViLT's
    ``max_image_length``: the parameter's ``200`` beside the two tensors both
    branches assign). A statement that precedes the read in its own block, or
    in a block enclosing it, and that assigns the name on every path through
    it, or leaves the block (``return``, ``raise``, ``break``,
    ``continue``), hides every binding made before it.
    """
    if len(found) < 2:
        return found
    cut: tuple[int, int] | None = None
    current: nodes.NodeNG = node.statement()
    while current.parent is not None and not isinstance(current, (nodes.FunctionDef, nodes.Module, nodes.ClassDef)):
        block = statement_block(current)
        if block is not None:
            for earlier in block[: block.index(current)]:
                if (cut is None or _position(earlier) > cut) and _always_assigns([earlier], node.name):
                    cut = _position(earlier)
        current = current.parent
    if cut is None:
        return found
    return [binding for binding in found if _position(binding.statement()) >= cut]


def runs_before(earlier: nodes.NodeNG, later: nodes.NodeNG) -> bool:
    """*earlier* runs on every path to *later*: in the same statement as one that encloses *later*, or in a
    statement before it in the same block. A node in another branch does not.

    After a break that makes Dynamo run the rest of the frame eagerly (an RNN
    module, a reconstruction failure), nothing *later* can be logged.
    """
    statement = earlier.statement()
    block = statement_block(statement)
    node: nodes.NodeNG | None = later.statement()
    while node is not None and not isinstance(node, (nodes.FunctionDef, nodes.Module)):
        if node is statement:
            return True
        if block is not None and statement_block(node) is block and statement.lineno < node.lineno:
            return True
        node = node.parent
    return False


def statement_block(statement: nodes.NodeNG) -> list[nodes.NodeNG] | None:
    """The statement list of its parent (a body, ``else``, handlers or ``finally``) that holds *statement*."""
    field = _block_fields(statement.parent).get(id(statement))
    return getattr(statement.parent, field) if field else None


def _always_assigns(block: list[nodes.NodeNG], name: str) -> bool:
    """Every path through *block* assigns *name* or leaves the block (no path falls through with the old value)."""
    for statement in block:
        if isinstance(statement, (nodes.Return, nodes.Raise, nodes.Break, nodes.Continue)):
            return True
        if isinstance(statement, (nodes.Assign, nodes.AnnAssign, nodes.AugAssign)) and (
            getattr(statement, "value", None) is not None
            and any(target.name == name for target in statement.nodes_of_class(nodes.AssignName))
        ):
            return True
        if isinstance(statement, nodes.If) and statement.orelse and _always_assigns(statement.body, name) and (
            _always_assigns(statement.orelse, name)
        ):
            return True
        if isinstance(statement, nodes.With) and _always_assigns(statement.body, name):
            return True
    return False


def _straight_line_bindings(node: nodes.Name | nodes.AssignName) -> list[nodes.NodeNG] | None:
    frame = node.frame()
    if not isinstance(frame, nodes.FunctionDef) or len(frame.locals.get(node.name, ())) <= ASTROID_LOOKUP_LIMIT:
        return None
    if node.scope() is not frame:
        return None  # a comprehension's or lambda's own scope
    order = _assignment_order(frame, node.name)
    statement = node.statement()
    if order is None or _inside_loop(statement, frame):
        return None  # later assignments in a loop body reach back: let astroid decide
    keys, ordered = order
    position = bisect.bisect_left(keys, _position(statement))
    reaching: list[nodes.NodeNG] = []
    for assignment in reversed(ordered[:position]):
        made_in = assignment.statement()
        if any(_encloses_block(later.statement(), made_in) for later in reaching):
            continue  # a later assignment on every path from this one to the use replaces it
        if are_exclusive(assignment, node):
            continue  # ``if``'s body and its ``else``
        reaching.append(assignment)
        if _encloses_block(made_in, statement):
            break  # made at the use's level or above: it shadows every earlier one
    else:
        return None  # nothing unconditional before the use: ask astroid
    return list(reversed(reaching))


_Order = tuple[list[tuple[int, int]], list[nodes.NodeNG]]


def _assignment_order(frame: nodes.FunctionDef, name: str) -> _Order | None:
    """Assignments of *name* sorted by their statement's position, once per function and name.

    ``None`` when some binding is not a plain assignment in the function
    (a parameter, ``del``, ``global``, an import): astroid decides those.
    Kept on the function node, so the index dies with the file's tree.
    """
    table: dict[str, _Order | None] = getattr(frame, _INDEX_ATTRIBUTE, None) or {}
    if name not in table:
        assigned = frame.locals[name]
        if all(isinstance(a, nodes.AssignName) and a.scope() is frame for a in assigned):
            keyed = sorted(((_position(a.statement()), a) for a in assigned), key=lambda item: item[0])
            table[name] = ([key for key, _ in keyed], [a for _, a in keyed])
        else:
            table[name] = None
        setattr(frame, _INDEX_ATTRIBUTE, table)
    return table[name]


def _position(statement: nodes.NodeNG) -> tuple[int, int]:
    return statement.fromlineno, statement.col_offset


def _encloses_block(assignment: nodes.NodeNG, use: nodes.NodeNG) -> bool:
    """*assignment* sits directly in a block that also holds *use* (or one of its enclosing statements)."""
    block = assignment.parent
    node: nodes.NodeNG | None = use
    while node is not None and node is not block:
        if node.parent is block:
            return _same_block(block, assignment, node)
        node = node.parent
    return False


def _same_block(parent: nodes.NodeNG, first: nodes.NodeNG, second: nodes.NodeNG) -> bool:
    """Both statements are in the same body of *parent* (not an ``if``'s body and its ``else``)."""
    fields = _block_fields(parent)
    return fields.get(id(first)) == fields.get(id(second)) is not None


def _block_fields(parent: nodes.NodeNG) -> dict[int, str]:
    """Which block (``body``, ``orelse``...) of *parent* each of its statements is in, computed once per node."""
    found: dict[int, str] | None = getattr(parent, _FIELDS_ATTRIBUTE, None)
    if found is None:
        found = {}
        for field in ("body", "orelse", "handlers", "finalbody"):
            block = getattr(parent, field, None)
            if isinstance(block, list):
                found.update((id(statement), field) for statement in block)
        setattr(parent, _FIELDS_ATTRIBUTE, found)
    return found


def _inside_loop(statement: nodes.NodeNG, frame: nodes.FunctionDef) -> bool:
    node = statement.parent
    while node is not None and node is not frame:
        if isinstance(node, _LOOPS):
            return True
        node = node.parent
    return False


def loops_binding(name: nodes.Name) -> list[nodes.For | nodes.Comprehension]:
    """The ``for`` loops and comprehension clauses whose targets bind *name* (``for x in ...``, ``for a, x in
    ...``, ``[... for i, (a, x) in ...]``), when every binding reaching it is one of them; empty otherwise."""
    try:
        bindings = reaching_bindings(name)
    except Exception:  # astroid lookups can fail on odd code; then nothing is known
        return []
    loops = []
    for binding in bindings:
        loop = binding.parent
        while isinstance(loop, (nodes.Tuple, nodes.List)):
            loop = loop.parent
        if not (isinstance(binding, nodes.AssignName) and isinstance(loop, (nodes.For, nodes.Comprehension))):
            return []
        loops.append(loop)
    return loops


def is_builtin_call(call: nodes.Call, name: str) -> bool:
    """``name(...)`` where *name* is the builtin, not a local or imported shadow."""
    func = call.func
    if not isinstance(func, nodes.Name) or func.name != name:
        return False
    try:
        _, assignments = func.lookup(name)
    except Exception:  # astroid lookups can fail on odd code; stay quiet
        return False
    return all(assignment.root().name == "builtins" for assignment in assignments)


def loops_around(node: nodes.NodeNG) -> Iterator[nodes.For | nodes.While]:
    """The ``for``/``while`` loops of *node*'s own function (or module) that hold it, innermost first."""
    holder = node.parent
    while holder is not None and not isinstance(holder, (nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)):
        if isinstance(holder, (nodes.For, nodes.While)):
            yield holder
        holder = holder.parent


def is_parameter(name: nodes.NodeNG) -> bool:
    """*name* is a ``Name`` whose only reaching binding is a parameter of its function."""
    if not isinstance(name, nodes.Name):
        return False
    try:
        bindings = reaching_bindings(name)
    except Exception:  # astroid lookups can fail on odd code: then nothing is known
        return False
    return len(bindings) == 1 and isinstance(bindings[0].parent, nodes.Arguments)


def defined_in_file(name: nodes.Name) -> nodes.NodeNG | None:
    """The class or function *name* denotes, when one definition of this file binds it (no inference: a
    lookup in the file's scopes, so nothing is imported)."""
    try:
        _, found = name.lookup(name.name)
    except Exception:  # astroid lookups can fail on odd code: nothing is known
        return None
    if len(found) != 1 or not isinstance(found[0], (nodes.ClassDef, nodes.FunctionDef)):
        return None
    return found[0] if found[0].root() is name.root() else None


def file_bases(klass: nodes.ClassDef, depth: int = 0) -> list[nodes.ClassDef]:
    """The classes of this file *klass* derives from, depth first in the order its bases list them (a
    cheap stand-in for the MRO, which astroid computes by inferring every base, imports included)."""
    if depth > _MAX_BASE_DEPTH:
        return []
    bases: list[nodes.ClassDef] = []
    for base in klass.bases:
        definition = defined_in_file(base) if isinstance(base, nodes.Name) else None
        if isinstance(definition, nodes.ClassDef) and definition is not klass:
            bases += [definition, *file_bases(definition, depth + 1)]
    return bases


def outlives_the_frame(owner: nodes.NodeNG) -> bool:
    """*owner* is an object that outlives a call of its function: ``self`` / ``cls``, a module-level name, or
    an item or attribute of one (``cls.instances[layer]``, ``self.cache``). Dynamo reads what it holds as
    inputs of the graph, and must replay what the call stores into it."""
    while isinstance(owner, (nodes.Attribute, nodes.Subscript)):
        owner = owner.expr if isinstance(owner, nodes.Attribute) else owner.value
    if not isinstance(owner, nodes.Name):
        return False
    if owner.name in {"self", "cls"}:
        return True
    try:
        scope, _ = owner.lookup(owner.name)
    except Exception:  # astroid lookups can fail on odd code; then nothing is proven
        return False
    return isinstance(scope, nodes.Module)
