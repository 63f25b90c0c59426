"""The eager mixture-of-experts dispatch loop of transformers 5.x, matched strictly.

53 modeling files of transformers 5.23 (``MixtralExperts.forward`` and its
copies) dispatch tokens to experts like this::

    expert_mask = torch.nn.functional.one_hot(top_k_index, num_classes=self.num_experts + 1)
    expert_mask = expert_mask.permute(2, 1, 0)
    expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
    for expert_idx in expert_hit:
        expert_idx = expert_idx[0]
        if expert_idx == self.num_experts:
            continue
        top_k_pos, token_idx = torch.where(expert_mask[expert_idx])
        current_state = hidden_states[token_idx]
        gate, up = nn.functional.linear(current_state, self.gate_up_proj[expert_idx]).chunk(2, dim=-1)
        current_hidden_states = self.act_fn(gate) * up
        current_hidden_states = nn.functional.linear(current_hidden_states, self.down_proj[expert_idx])
        current_hidden_states = current_hidden_states * top_k_weights[token_idx, top_k_pos, None]
        final_hidden_states.index_add_(0, token_idx, current_hidden_states.to(final_hidden_states.dtype))

:func:`expert_loop` recognises exactly that shape, and nothing looser, because
the dense rewrite (:mod:`graphmend_lint.fixes.shape_dispatch`) is equal to it
only when:

* the mask is a one-hot ``(experts, k, tokens)`` tensor (``one_hot`` then
  ``permute(2, 1, 0)``), so an expert's ``(k, token)`` slice holds 0/1: the
  token's routes to that expert, usually one, several when ``top_k_index``
  lists the expert twice (``topk`` never does, a hash router may:
  DeepSeek-V4's ``tid2eid``);
* ``expert_hit`` lists the experts whose slice is not all zero, so an expert
  left out contributes nothing once its contribution is masked;
* the body maps each token's row on its own (a *row-wise* body), reads the
  selection only as ``hidden[token_idx]`` and ``weights[token_idx, top_k_pos,
  None]``, and ends in one ``index_add_`` over ``token_idx``;
* the weight only scales the contribution (:func:`_scales_contribution`):
  ``rows * weights[...]`` (or ``weights[...].float()``), added as it is or
  cast, so one contribution weighted by the sum of a token's routes to the
  expert equals (within rounding) the original's one contribution per route;
* nothing the loop binds is read after it.

A row-wise expression is built from the selected rows with: ``F.linear`` by
an expert weight ``self.w[expert_idx]``, a product ``rows @ self.w[expert_idx]``
(the expert weight on the right, so rows stay rows), ``*`` and ``+`` with
another row-wise value or a row-independent one (a constant, ``self.attr``,
``self.bias[expert_idx]``: a per-expert bias), ``self.act_fn``,
``torch.sigmoid``/``torch.tanh``, ``.clamp`` with row-independent bounds,
``.float()``, ``.to(x.dtype)`` (``x`` not bound in the loop), ``chunk`` on
the last dimension or a constant slice of it (``x[..., ::2]``), and a helper method of the same class whose body is
itself row-wise (gpt-oss and the OpenAI privacy filter gate with
``self._apply_gate(gate_up)``). Each of these keeps the zero rows of tokens
an expert does not serve finite, with finite derivatives, so dropping them
with ``torch.where`` is exact.

Every other spelling (the 4.52 ``expert_mask[expert_idx].squeeze(0)`` form,
``self.experts[expert_idx]`` modules, norms, reductions, a weight on the left
of ``@``) is declined: none of them has been measured under Dynamo.
"""

from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from graphmend_lint.analysis.assigned_values import bound_values
from graphmend_lint.analysis.host_values import reads_of, single_target
from graphmend_lint.analysis.lookup import statement_block
from graphmend_lint.analysis.values import ValueOracle

ONE_HOT = "torch.nn.functional.one_hot"
LINEAR = "torch.nn.functional.linear"
#: The activation attribute transformers binds to ``ACT2FN[config.hidden_act]`` (element-wise functions).
ACTIVATION = "act_fn"
#: Element-wise torch functions with finite values and derivatives at 0 (the rows a dense expert drops).
ELEMENT_WISE = frozenset({"torch.sigmoid", "torch.tanh"})
#: Operators that combine rows element-wise, and the product that keeps rows as rows when the weight is on the right.
_ELEMENT_WISE_OPS = frozenset({"*", "+"})
#: How deep helper methods may call helper methods before the match gives up.
_HELPER_DEPTH = 2
#: How many classes of the file `_derives_from` follows up a chain of bases.
_MAX_BASE_DEPTH = 16


