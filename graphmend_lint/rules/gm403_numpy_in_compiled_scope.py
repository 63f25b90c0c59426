"""GM403: NumPy math on Python values inside compiled code."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.analysis.host_values import condition_operands, python_use
from graphmend_lint.analysis.dynamo_settings import CAPTURE_SCALAR_OUTPUTS, setting_on
from graphmend_lint.analysis.numpy_values import held_on_module, numpy_origins, traced_numpy_sizes
from graphmend_lint.analysis.numpy_int_casts import forced_array_item, forced_integer_cast
from graphmend_lint.analysis.tensor_sizes import size_arguments
from graphmend_lint.analysis.untraced_numpy import untraced_numpy_function
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.analysis.values import ValueOracle
from graphmend_lint.analysis.walk import descendants, slices_in
from graphmend_lint.fixes.host_numpy import (
    StaticNumpyCall,
    numpy_twin_fix,
    reduction_use,
    sequence_reduction_call,
    static_numpy_call,
)
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

_HEADER = "import numpy as np\nimport torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, k: int):\n"

#: Programs of the INVALID examples whose fix swaps a NumPy call (``{call}``) for its Python twin: each is
#: written once, and its example states only the swap.
_LCM = _HEADER + "    n = {call}(k, x.shape[0])\n    return x[:, :n]\n"
_SUM = "import math\n" + _HEADER + "    s = {call}([1, 2, k])\n    if s > 4:\n        x = x * 2\n    return x\n"
_SQRT = _HEADER + "    if {call}(x.shape[-1]) > 2:\n        x = x * 2\n    return x\n"
_FLAT = _HEADER + "    n = {call}(x.shape[1:])\n    return x.view(-1, n), torch.reshape(x, [{call}(x.shape[:2]), -1])\n"
_TUPLE = _HEADER + "    return torch.reshape(x, [{call}((2, k)), -1])\n"
_PLAN = _HEADER + "    plan = [1, k]\n    return x, np.zeros((2, {call}(plan[:2])))\n"
_MODULE = (
    "import math as m\n\nimport numpy as np\nimport torch\nfrom torch import nn\n\n\n"
    "class Chunked(nn.Module):\n    def __init__(self, config):\n        super().__init__()\n"
    "        self.config = config\n\n    def forward(self, x):\n"
    "        return x[: {call}(self.config.a, self.config.b)]\n\n\nmodel = torch.compile(Chunked(None))\n"
)


#: Array attributes (GB0157) and methods (GB0158) Dynamo does not model on the arrays it traces as tensors.
UNMODELLED_ARRAY_ATTRIBUTES = frozenset({"dtype", "flags", "base"})
UNMODELLED_ARRAY_METHODS = frozenset({"tobytes"})
UNMODELLED_MEMBER = Fix.advice(
    "no automatic fix: read it from the Python value the array is built from, or build (and key, hash or "
    "serialise) the array outside the compiled function",
)
UNTRACED = Fix.advice(
    "no source fix: compute it with torch ops (or `math`/builtins on Python values), "
    "or outside the compiled function",
)
NUMPY_BRANCH = Fix.advice(
    "no automatic fix: decide on Python numbers (`math`, `random`) or outside the compiled function, "
    "or keep the value a tensor and select with `torch.where`",
)
NUMPY_SIZE = Fix.advice(
    "no automatic fix: compute the size with Python ints (`math`, builtins, `x.shape`), or build the array "
    "outside the compiled function",
)
ARRAY_ITEM = Fix.advice(
    "no automatic fix: compute the sequence with Python numbers (`math`, a list comprehension), "
    "or build it outside the compiled function and pass it in",
)
FORCED_CAST = Fix.advice(
    "no source fix: compute the integer with `math` on Python numbers "
    "(`math.ceil(math.log1p(n))` for `np.ceil(np.log1p(n)).astype(int).item()`), or keep it a tensor",
)


def _unmodelled_array_member(values: ValueOracle, attribute: nodes.Attribute) -> bool:
    """``arr.dtype`` / ``arr.flags`` / ``arr.base`` or a call of ``arr.tobytes()`` on an array traced code
    computes (:func:`numpy_origins`): Dynamo models neither (GB0157, GB0158; measured on torch 2.13 for
    ``np.asarray([...]).dtype``, ``.dtype.name``, ``.dtype == np.float64``, ``.flags``, ``.base`` and
    ``.tobytes()``; ``.shape``, ``.ndim``, ``.size``, ``.nbytes``, ``.itemsize``, ``.strides``,
    ``.astype`` and ``.copy()`` trace)."""
    name = attribute.attrname
    if name not in UNMODELLED_ARRAY_ATTRIBUTES and not (
        name in UNMODELLED_ARRAY_METHODS
        and isinstance(attribute.parent, nodes.Call)
        and attribute.parent.func is attribute
    ):
        return False
    return not values.is_tensor(attribute.expr) and numpy_origins(values, attribute.expr) is not None


def _numpy_over_python_values(values: ValueOracle, call: nodes.Call) -> tuple[StaticNumpyCall, nodes.NodeNG] | None:
    """A NumPy call over static values whose result Python uses, or a NumPy reduction over a Python plan or a
    shape, with the expression where Python takes the value (where Dynamo logs the break).

    These are the two forms the fix rewrites. A result that only feeds tensor
    arithmetic or torch ops stays in the graph, so it is not reported.
    """
    found = static_numpy_call(values, call) or sequence_reduction_call(values, call)
    if found is None:
        return None
    if found.twin.over_sequence:
        use = reduction_use(values, call)
    else:
        use = python_use(values, call, float_casts=found.twin.floating)
    return None if use is None else (found, use)


def _module_numpy_sizes(values: ValueOracle, call: nodes.Call) -> list[nodes.NodeNG]:
    """The sizes a torch call or tensor method takes that are NumPy values computed from a NumPy value kept on
    the module (``x.view(b, x.shape[1] // self.total, -1)`` with ``self.total = np.prod(scales)``: Dynamo holds
    the attribute as a tensor input, GB0033, measured on torch 2.13). A NumPy value traced code computes from
    Python values alone may be known to fake tensors (``x.reshape(-1, np.lcm(k, 4))`` traces); that case is
    the sequence reductions' above. A NumPy slice bound is :func:`_module_numpy_bound`'s."""
    return [size for size in size_arguments(values, call) if _computed_from_module_numpy(values, size)]


def _module_numpy_bound(values: ValueOracle, subscript: nodes.Subscript) -> nodes.NodeNG | None:
    """A slice bound of *subscript* that arithmetic computes from a NumPy value kept on the module: WaveRNN's
    upsampler trims ``m[:, :, self.indent:-self.indent]`` with ``self.indent = pad * np.cumprod(scales)[-1]``,
    and Dynamo breaks at the negated stop (GB0033, measured on torch 2.13). The attribute itself as a bound
    (``x[self.indent:]``) is specialised on and traces."""
    for part in slices_in(subscript.slice):
        for bound in (part.lower, part.upper, part.step):
            if isinstance(bound, (nodes.BinOp, nodes.UnaryOp)) and _computed_from_module_numpy(values, bound):
                return bound
    return None


def _computed_from_module_numpy(values: ValueOracle, node: nodes.NodeNG) -> bool:
    return numpy_origins(values, node) is not None and any(
        held_on_module(values, attribute) for attribute in descendants(node, nodes.Attribute)
    )


class NumpyInCompiledScope(Rule):
    """## What it does
    Flags NumPy functions Dynamo cannot trace at all (below), and NumPy
    functions called on Python values (ints, floats, shapes,
    config numbers) in code that `torch.compile` traces, when `math` or a
    builtin computes the same thing: `np.lcm`, `np.gcd`, `np.sqrt`, `np.log*`,
    `np.exp`, `np.abs`, `np.maximum`/`np.minimum`, and `np.sum`/`np.prod`/
    `np.max`/`np.min` of a list literal, or of a named sequence
    (`np.sum(plan[:k])`) when the result goes straight where Python needs an
    int: `int(...)`, `range(...)`, or a size of `np.zeros`/`torch.zeros` and
    the like (transformers' BigBird sizes its random-attention plan with
    `np.zeros((num_blocks, np.sum(plan_num_rand_blocks[:k])))`). Such a
    reduction over a sequence (a shape, a list, a tuple literal) is also
    reported where a torch function or tensor method takes it as a size,
    directly or through the variable it is stored in
    (`torch.reshape(x, [b, np.prod(x.shape[1:-1]), -1])`, as transformers'
    Perceiver flattens; `x.view(-1, n)` with `n = np.prod(dims)`): GB0033 at
    that call (measured; not with `capture_scalar_outputs`, which traces it,
    and so not reported when the file turns that on; nor over a sequence of
    one item, `np.prod(x.shape[-1:])`, whose value fake tensors keep: no
    break, measured). Fake tensors do not know the value of such a
    reduction, so every other place Python takes it breaks too, also after
    arithmetic with Python numbers and inside a comprehension: nnU-Net's
    top-k loss keeps `int(np.prod(res.shape, dtype=np.int64) * self.k / 100)`
    voxels (GB0033), and `float(...)`, `.item()`, a slice bound (GB0033),
    `range(...)` (GB0059) and a branch (GB0170) break alike (measured, torch
    2.13); with `dtype=` there is no automatic fix. A result
    that only feeds tensor arithmetic or torch ops (`x / np.sqrt(d)`,
    `t.uniform_(-r, r)`, `x.reshape(-1, np.lcm(k, 4))`, `x.clamp(min=np.log(k))`) stays in
    the graph and is not reported (measured: no break), nor is one only carried (returned
    from a function no caller in the file takes it from, kept in a list or dict, mixed with
    a value of unknown kind, passed to a function of another file): no break is logged
    there, and where Python finally takes it is not shown. A value passed to a function of
    this file is followed into it (reformer's `self._len_and_dim_norm(vectors, np.sqrt(d))`
    only divides a tensor: no break), and one returned is followed to the callers in the
    file: reformer's `_get_least_common_mult_chunk_len` returns `np.lcm(...)` that
    `forward` tests, so Dynamo breaks at that test and the returned call is reported,
    where the fix goes.

    ## Why is this bad
    Dynamo traces NumPy as tensor code (`torch._numpy`), even on constants:
    `np.lcm(4, 6)` becomes a 0-d tensor in the graph. Anything Python then
    does with it depends on "data": `if n % 2 == 0:` breaks the graph
    (GB0170), `range(n)` breaks (GB0059), and `x[:n]` makes Dynamo give up on
    the frame (GB0208), `int(n)` of an integer result or a size
    `np.zeros((2, n))` breaks (GB0033, GB0208). `int()` and `float()` of a
    floating result (`int(np.sqrt(d))`, `float(np.log(n))`) trace (measured)
    and are not reported. The finding sits where Python first takes the value
    (the `if`, the `int(...)`), where Dynamo logs the break; the fix rewrites
    the NumPy call.
    A NumPy function `torch._numpy` does not implement (`np.insert`,
    `np.delete`, `np.digitize`, `np.interp`, `np.isin`, the `nan*`
    reductions, set operations, `poly*`...) breaks at the call itself
    (GB0294), on arrays and Python values alike: those are flagged too.
    A NumPy value cast to an integer dtype and forced into a Python number
    (`np.ceil(np.log1p(n)).astype("int").item()`, `int(np.int32(n))`) is
    refused as well (GB0208, at the line that forces it; a float cast, a
    plain `.item()` and `.tolist()` trace): it is flagged whatever the
    NumPy functions before the cast. So is a NumPy position forced the same
    way (`np.argmin(np.abs(self.ticks - at)).item()`, VAR's choice of a
    shared layer; `int(np.argmax(a))`: GB0033), and a NumPy value computed
    in traced code given to a NumPy constructor as a size
    (`np.arange(0, shape[1])` with `shape = (np.array(image.shape[2:]) + 1)
    // 2`, RetinaNet's anchors; `np.ones(k)` with `k =
    np.array(sizes).sum()`: GB0033, measured). NumPy values kept on a module
    count the same when traced code reads them: `self.total = np.prod(scales)`
    in `__init__`, then `x.view(b, x.shape[1] // self.total, -1)` (GB0033),
    a branch on `self.w = np.float64(0.5)` or on an item of `self.weights =
    tuple(weights)` given an array, also in a comprehension's `if` (nnU-Net's
    deep-supervision weights; GB0170, measured), and a slice bound computed
    from one (WaveRNN's `m[:, :, self.indent:-self.indent]`, GB0033 at the
    negated stop, measured); multiplying by one or slicing with the bare
    attribute traces and is not reported.
    Reading `dtype`, `flags` or `base`, or calling `tobytes()`, on an array
    traced code computes (`value = np.asarray(value)`, then a cache key
    `(value.shape, value.dtype, value.tobytes())`, as NVlabs' EDM2 builds its
    constants) breaks at the read: Dynamo holds the array as a tensor and
    models none of them (GB0157, GB0158; measured, torch 2.13; `shape`,
    `ndim`, `size`, `nbytes`, `astype` and `copy()` trace).
    An item of an array traced code iterates (`for s in seq`, `[int(s) for s
    in list(seq)]` with `seq = np.linspace(0, sqrt(n), k) ** 2`, DDIM's quadratic
    timestep schedule) is selected from a tensor, so `int(s)`, `float(s)` and
    `s.item()` break (GB0033, measured); arithmetic on the items traces.

    A branch (`if`, `while`, conditional expression) on a NumPy array or
    NumPy scalar computed in compiled code (`lam = np.where(...)[i]`,
    `if lam != 1.:`; also unpacked from a helper of the same file that
    returns arrays, as timm's Mixup does) breaks like a branch on a tensor
    (GB0170, at the condition, measured): it is flagged there, with advice.
    transformers' reformer computes its chunk length with
    `np.lcm(config.lsh_attn_chunk_length, config.local_attn_chunk_length)`.
    With `math.lcm` the value is a Python int that Dynamo folds.

    ## Example
    ```python
    @torch.compile
    def f(x, k: int):
        chunk = np.lcm(k, 4)
        if x.shape[-1] % chunk != 0:
            x = pad(x, chunk)
        return x
    ```

    ## Use instead
    ```python
    chunk = math.lcm(k, 4)
    ```

    ## Fix safety
    A forced integer cast gets a display-only hint. Otherwise only the callee changes (and `import math` is added when missing).
    **Safe** for `lcm`, `gcd`, `abs`, `maximum`/`minimum`, `sum`, `prod`,
    `max`/`min` when every argument is provably a Python int (literals, `len`,
    shape elements, int-annotated parameters): the values are equal; only the
    type changes from a NumPy scalar to a Python int. **Unsafe** otherwise:
    with floats `math.sqrt(-1)` and `math.log(0)` raise where NumPy returns
    `nan`/`-inf`, `max`/`min` order NaN differently and `np.sum` adds long
    float lists pairwise; with static values that are not provably numbers
    (`config.chunk`) the fix assumes they are. Over a named sequence the fix
    assumes a flat sequence of numbers: `np.sum` of a 2-D array is a number,
    `sum` of it a row. Functions Dynamo cannot trace get a display-only hint.
    """

    code = "GM403"
    name = "numpy-in-compiled-scope"
    summary = "NumPy on Python numbers is traced as tensors in compiled code"
    dynamo_gb = gb_types("GB0170", "GB0059", "GB0208", "GB0033", "GB0294", "GB0157", "GB0158")
    valid = (
        # items of a traced array used in tensor arithmetic only
        _HEADER + "    out = x\n    for s in np.arange(3):\n        out = out * s\n    return out\n",
        # the members Dynamo models on a traced array, and a tensor's dtype
        _HEADER + "    value = np.asarray([1.0, 2.0])\n    return x.to(x.dtype), value.shape, value.ndim, value.astype(np.float32)\n",
        "import numpy as np\nimport torch\n\n\ndef f(x):\n    return x * np.lcm(4, 6)\n",
        _HEADER + "    a = np.asarray(x)\n    return np.sqrt(a), np.sum(x.numpy()), np.sum([])\n",
        _HEADER + "    return x * np.pi, np.arange(k)\n",
        _HEADER + "    plan = [1, k]\n    return x * np.sum(plan)\n",
        _HEADER + "    return x * np.pow(2.0, k), np.searchsorted(np.arange(4), 2)\n",
        # the result stays in the graph: tensor arithmetic and torch ops take it (measured)
        _HEADER + "    n = np.lcm(k, x.shape[0])\n    return x.reshape(-1, n) / np.sqrt(x.shape[-1])\n",
        _HEADER + "    r = np.log(k)\n    return torch.empty(2).uniform_(-r, r) * -(np.log(2.0) / (k - 1))\n",
        # a reduction in tensor arithmetic, over a scalar or one item, or a size under capture_scalar_outputs (measured)
        _HEADER + "    return x * np.prod(x.shape[1:]), x.view(-1, np.prod(12)), x.view(np.prod(x.shape[-1:]), -1)\n",
        _HEADER.replace("import torch\n", "import torch\n\ntorch._dynamo.config.capture_scalar_outputs = True\n", 1)
        + "    return x.view(-1, np.prod(x.shape[1:]))\n",
        # int() and float() of a floating NumPy value trace (measured: phi4-multimodal's ``int(np.sqrt(n))``)
        _HEADER + "    side = int(np.sqrt(x.shape[1]))\n    return x.view(-1, side, side) * float(np.log(k))\n",
        # NumPy of NumPy, stored into a tensor or mixed into one, stays in the graph (measured: VITS' spline constant)
        _HEADER + "    c = np.log(np.exp(1 - k) - 1)\n    y = x.clone()\n    y[..., 0] = c\n"
        "    return y * np.log(np.exp(k) - 1)\n",
        # a branch on a NumPy array's shape or length is a branch on Python ints (measured: no break)
        _HEADER + "    a = np.ones(k)\n    if a.shape[0] > 2 and len(a) > 1:\n        x = x + 1\n    return x\n",
        # float casts, a plain ``.item()`` and ``.tolist()`` trace (measured); arrays made from tensors are GM302's
        _HEADER + "    n = x.size(1)\n    a = float(np.log1p(n).astype(np.float32)) + np.ceil(np.log1p(n)).item()\n"
        "    return x * a, np.ceil(np.log1p(n)).astype(int).tolist(), x.numpy().max().astype(int).item()\n",
        # a NumPy value kept on the module, bare as a slice bound, is specialised on (measured: no break)
        "import numpy as np\nimport torch\nfrom torch import nn\n\n\nclass Trim(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.indent = 2 * np.cumprod([1, 2])[-1]\n\n    def forward(self, m):\n"
        "        return m[:, self.indent:] * 2\n\n\ntrim = torch.compile(Trim())\n",
    )
    invalid = (
        # WaveRNN's upsampler: a slice bound computed from a NumPy value kept on the module (GB0033, measured)
        Example(
            "import numpy as np\nimport torch\nfrom torch import nn\n\n\nclass Trim(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.indent = 2 * np.cumprod([1, 2])[-1]\n\n    def forward(self, m):\n"
            "        return m[:, self.indent:-self.indent] * 2\n\n\ntrim = torch.compile(Trim())\n"
        ),
        # EDM2's constant cache keys an array by its dtype and bytes (GB0157 at the first read, measured)
        Example(_HEADER + "    value = np.asarray([1.0, 2.0])\n    key = (value.shape, value.dtype, value.tobytes())\n    return x, key\n"),
        Example(_LCM.format(call="np.lcm"), fixed="import math\n" + _LCM.format(call="math.lcm")),
        Example(_SUM.format(call="np.sum"), fixed=_SUM.format(call="sum")),
        Example(_SQRT.format(call="np.sqrt"), fixed="import math\n" + _SQRT.format(call="math.sqrt"), unsafe=True),
        Example(_MODULE.format(call="np.lcm"), fixed=_MODULE.format(call="m.lcm"), unsafe=True),
        Example(_PLAN.format(call="np.sum"), fixed=_PLAN.format(call="sum"), unsafe=True),
        # Perceiver: np.prod over a shape or a tuple as a torch size, also through a name (GB0033)
        Example(_FLAT.format(call="np.prod"), fixed="import math\n" + _FLAT.format(call="math.prod"), unsafe=True),
        Example(_TUPLE.format(call="np.prod"), fixed="import math\n" + _TUPLE.format(call="math.prod")),
        Example(_HEADER + "    starts = np.arange(k)[::-1]\n    return x, np.insert(starts[:-1], 0, 0)\n"),
        Example(_HEADER + "    return x * float(np.interp(0.5, [0.0, 1.0], [1.0, 2.0]))\n"),
        # a branch on a NumPy value computed in compiled code, also unpacked from a helper (timm's Mixup): GB0170
        Example(
            "import numpy as np\nimport torch\n\n\ndef helper(k):\n    lam = np.ones(k, dtype=np.float32)\n"
            "    return lam * 0.5, k\n\n\n@torch.compile\ndef f(x: torch.Tensor, k: int):\n    lam, n = helper(k)\n"
            "    if lam[0] != 1.:\n        x = x * 2\n    return x * n\n"
        ),
        Example(_HEADER + "    v = np.cos(np.arange(4) * 0.3)\n    return x + 1 if v[0] > 0.5 else x\n"),
        # transformers' Informer: an integer cast of a NumPy value forced into Python (GB0208)
        Example(_HEADER + "    n = x.size(1)\n    u = np.ceil(np.log1p(n)).astype(\"int\").item()\n    return x[:, :u]\n"),
        Example(_HEADER + "    v = np.ceil(x.size(1) / 2)\n    return x * int(v.astype(np.int64)), x * np.int32(k).item()\n"),
        # RetinaNet's anchors: a NumPy value computed in traced code sizes a NumPy array (GB0033)
        Example(
            _HEADER + "    shape = (np.array(x.shape[1:]) + 1) // 2\n    grid = np.arange(0, shape[1]) * 0.5\n"
            "    return x * float(grid[0])\n"
        ),
        # DDIM: a quadratic timestep schedule whose items are cast to int (GB0033)
        Example(_HEADER + "    seq = np.linspace(0.0, 3.0, k) ** 2\n    steps = [int(s) for s in list(seq)]\n"
                "    return x * steps[-1]\n"),
        # VAR: a NumPy position forced into Python picks a layer (GB0033)
        Example(_HEADER + "    ticks = np.linspace(0.0, 1.0, 4)\n    return x * np.argmin(np.abs(ticks - 0.3)).item()\n"),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for call, traced, function in ctx.recognised(untraced_numpy_function, nodes.Call):
            message = f"`{function}` has no `torch._numpy` implementation: Dynamo cannot trace it, graph break"
            yield ctx.report(call, message, traced, UNTRACED)
        reported: set[nodes.Call] = set()
        for call, traced, (found, use) in ctx.recognised(_numpy_over_python_values, nodes.Call):
            reported.add(call)
            message = (
                f"`{snippet(call.func)}` on Python values is traced as a tensor op: "
                "Python use of the result breaks the graph"
            )
            if use is not call:
                message += f" (at `{snippet(use)}`)"
            yield ctx.report(use, message, traced, numpy_twin_fix(ctx.analysis, found), gate_at=call)
        casts: set[nodes.Call] = set()  # one finding per cast, whichever check recognises it
        for call, traced, cast in ctx.recognised(forced_integer_cast, nodes.Call):
            casts.add(call)
            message = (
                f"`{snippet(cast)}` is an integer NumPy value and `{snippet(call.func)}` forces it "
                "into Python: Dynamo does not trace that, graph break"
            )
            yield ctx.report(call, message, traced, FORCED_CAST)
        if "numpy" not in ctx.analysis.source.text:
            return  # no NumPy import: no NumPy value, and no binding lookups per branch operand
        for call, traced, item in ctx.recognised(forced_array_item, nodes.Call):
            if call not in casts:
                message = (
                    f"`{snippet(call)}` forces `{item.name}`, an item of a NumPy array, into Python: Dynamo traces "
                    "the array as a tensor, so the item's value is data: graph break"
                )
                yield ctx.report(call, message, traced, ARRAY_ITEM)
        for attribute, traced in ctx.traced_nodes(nodes.Attribute):
            if _unmodelled_array_member(ctx.values, attribute):
                message = (
                    f"`{snippet(attribute)}` on a NumPy array: Dynamo traces arrays as tensors and has no "
                    f"`{attribute.attrname}` for them, graph break"
                )
                yield ctx.report(attribute, message, traced, UNMODELLED_MEMBER)
        # under ``capture_scalar_outputs`` a module's NumPy size may trace (not measured): stay quiet then
        captured = setting_on(ctx.values, ctx.options, CAPTURE_SCALAR_OUTPUTS)
        for call, traced in ctx.traced_nodes(nodes.Call):
            module_sizes = [] if captured else _module_numpy_sizes(ctx.values, call)
            for size in (*traced_numpy_sizes(ctx.values, call), *module_sizes):
                if reported.isdisjoint(numpy_origins(ctx.values, size) or ()):
                    message = (
                        f"`{snippet(call.func)}` takes the NumPy value `{snippet(size)}` as a size: Dynamo traces "
                        "NumPy as tensors, and a size needs a Python int: graph break"
                    )
                    yield ctx.report(call, message, traced, NUMPY_SIZE)
                    break
        for subscript, traced in ctx.traced_nodes(nodes.Subscript):
            bound = None if captured else _module_numpy_bound(ctx.values, subscript)
            if bound is not None:
                message = (
                    f"slice bound `{snippet(bound)}` is computed from a NumPy value the module keeps: Dynamo holds "
                    "it as a tensor, and a slice needs a Python int: graph break"
                )
                yield ctx.report(subscript, message, traced, NUMPY_SIZE)
        for branch, traced in ctx.traced_nodes(nodes.If, nodes.While, nodes.IfExp, nodes.Comprehension):
            tests = branch.ifs if isinstance(branch, nodes.Comprehension) else [branch.test]
            for operand in (operand for test in tests for operand in condition_operands(test)):
                # an operand the oracle calls a tensor is GM101's finding, and one computed by a NumPy call
                # reported above (with its fix) is that finding's: one break, one finding
                origins = None if ctx.values.is_tensor(operand) else numpy_origins(ctx.values, operand)
                if origins is not None and reported.isdisjoint(origins):
                    message = (
                        f"branch on a NumPy value `{snippet(operand)}`: Dynamo traces NumPy as tensors, "
                        "so the branch needs the data: graph break"
                    )
                    yield ctx.report(operand, message, traced, NUMPY_BRANCH)
