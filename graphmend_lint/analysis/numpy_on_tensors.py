"""NumPy math applied to a tensor in traced code, and the tensor-only use of its result.

Eagerly, ``np.sqrt(t)`` of a CPU tensor is a tensor: NumPy computes on the
tensor's buffer and ``Tensor.__array_wrap__`` wraps the result back. Dynamo
instead traces NumPy through ``torch._numpy``, so the same call is an
*ndarray* in the graph. Whatever only arrays do (arithmetic, ``.reshape``,
``.sum()``, a torch function taking it, being returned) still traces; a
method ndarrays lack fails the compilation outright: ``.clone()``, ``.to()``,
``.float()``, ``.detach()``, ``.unsqueeze()``, ``.numel()`` and ``.view()``
(ndarray's ``view`` takes a dtype) raise "RuntimeError when making fake
tensor call" (GB4315), with or without ``fullgraph`` (measured on torch 2.13).
Latent Diffusion's DDIM sampler passes ``np.sqrt(alphas_cumprod.cpu())`` to
``to_torch = lambda x: x.clone().detach().to(torch.float32)``.

Only what is provable is matched: a NumPy function of :data:`TORCH_TWINS`
(or one of :data:`NO_TWIN`) of a first argument that is not a Python value,
and a use of its value, followed through indexing, arithmetic with
non-tensors, array methods, names bound once and the parameters of functions
and lambdas of this file, as the receiver of a tensor method ndarrays do not
have. That use is the proof that the argument is a tensor when the oracle
cannot tell (DDIM's ``self.model.alphas_cumprod`` is a buffer of a model
passed in): eagerly, NumPy's result of anything but a tensor is an ndarray or
a NumPy scalar, which has no ``.clone()``, so code that runs passed a tensor.
``.view()``, which real ndarrays have too, needs the oracle's proof.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from astroid import nodes

from graphmend_lint.analysis.lookup import reaching_bindings
from graphmend_lint.analysis.values import Kind, ValueOracle


@dataclass(frozen=True)
class TorchTwin:
    """The torch function that computes what a NumPy function does to a tensor."""

    name: str  # ``torch.<name>``
    #: Bitwise the same values as NumPy on floating tensors (measured on 10^5 floats): abs, negation,
    #: squaring, rounding to integers, sign, reciprocal and clipping. NumPy's and torch's sqrt, exp, log and
    #: trigonometry differ in the last bit on about 1 element in 10 (float32) or 100 (float64).
    exact: bool


_INEXACT = {name: TorchTwin(name, exact=False) for name in
            ("sqrt", "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "sinh", "cosh",
             "tanh")}  # fmt: skip
_RENAMED = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh", "arccosh": "acosh",
            "arctanh": "atanh"}  # fmt: skip
_EXACT = {"abs": "abs", "absolute": "abs", "negative": "neg", "square": "square", "floor": "floor", "ceil": "ceil",
          "trunc": "trunc", "sign": "sign", "reciprocal": "reciprocal"}  # fmt: skip
#: NumPy elementwise functions of one array (``clip`` also takes its two bounds) and their torch twins.
TORCH_TWINS: dict[str, TorchTwin] = {
    **_INEXACT,
    **{numpy: TorchTwin(torch, exact=False) for numpy, torch in _RENAMED.items()},
    **{numpy: TorchTwin(torch, exact=True) for numpy, torch in _EXACT.items()},
    "clip": TorchTwin("clip", exact=True),
}
#: NumPy functions that also give an ndarray of a tensor in the graph but have no one-to-one torch twin
#: (``np.maximum(t, 0)``: ``torch.maximum`` wants two tensors; ``np.cumprod(t)`` flattens first).
NO_TWIN = frozenset({"maximum", "minimum", "power", "cumprod", "cumsum"})
#: Methods of ``torch._numpy.ndarray`` (torch 2.13) that take what a tensor's method of the same name does:
#: on these the traced ndarray stands in for the tensor. Not ``view``: ndarray's takes a dtype (GB4315, measured).
NDARRAY_METHODS = frozenset(
    {"all", "any", "argmax", "argmin", "argsort", "astype", "choose", "clip", "conj", "conjugate", "copy", "cumprod",
     "cumsum", "diagonal", "dot", "fill", "flatten", "item", "max", "mean", "min", "nonzero", "prod", "ptp", "put",
     "ravel", "repeat", "reshape", "resize", "round", "searchsorted", "sort", "squeeze", "std", "sum", "swapaxes",
     "take", "tolist", "trace", "transpose", "var"}
)  # fmt: skip
_MAX_DEPTH = 6


@dataclass(frozen=True)
class NumpyOnTensor:
    """``np.<function>(tensor, ...)`` whose result reaches a tensor-only method."""

    call: nodes.Call
    function: str  # the NumPy function's name (``sqrt``)
    use: nodes.Call  # the method call ndarrays do not have (``x.clone()``)

    @property
    def twin(self) -> TorchTwin | None:
        return TORCH_TWINS.get(self.function)


def numpy_on_tensor(values: ValueOracle, call: nodes.Call) -> NumpyOnTensor | None:
    """*call* as a NumPy function of a tensor whose result is later used as a tensor (module docstring)."""
    function = _numpy_function(values, call)
    if function is None or not call.args or isinstance(call.args[0], nodes.Starred):
        return None
    argument = call.args[0]
    proven = values.is_tensor(argument)
    if not proven and values.kind(argument) is Kind.STATIC:
        return None
    for use in _tensor_only_uses(values, call, 0):
        # A method a NumPy result (ndarray or NumPy scalar) has no eager counterpart of is itself the proof:
        # code that runs eagerly passed a tensor. Not ``view``, which real ndarrays have too.
        if proven or use.func.attrname != "view":
            return NumpyOnTensor(call, function, use)
    return None


def _numpy_function(values: ValueOracle, call: nodes.Call) -> str | None:
    module, _, function = (values.qualified_name(call.func) or "").rpartition(".")
    return function if module == "numpy" and (function in TORCH_TWINS or function in NO_TWIN) else None


def _tensor_only_uses(values: ValueOracle, node: nodes.NodeNG, depth: int) -> Iterator[nodes.Call]:
    """Method calls, on *node*'s ndarray value or on what it flows into, that only tensors have."""
    if depth > _MAX_DEPTH:
        return
    parent = node.parent
    if isinstance(parent, nodes.Attribute) and isinstance(parent.parent, nodes.Call) and parent.parent.func is parent:
        method = parent.parent
        if parent.attrname in NDARRAY_METHODS:
            yield from _tensor_only_uses(values, method, depth + 1)  # ``a.reshape(-1)`` is an ndarray again
        elif values.facts.method_kind(parent.attrname) is not None:
            yield method
    elif isinstance(parent, nodes.Subscript) and parent.value is node:
        yield from _tensor_only_uses(values, parent, depth + 1)
    elif isinstance(parent, nodes.UnaryOp) and parent.op in {"-", "+"}:
        yield from _tensor_only_uses(values, parent, depth + 1)
    elif isinstance(parent, nodes.BinOp):
        other = parent.right if parent.left is node else parent.left
        if not values.is_tensor(other):  # with a tensor operand the result is a tensor (measured)
            yield from _tensor_only_uses(values, parent, depth + 1)
    elif isinstance(parent, nodes.Assign) and parent.value is node and len(parent.targets) == 1:
        target = parent.targets[0]
        if isinstance(target, nodes.AssignName):
            for use in _uses_of_binding(target):
                yield from _tensor_only_uses(values, use, depth + 1)
    elif isinstance(parent, nodes.Call) and node in parent.args:
        parameter = _parameter_for(parent, parent.args.index(node))
        if parameter is not None:
            for use in _uses_of_binding(parameter):
                yield from _tensor_only_uses(values, use, depth + 1)