@dataclass(frozen=True)
class ExpertLoop:
    """The parts of one dispatch loop that the dense rewrite edits."""

    hit: nodes.Assign  # expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
    mask: str  # expert_mask
    loop: nodes.For  # for expert_idx in expert_hit:
    unpack: nodes.Assign  # expert_idx = expert_idx[0]
    select: nodes.Assign  # top_k_pos, token_idx = torch.where(expert_mask[expert_idx])
    add: nodes.Call  # final_hidden_states.index_add_(0, token_idx, <contribution>)
    token_rows: tuple[nodes.Subscript, ...]  # hidden_states[token_idx]: the rows the experts read
    weight: nodes.Subscript  # top_k_weights[token_idx, top_k_pos, None]: the routing weight column

    @property
    def expert(self) -> str:
        return self.loop.target.name  # type: ignore[attr-defined,no-any-return]

    @property
    def positions(self) -> str:
        return self.select.targets[0].elts[0].name  # type: ignore[attr-defined,no-any-return]

    @property
    def tokens(self) -> str:
        return self.select.targets[0].elts[1].name  # type: ignore[attr-defined,no-any-return]

    @property
    def contribution(self) -> nodes.NodeNG:
        return self.add.args[2]


def hit_loop(call: nodes.Call) -> nodes.For | None:
    """The ``for`` loop iterating the experts that *call* (``hit = ....nonzero()``) selected."""
    target = single_target(call)
    for read in (reads_of(target) or ()) if target is not None else ():
        loop = read.parent
        if isinstance(loop, nodes.For) and loop.iter is read:
            return loop
    return None


def expert_loop(values: ValueOracle, call: nodes.Call) -> ExpertLoop | None:
    """The dispatch loop fed by *call* when it has exactly the measured shape, else ``None``."""
    loop = hit_loop(call)
    hit = call.parent
    target = single_target(call)
    if loop is None or target is None or len(reads_of(target) or ()) != 1 or loop.orelse:
        return None
    mask = _hit_mask(values, call)
    if mask is None or not _one_hot_experts(values, mask) or not isinstance(loop.target, nodes.AssignName):
        return None
    if not isinstance(hit, nodes.Assign) or len(statement_block(hit) or []) < 2:
        return None  # deleting the only statement of a block would leave it empty
    body = loop.body
    if len(body) < 5:
        return None
    unpack, skip, select, *middle, last = body
    expert = loop.target.name
    if not (_is_unpack(unpack, expert) and _is_sentinel_skip(skip, expert)):
        return None
    selected = _selection(values, select, mask, expert)
    add = _index_add(last)
    if selected is None or add is None:
        return None
    positions, tokens = selected
    rows = _RowWise(values, expert, positions, tokens)
    if not all(rows.statement(statement) for statement in middle):
        return None
    if not (_is_name(add.args[1], tokens) and rows.expression(add.args[2])):
        return None
    if len(rows.weight_columns) != 1 or not _scales_contribution(rows.weight_columns[0], middle, add):
        return None
    if any(_inside(read, add) for read in rows.token_rows):
        return None  # the contribution reads the hidden rows itself: both would be masked, one inside the other
    if _rebinds(loop, {mask.name, add.func.expr.name}) or _read_after(loop, {expert, positions, tokens, *rows.names}):
        return None
    return ExpertLoop(hit, mask.name, loop, unpack, select, add, tuple(rows.token_rows), rows.weight_columns[0])


def _scales_contribution(weight: nodes.Subscript, middle: list[nodes.NodeNG], add: nodes.Call) -> bool:
    """The routing weight column only scales what ``index_add_`` adds.

    ``<rows> * weight`` (either side, the weight possibly ``.float()``) is the
    contribution itself, or the value of the body's last statement whose name
    the contribution is, each possibly cast (``.to(x.dtype)``, ``.float()``).
    Then the contribution is linear in the weight, and the dense loop may
    weight each token by the sum of its routes to the expert.
    """
    factor: nodes.NodeNG = weight
    read = weight.parent
    if isinstance(read, nodes.Attribute) and read.attrname == "float" and _is_cast(read.parent):
        factor = read.parent
    product = factor.parent
    if not (isinstance(product, nodes.BinOp) and product.op == "*"):
        return False
    added = _uncast(add.args[2])
    if added is product:
        return True
    statement = product.parent
    return (
        bool(middle) and statement is middle[-1] and isinstance(statement, nodes.Assign)
        and isinstance(statement.targets[0], nodes.AssignName) and _is_name(added, statement.targets[0].name)
    )  # fmt: skip


def _is_cast(node: nodes.NodeNG | None) -> bool:
    """``x.float()`` or ``x.to(<one argument>)``."""
    if not (isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute) and not node.keywords):
        return False
    return (node.func.attrname, len(node.args)) in (("float", 0), ("to", 1))


def _uncast(node: nodes.NodeNG) -> nodes.NodeNG:
    while _is_cast(node):
        node = node.func.expr  # type: ignore[attr-defined]
    return node


def _is_name(node: nodes.NodeNG, name: str) -> bool:
    return isinstance(node, nodes.Name) and node.name == name


def _hit_mask(values: ValueOracle, call: nodes.Call) -> nodes.Name | None:
    """``mask`` in ``torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero()``."""
    func = call.func
    if not (isinstance(func, nodes.Attribute) and func.attrname == "nonzero") or call.args or call.keywords:
        return None
    greater = func.expr
    if not (isinstance(greater, nodes.Call) and values.qualified_name(greater.func) == "torch.greater"):
        return None
    if greater.keywords or len(greater.args) != 2 or greater.args[1].as_string() != "0":
        return None
    total = greater.args[0]
    if not (isinstance(total, nodes.Call) and isinstance(total.func, nodes.Attribute)):
        return None
    if total.func.attrname != "sum" or total.args or [kw.arg for kw in total.keywords or []] != ["dim"]:
        return None
    if total.keywords[0].value.as_string() != "(-1, -2)" or not isinstance(total.func.expr, nodes.Name):
        return None
    return total.func.expr


def _one_hot_experts(values: ValueOracle, mask: nodes.Name) -> bool:
    """*mask* is ``one_hot(...).permute(2, 1, 0)``, in one statement or two."""
    bound = bound_values(mask)
    if bound is None or len(bound) != 1:
        return False
    permute = bound[0]
    if not (isinstance(permute, nodes.Call) and isinstance(permute.func, nodes.Attribute)):
        return False
    order = [argument.as_string() for argument in permute.args]
    if permute.func.attrname != "permute" or permute.keywords or order != ["2", "1", "0"]:
        return False
    source = permute.func.expr
    if isinstance(source, nodes.Name):
        earlier = bound_values(source)
        source = earlier[0] if earlier is not None and len(earlier) == 1 else None
    return isinstance(source, nodes.Call) and values.qualified_name(source.func) == ONE_HOT


def _is_unpack(statement: nodes.NodeNG, expert: str) -> bool:
    """``expert_idx = expert_idx[0]``."""
    if not (isinstance(statement, nodes.Assign) and len(statement.targets) == 1):
        return False
    target, value = statement.targets[0], statement.value
    return (
        isinstance(target, nodes.AssignName) and target.name == expert
        and isinstance(value, nodes.Subscript) and _is_name(value.value, expert) and value.slice.as_string() == "0"
    )  # fmt: skip


def _is_sentinel_skip(statement: nodes.NodeNG, expert: str) -> bool:
    """``if expert_idx == <bound>: continue``: the padding class that routes nowhere."""
    if not (isinstance(statement, nodes.If) and not statement.orelse and len(statement.body) == 1):
        return False
    test = statement.test
    return (
        isinstance(statement.body[0], nodes.Continue)
        and isinstance(test, nodes.Compare) and _is_name(test.left, expert)
        and len(test.ops) == 1 and test.ops[0][0] == "=="
        and not any(_is_name(n, expert) for n in test.ops[0][1].nodes_of_class(nodes.Name))
    )  # fmt: skip