def _uses_of_binding(binding: nodes.AssignName) -> Iterator[nodes.Name]:
    """Reads of *binding*'s name in its scope that no other binding reaches."""
    scope = binding.scope()
    for name in scope.nodes_of_class(nodes.Name):
        if name.name != binding.name or name.scope() is not scope:
            continue
        try:
            reaching = reaching_bindings(name)
        except Exception:  # astroid lookups can fail on odd code; then the use is not provably this value
            continue
        if reaching == [binding]:
            yield name


def _parameter_for(call: nodes.Call, index: int) -> nodes.AssignName | None:
    """The positional parameter of a function or lambda of this file that argument *index* of *call* binds."""
    callee = _local_callable(call.func)
    if callee is None or any(isinstance(arg, nodes.Starred) for arg in call.args[: index + 1]):
        return None
    positional = [*(callee.args.posonlyargs or ()), *(callee.args.args or ())]  # None where astroid lacks them
    if isinstance(callee, nodes.FunctionDef) and isinstance(callee.parent, nodes.ClassDef):
        return None  # a method: which argument binds which parameter depends on how it is called
    return positional[index] if index < len(positional) else None


def _local_callable(func: nodes.NodeNG) -> nodes.Lambda | nodes.FunctionDef | None:
    """The one ``def`` or ``name = lambda ...`` of this file that *func* (a plain name) calls."""
    if not isinstance(func, nodes.Name):
        return None
    try:
        bindings = reaching_bindings(func)
    except Exception:
        return None
    if len(bindings) != 1:
        return None
    binding = bindings[0]
    if isinstance(binding, nodes.FunctionDef):
        return binding
    assign = binding.parent if isinstance(binding, nodes.AssignName) else None
    if isinstance(assign, nodes.Assign) and isinstance(assign.value, nodes.Lambda):
        return assign.value
    return None