def _selection(values: ValueOracle, statement: nodes.NodeNG, mask: nodes.Name, expert: str) -> tuple[str, str] | None:
    """``(top_k_pos, token_idx)`` of ``top_k_pos, token_idx = torch.where(mask[expert])``."""
    if not (isinstance(statement, nodes.Assign) and len(statement.targets) == 1):
        return None
    target, call = statement.targets[0], statement.value
    if not (isinstance(target, nodes.Tuple) and len(target.elts) == 2):
        return None
    if not all(isinstance(elt, nodes.AssignName) for elt in target.elts):
        return None
    if not (isinstance(call, nodes.Call) and values.qualified_name(call.func) == "torch.where"):
        return None
    if call.keywords or len(call.args) != 1:
        return None
    row = call.args[0]
    if not (isinstance(row, nodes.Subscript) and _is_name(row.value, mask.name) and _is_name(row.slice, expert)):
        return None
    if bound_values(row.value) != bound_values(mask):
        return None  # the mask was rebound between the hit list and the loop
    positions, tokens = (elt.name for elt in target.elts)
    return (positions, tokens) if len({positions, tokens, expert, mask.name}) == 4 else None


def _index_add(statement: nodes.NodeNG) -> nodes.Call | None:
    """``final.index_add_(0, token_idx, <contribution>)`` as a statement."""
    if not isinstance(statement, nodes.Expr) or not isinstance(statement.value, nodes.Call):
        return None
    call = statement.value
    func = call.func
    if not (isinstance(func, nodes.Attribute) and func.attrname == "index_add_" and isinstance(func.expr, nodes.Name)):
        return None
    if call.keywords or len(call.args) != 3 or call.args[0].as_string() != "0":
        return None
    return call


class _RowWise:
    """Checks that the loop body maps each token's row on its own, in the measured vocabulary.

    ``names`` collects the body's own variables (rows of the selected tokens);
    ``token_rows`` the reads ``hidden_states[token_idx]``; ``weight_columns``
    the reads ``weights[token_idx, top_k_pos, None]``, the
    ``(tokens, 1)`` column the routed mask mirrors. A helper
    method's body is checked by a ``_RowWise`` of its own whose ``names``
    start with the helper's parameter and that knows no expert or tokens.
    """

    def __init__(self, values: ValueOracle, expert: str, positions: str, tokens: str, depth: int = 0) -> None:
        self.values, self.expert, self.positions, self.tokens = values, expert, positions, tokens
        self.depth = depth
        self.names: set[str] = set()
        self.token_rows: list[nodes.Subscript] = []
        self.weight_columns: list[nodes.Subscript] = []

    def statement(self, statement: nodes.NodeNG) -> bool:
        """``row = <row-wise>`` or ``a, b = <row-wise>.chunk(2, dim=-1)``."""
        if not (isinstance(statement, nodes.Assign) and len(statement.targets) == 1):
            return False
        target, value = statement.targets[0], statement.value
        if isinstance(target, nodes.AssignName):
            targets = [target]
            ok = self.expression(value)
        elif isinstance(target, nodes.Tuple) and all(isinstance(elt, nodes.AssignName) for elt in target.elts):
            targets = list(target.elts)
            ok = self._chunk(value, len(targets)) or self._row_wise_tuple(value, len(targets))
        else:
            return False
        reserved = {self.expert, self.positions, self.tokens}
        if not ok or any(t.name in reserved for t in targets):
            return False
        self.names.update(t.name for t in targets)
        return True

    def expression(self, node: nodes.NodeNG) -> bool:
        """A row-wise expression."""
        if isinstance(node, nodes.Name):
            return node.name in self.names
        if isinstance(node, nodes.Subscript):
            return self._token_rows(node) or self._weight_column(node) or self._last_dimension_slice(node)
        if isinstance(node, nodes.BinOp):
            return self._combination(node)
        if not isinstance(node, nodes.Call):
            return False
        func = node.func
        if isinstance(func, nodes.Attribute) and func.attrname == "clamp":
            return self._clamp(node)
        if node.keywords:
            return False
        if self.values.qualified_name(func) == LINEAR:
            return len(node.args) == 2 and self.expression(node.args[0]) and self._expert_weight(node.args[1])
        if self.values.qualified_name(func) in ELEMENT_WISE:
            return len(node.args) == 1 and self.expression(node.args[0])
        if not isinstance(func, nodes.Attribute):
            return False
        if func.attrname == "float" and not node.args:
            return self.expression(func.expr)
        if _is_self(func.expr) and len(node.args) == 1 and self.expression(node.args[0]):
            return func.attrname == ACTIVATION or self._row_wise_helper(node)
        if func.attrname == "to" and len(node.args) == 1:
            dtype = node.args[0]
            return (
                isinstance(dtype, nodes.Attribute) and dtype.attrname == "dtype" and isinstance(dtype.expr, nodes.Name)
                and dtype.expr.name not in self.names | {self.expert, self.positions, self.tokens}
                and self.expression(func.expr)
            )  # fmt: skip
        return False

    def _combination(self, node: nodes.BinOp) -> bool:
        """``a * b`` / ``a + b`` with a row-wise side and the other row-wise or row-independent; ``rows @ weight``."""
        left, right = node.left, node.right
        if node.op == "@":
            return self.expression(left) and self._independent(right)
        if node.op not in _ELEMENT_WISE_OPS:
            return False
        if self.expression(left):
            return self.expression(right) or self._independent(right)
        return self._independent(left) and self.expression(right)

    def _clamp(self, node: nodes.Call) -> bool:
        """``<row-wise>.clamp(low, high)`` / ``.clamp(min=..., max=...)`` with row-independent bounds."""
        keywords = node.keywords or []
        bounds = [*node.args, *(keyword.value for keyword in keywords)]
        if len(bounds) > 2 or any(keyword.arg not in ("min", "max") for keyword in keywords):
            return False
        return self.expression(node.func.expr) and all(self._independent(bound) for bound in bounds)

    def _independent(self, node: nodes.NodeNG) -> bool:
        """The same for every row: a number or ``None``, ``self.attr``, an expert weight, one negated or ``.float()``."""
        if isinstance(node, nodes.Const):
            return node.value is None or isinstance(node.value, (int, float))
        if isinstance(node, nodes.UnaryOp):
            return node.op == "-" and self._independent(node.operand)
        if isinstance(node, nodes.Attribute):
            return _is_self(node.expr)
        if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute):
            plain_float = node.func.attrname == "float" and not node.args and not node.keywords
            return plain_float and self._independent(node.func.expr)
        return self._expert_weight(node)

    def _row_wise_helper(self, call: nodes.Call) -> bool:
        """``self.<helper>(rows)`` runs a plain one-argument method of this class, not overridden in this file,
        with a row-wise body."""
        helper = _own_method(self.values, call)
        if helper is None or self.depth >= _HELPER_DEPTH:
            return False
        *steps, last = helper.body
        rows = _RowWise(self.values, expert="", positions="", tokens="", depth=self.depth + 1)
        rows.names.add(helper.args.args[1].name)
        return (
            all(rows.statement(step) for step in steps)
            and isinstance(last, nodes.Return) and last.value is not None and rows.expression(last.value)
        )  # fmt: skip

    def _chunk(self, node: nodes.NodeNG, parts: int) -> bool:
        """``<row-wise>.chunk(parts, dim=-1)``: a split of the last dimension."""
        if not (isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute)):
            return False
        if node.func.attrname != "chunk" or [a.as_string() for a in node.args] != [str(parts)]:
            return False
        keywords = [(kw.arg, kw.value.as_string()) for kw in node.keywords or []]
        return keywords == [("dim", "-1")] and self.expression(node.func.expr)

    def _row_wise_tuple(self, node: nodes.NodeNG, parts: int) -> bool:
        """``(<row-wise>, <row-wise>)``, unpacked into as many names."""
        return isinstance(node, nodes.Tuple) and len(node.elts) == parts and all(map(self.expression, node.elts))

    def _last_dimension_slice(self, node: nodes.Subscript) -> bool:
        """``<row-wise>[..., start:stop:step]`` with constant bounds: gpt-oss's interleaved gate and up halves."""
        index = node.slice
        if not (isinstance(index, nodes.Tuple) and len(index.elts) == 2):
            return False
        ellipsis, columns = index.elts
        if not (isinstance(ellipsis, nodes.Const) and ellipsis.value is Ellipsis and isinstance(columns, nodes.Slice)):
            return False
        bounds = (columns.lower, columns.upper, columns.step)
        constant = all(bound is None or isinstance(bound, nodes.Const) and isinstance(bound.value, int) for bound in bounds)
        return constant and self.expression(node.value)

    def _token_rows(self, node: nodes.Subscript) -> bool:
        """``hidden_states[token_idx]``: the selected tokens' rows of a tensor the loop does not bind."""
        found = (
            bool(self.tokens)
            and isinstance(node.value, nodes.Name)
            and node.value.name not in self.names | {self.expert, self.positions, self.tokens}
            and _is_name(node.slice, self.tokens)
        )
        if found:
            self.token_rows.append(node)
        return found

    def _weight_column(self, node: nodes.Subscript) -> bool:
        """``weights[token_idx, top_k_pos, None]``: each selected token's routing weight, as a column."""
        index = node.slice
        if not (self.tokens and isinstance(node.value, nodes.Name) and isinstance(index, nodes.Tuple)):
            return False
        if len(index.elts) != 3:
            return False
        token, position, none = index.elts
        found = (
            node.value.name not in self.names | {self.expert, self.positions, self.tokens}
            and _is_name(token, self.tokens) and _is_name(position, self.positions)
            and isinstance(none, nodes.Const) and none.value is None
        )  # fmt: skip
        if found:
            self.weight_columns.append(node)
        return found

    def _expert_weight(self, node: nodes.NodeNG) -> bool:
        """``self.<parameter>[expert_idx]``: this expert's weight matrix (or bias vector)."""
        return (
            bool(self.expert) and isinstance(node, nodes.Subscript) and _is_name(node.slice, self.expert)
            and isinstance(node.value, nodes.Attribute) and _is_self(node.value.expr)
        )  # fmt: skip


def _own_method(values: ValueOracle, call: nodes.Call) -> nodes.FunctionDef | None:
    """The method ``self.<name>(x)`` runs when its class defines it once, takes ``(self, x)`` plainly, and no
    class of the file that derives from that class defines the name again."""
    helper = values.called_function(call)
    owner = helper.parent if helper is not None else None
    if helper is None or not isinstance(owner, nodes.ClassDef) or len(owner.locals.get(helper.name, [])) != 1:
        return None
    arguments = helper.args
    plain = (
        not helper.decorators and len(arguments.args or []) == 2 and not arguments.defaults
        and arguments.vararg is None and arguments.kwarg is None
        and not arguments.kwonlyargs and not arguments.posonlyargs
    )  # fmt: skip
    overridden = any(
        other is not owner and helper.name in other.locals and _derives_from(other, owner)
        for other in owner.root().nodes_of_class(nodes.ClassDef)
    )
    return helper if plain and not overridden else None


def _derives_from(cls: nodes.ClassDef, base: nodes.ClassDef, depth: int = 0) -> bool:
    """*cls* derives from *base*, a class of the same file, through classes of that file.

    A class imported from elsewhere cannot derive from one defined here, so
    only bases named by this file's own definitions are followed: astroid's
    ``ancestors()`` would import every module a base comes from (seconds per
    class on transformers).
    """
    if depth > _MAX_BASE_DEPTH:
        return True  # too deep to follow: assume it might derive
    for named in cls.bases:
        if not isinstance(named, nodes.Name):
            continue  # ``nn.Module``, ``module.Base``: imported, never *base*
        _, definitions = named.lookup(named.name)
        for definition in definitions:
            if definition is base or (
                isinstance(definition, nodes.ClassDef) and _derives_from(definition, base, depth + 1)
            ):
                return True
    return False


def _is_self(node: nodes.NodeNG) -> bool:
    return _is_name(node, "self")


def _rebinds(loop: nodes.For, names: set[str]) -> bool:
    """The loop body assigns one of *names* (the mask or the accumulator)."""
    return any(target.name in names for target in loop.nodes_of_class(nodes.AssignName))


def _read_after(loop: nodes.For, names: set[str]) -> bool:
    """A read of one of the loop's variables outside the loop: the dense loop leaves other values in them."""
    function = loop.scope()
    for name in function.nodes_of_class(nodes.Name):
        if name.name in names and not _inside(name, loop):
            return True
    return False


def _inside(node: nodes.NodeNG, ancestor: nodes.NodeNG) -> bool:
    parent = node.parent
    while parent is not None:
        if parent is ancestor:
            return True
        parent = parent.parent
    return False
