"""GM301: ``t.item()`` / ``int(t)`` copies a tensor's value to a Python scalar."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.captured_values import captured_origin
from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.analysis.dynamo_settings import CAPTURE_SCALAR_OUTPUTS, setting_on
from graphmend_lint.analysis.host_values import (
    builtin_name,
    math_conversion,
    mixed_clamp_bound,
    percent_format,
    range_bound,
    scalar_conversion,
    sequence_repetition,
    unhandled_builtin,
    tensor_check,
)
from graphmend_lint.analysis.known_tensors import known_value_tensor
from graphmend_lint.analysis.tensor_sizes import frame_input
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.fixes.capture_switch import scalar_capture_fix
from graphmend_lint.fixes.host_sync import scalar_fix
from graphmend_lint.rules.base import Example, Rule, RuleOption, switch_example
from graphmend_lint.rules.break_sites import BreakFinder, break_finder
from graphmend_lint.rules.captured_branch import report_captured_branches
from graphmend_lint.rules.gb_types import gb_types

CAPTURED_BRANCH = Fix.advice(
    "no automatic fix: keep the value a tensor (drop `.item()`) and select with `torch.where` / "
    "`torch.cond`, or decide outside the compiled function",
)
TENSOR_CHECK = Fix.advice(
    "no automatic fix: `torch._assert_async(cond, msg)` checks on the device (it raises `RuntimeError`), "
    "or check outside the compiled function",
)
TENSOR_SIZE = Fix.advice(
    "no automatic fix: compute the size from shapes (`x.shape[1]`, `len(...)`), pad to a static bound "
    "and mask, or pass the size in as a Python int",
)
RANGE_BOUND = Fix.advice(
    "no automatic fix: take the count from shapes (`x.shape[0]`, `len(...)`), pass it in as a Python int, "
    "or vectorise the loop; `capture_scalar_outputs` does not trace `range()` over a tensor",
)
MATH_FUNCTION = Fix.advice(
    "no automatic fix: use the torch twin (`torch.sqrt(t)`, `t.floor()`, `torch.isnan(t)`), which keeps the value "
    "a tensor in the graph, or compute on Python numbers (shapes, config values) instead; "
    "`capture_scalar_outputs` does not help: `math` guards on the captured number"
)
PERCENT_FORMAT = Fix.advice(
    "no automatic fix: format outside the compiled function, or format shapes and Python numbers only; "
    "an f-string `f\"{t}\"` keeps the tensor and does not break, `capture_scalar_outputs` does not help"
)
UNHANDLED_BUILTIN = Fix.advice(
    "no automatic fix: format the tensor outside the compiled function (return it, then format), or format "
    "its shape or dtype only; `capture_scalar_outputs` does not help"
)
SEQUENCE_REPETITION = Fix.advice(
    "no automatic fix: build the tensor with torch ops (`torch.full((int(n),), w)` outside the compiled code, "
    "or `x.new_full(...)` with a size from shapes), or pass the count in as a Python int; "
    "`capture_scalar_outputs` does not help: Dynamo guards on the captured count"
)
MIXED_CLAMP = Fix.advice(
    "no automatic fix: give both bounds as tensors (`torch.clamp(x, t.new_tensor(0.0), t)`) or both as Python "
    "numbers; `capture_scalar_outputs` does not help (Dynamo fails on the captured bound)"
)
_CAPTURE = (
    "import torch\n\ntorch._dynamo.config.capture_scalar_outputs = True\n\n\n"
    "@torch.compile\ndef f(x: torch.Tensor):\n"
)

_HEADER = "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, lengths: torch.Tensor, n: int):\n"


def _switched(source: str) -> Example:
    return switch_example(source, CAPTURE_SCALAR_OUTPUTS)


class TensorToPythonScalar(Rule):
    """## What it does
    Flags `t.item()`, and `int(t)`, `float(t)`, `bool(t)`, `complex(t)` or
    `operator.index(t)` on a tensor, in code that `torch.compile` traces (`.item()` also on a value of
    unknown kind, such as a library call's result: of what compiled code
    meets, only tensors and NumPy arrays have `.item()`, and it breaks on
    both, GB0124 and GB0033, measured; not when a class of the same file
    defines an `item` method, nor on a NumPy scalar of Python numbers, which
    Dynamo folds); and a tensor passed where
    torch wants a size, which is converted the same way: `torch.zeros((b, n,
    d))` with `n = lengths.max()`, `torch.arange(t)`, `x.new_zeros(t)`,
    `x.view(t, -1)` (also `ones`, `empty`, `rand`, `randn`, `randperm`,
    `randint`'s size, `full`'s size, `new_ones`, `new_empty`, `new_full`,
    `reshape` and `torch.reshape`, `expand`, `repeat`, `tile`, `topk`'s k,
    `narrow`'s length, `F.interpolate(size=...)` and `F.pad`'s widths), and
    the integer arguments `torch.randint`'s bounds `low` / `high`, `roll`'s
    shifts, `narrow`'s start, `chunk`'s and `split`'s counts, `F.one_hot`'s
    `num_classes`, `unflatten`'s sizes and `linspace`'s / `logspace`'s steps
    (PointPillars' anchors), and the Python-number parameters of
    ops (`F.huber_loss`'s `delta`, `F.smooth_l1_loss`'s `beta`, `F.leaky_relu`'s
    slope, `F.dropout`'s `p`, `F.elu`/`F.celu`'s `alpha`, `F.hardtanh`'s bounds,
    `F.normalize`'s `p`/`eps`, `F.cross_entropy`'s `label_smoothing`, the
    margins of the margin losses, `F.threshold`, `cosine_similarity`'s `eps`,
    `torch.nan_to_num`'s values, `clip_grad_norm_`'s `max_norm`; MACE passes
    `delta=factors[0]`) (measured, GB0033; unlike a size,
    `capture_scalar_outputs` does not trace these, so no switch is offered). And
    a clamp whose bounds mix a tensor and a Python number (`torch.clamp(x, 0,
    t)`, `x.clamp(min=0.0, max=x.max())`, `torch.clip`, `clamp_`): torch takes
    the overload for two Python bounds and Dynamo reads the tensor's value
    (GB0033, measured, also when `t` is a frame input or a module attribute;
    Beta-VAE's capacity `torch.clamp(c, 0, self.C_max.data[0])`). Two tensor
    bounds, or a tensor bound alone, are traced. A tensor the compiled
    frame receives as an argument (a parameter, unless every call of its
    function in the file is traced code passing a tensor computed there; a
    name read after an earlier break, in an earlier statement or an earlier
    argument of the same call, which the resumed frame receives), or a 0-d
    tensor built from Python numbers and shapes alone
    (`torch.tensor(x.shape[1]) // 2`, `torch.div(n, 2)`, DeBERTa's attention
    span), is not reported as a size, a clamp bound, a repetition count or a
    `math` argument: Dynamo knows its value (measured on torch 2.13); nor is a
    buffer or tensor attribute of the module (`torch.arange(self.n)`) that
    the function does not update first, which Dynamo reads like an argument
    (measured: no break).
    Also `torch._check_tensor_all(cond)` and
    `torch._check_tensor_all_with(error, cond, msg)` with a tensor `cond`:
    torch reads the condition back with `.item()` (GB0124, measured on
    torch 2.13; `torch._check` on a Python bool does not break). And
    `range(t)` / `range(a, t)` over a tensor bound, a frame argument
    included (GB0059, "Failed to trace builtin operator"): Python's `range`
    needs ints, and no setting makes Dynamo trace it (`range(int(t))` under
    `capture_scalar_outputs` breaks on the unbacked bound instead).
    And a `math` function given a tensor (`math.sqrt(t)`, `math.floor(t)`,
    `math.log(t)`, `math.isnan(t)`, `math.isclose(t, 1.0)`, `math.gcd(t, 4)`
    and the other number functions of `math`): `math` converts its argument
    with `float(t)` / `operator.index(t)`, GB0033 "Data dependent operator",
    and under `capture_scalar_outputs` it still breaks, on a guard of the
    captured number (measured on torch 2.13, each function; `math.prod(t)`
    multiplies the items as tensors and `math.radians(t)` is traced: neither
    breaks, neither is reported). `math` on shapes, config values and other
    Python numbers is plain Python and is not reported, nor is `math` on a
    0-d tensor the compiled frame (or a frame resumed after a break)
    receives as an argument: an integer one is specialised on and does not
    break, a floating one breaks (measured; `int(t)` of either breaks), and
    its dtype is rarely known.
    And a Python sequence repeated a tensor number of times (`[w] * t.sum()`,
    `(0,) * t`, `"-" * t.max()`; Qwen2.5-Omni's `[self.n_window * 2] *
    chunk_num.sum()`): Python reads the count with `__index__` (GB0033; a
    guard breaks under `capture_scalar_outputs`; measured on torch 2.13), not
    when the count is a tensor the frame receives, as for `math`.
    And printf-style formatting of a tensor, `"step %d" % t`, `"%s" % t`,
    `"%d/%d" % (t, n)` or `"%(n)d" % {"n": t}`: `%` converts the tensor to a
    Python number or string (GB0033 for `%d` / `%i` / `%x` / `%f`, GB0208 for
    `%s` / `%r`, GB0088 for a tuple or dict of operands; all still break under
    `capture_scalar_outputs`, measured on torch 2.13). Not a tensor the frame
    receives, as for `math`; an f-string (`f"{t}"`, `f"{t:.2f}"`) does not
    break and is not reported.

    ## Why is this bad
    A Python number cannot live inside an FX graph. At each conversion Dynamo
    ends the graph, runs it, waits for the device, copies the value to the
    host and resumes in a new graph: a graph break (GB0124; `complex(t)` is
    GB0059; a tensor used as a size is GB0033, "Data dependent operator")
    and a device-to-host sync on every call. Inside a loop the break makes
    Dynamo give up on the whole function.

    ## Example
    ```python
    @torch.compile
    def f(x, lengths, n: int):
        assert lengths.max().item() <= n      # GB0124
        scale = x.abs().max().item()          # GB0124
        return x / scale
    ```

    ## Use instead
    Keep the value a tensor where a tensor will do:
    ```python
    @torch.compile
    def f(x, lengths, n: int):
        assert lengths.max() <= n             # lowered to an async assert
        scale = x.abs().max().detach()
        return x / scale
    ```

    ## Fix safety
    Three rewrites, each offered only when it provably applies:

    * the conversion is the test of an `assert` (`assert t.item()`,
      `assert t.item() <= n` with `n` a Python int): drop `.item()`. **Unsafe**:
      eager behaviour is identical, but under `torch.compile` a failing assert
      raises `RuntimeError("assertion error")` instead of `AssertionError`.
      A float `n` or `int(t)` could compare differently, so no fix there.
    * `s = t.item()` where every read of `s` is arithmetic with another tensor:
      `.item()` becomes `.detach()` (the gradient stays cut). **Unsafe**: a 0-d
      tensor promotes by its dtype (an integer tensor times a float64 0-d tensor
      is float64, times a Python float it is float32) and must be on a
      compatible device.
    * `flag = t.item()` (or `bool(t)`) that only feeds `if flag:` tests: the
      copy is dropped when GM101 can then predicate every such branch with
      `torch.where`, or `torch.cond` when the branch calls submodules or
      functions (checked by linting the edited text); the next fix round
      applies that predication. **Unsafe**, as GM101's fix is. When GM101
      cannot predicate, no fix: dropping the copy alone would only move the
      break to each `if`.

    Otherwise, when nothing in the file needs a converted number's concrete
    value (no branch, loop, `assert`, Python or NumPy function, helper or
    submodule call takes it or anything computed from it), the fix is the
    module-level line `torch._dynamo.config.capture_scalar_outputs = True`,
    the switch Dynamo's own GB0124 hint names: the conversions, and tensors
    used as sizes, are traced as symbols and no longer break. **Unsafe**:
    eager code is untouched, but the switch is process-wide (every compiled
    function in the process traces conversions), the host sync stays, and a
    use the linter cannot see (in another module) may still break, at that
    use. Where such a use is in the file, no fix: the break would only move
    there (measured on the dev corpus, see `docs/benchmarks.md`).

    A receiver not proven a tensor (it may be a NumPy array) gets none of
    these rewrites, only the switch or advice. Anything else is display-only.

    ## Measured spellings
    Each spelling below was run alone through Dynamo (torch 2.13, CPU) on a
    tensor computed inside the compiled function (`n = (x > 0).sum()`), and
    the breaks were read from the `graph_breaks` log. "Guard" means the
    captured number is traced but a guard on it breaks, with no GB id.

    | spelling | default | `capture_scalar_outputs` | reported by |
    |---|---|---|---|
    | `t.item()`, `int(t)`, `float(t)`, `bool(t)` | GB0124 | no break | GM301 |
    | `operator.index(t)` | GB0124 | no break | GM301 |
    | `range(t)` | GB0059 | GB0059 | GM301 |
    | `math.sqrt`, `floor`, `ceil`, `log*`, `exp*`, `pow`, `fabs`, `isnan`, `isinf`, `isfinite`, `isclose`, trigonometric functions, `gcd`, `lcm`, `comb`, `factorial`, `fsum`... of `t` | GB0033 | guard | GM301 |
    | `math.radians(t)`, `math.prod(t)`; `math.sqrt(n)` with `n` an integer 0-d tensor the frame (or a resumed frame) receives | no break | no break | none |
    | `math.sqrt(n)` with `n` a floating 0-d tensor the frame (or a resumed frame) receives | GB0033 | | none (dtype unknown) |
    | `t` as a size: `torch.zeros(t)`, `x.view(t, -1)`, `torch.reshape(x, (t, -1))`, `x.repeat(t)`, `x.tile((t,))`, `x.expand(t)`, `x.topk(t)`, `x.narrow(0, 0, t)` | GB0033 | no break | GM301 |
    | `x.chunk(t)`, `x.split(t)`, `F.one_hot(y, t)`, `torch.linspace(0, 1, t)`, `torch.logspace(0, 1, steps=t)` | GB0033 | guard | GM301 (both modes) |
    | `x.roll(t)`, `x.narrow(0, t, 2)`, `torch.randint(0, t, (2,))`, `x.unflatten(0, (t, -1))` | GB0033 | Dynamo fails | GM301 (default mode) |
    | any of those with `t` a 0-d tensor the frame receives | no break | no break | none |
    | `"%d" % t`, `"%f" % t`, `"%x" % t` | GB0033 | guard | GM301 |
    | `"%s" % t`, `"%r" % t` | GB0208 | GB0208 | GM301 |
    | `"%d/%d" % (t, n)`, `"%(n)d" % {"n": t}` | GB0088 | GB0088 | GM301 |
    | `str(t)`, `str(x[0, 0])` | GB0059 | GB0059 | GM301 |
    | `repr(t)` | GB0569 | GB0569 | GM301 |
    | `[w] * t`, `t * (w,)`, `"-" * t` | GB0033 | guard | GM301 |
    | `[w] * n` with `n` a 0-d tensor the frame receives | no break | no break | none |
    | `min(t, u)`, `max(3, t)`, `abs(t)` | no break | | none |
    | `torch.clamp(x, 0, t)`, `x.clamp(min=0.0, max=t)`, `torch.clip(x, -1.0, t)`, `y.clamp_(0, t)`, also with `t` a frame input | GB0033 | Dynamo fails | GM301 (default mode) |
    | `torch.clamp(x, t0, t1)`, `x.clamp(max=t)`, `torch.clamp(x, t, None)`, `torch.clamp_min(x, t)` | no break | | none |
    | `torch.clamp(x, 0, s)`, `[w] * s`, `math.sqrt(s)`, `torch.zeros(s)` with `s = torch.tensor(n)` (a Python number) | no break | | none |
    | `t.tolist()`, integer / float `t` | GB0033 / GB0109 | no break / GB0109 | GM302 |
    | `torch.equal(a, b)`, `torch.allclose(a, b)` | GB0033 | GB0033 | GM303 |
    | `torch.is_nonzero(t)`, `t.is_nonzero()` | GB0033 | guard | GM303 |
    | `y[t]`, `t` a 0-d integer tensor the frame computes | GB0033 | guard | GM404 (whole-tensor reductions such as `argmax()`, `sum()`, `max()`, their casts, and arithmetic with ints) |
    | `y[t]`, `t` an integer 0-d tensor the frame (or a resumed frame) receives | no break | | none |
    | `[1, 2, 3][t]` (a Python sequence) | GB0124 | Dynamo fails | GM404 |
    | `y[t:]` | GB0124 | no break | GM402 |
    | `np.prod(shape)`, `np.prod([2, 3])`, `np.sum(...)`, `np.max(...)` over a sequence, as a torch size (also through a name) | GB0033 | no break | GM403 |
    | `np.prod(t)` as a torch size | GB0033 | no break | none |
    | `np.prod(shape)` in tensor arithmetic; as a size `np.prod(12)`, `np.lcm(2, s)`, or a reduction over one item (`np.prod(x.shape)` of a 1-d `x`) | no break | no break | none |
    | `int(np.prod(shape))` | GB0208 | GB0208 | GM403 |
    | `np.float32(t)`, `np.int64(t)`, `np.sum(t)`, `f"{t:.2f}"`, an object storing `t` and formatting it (a `tqdm(total=t)` stand-in) | no break | no break | none |
    | `torch.manual_seed(t)` | GB0007 | GB0007 | GM204 |
    | `hash(t)` | GB0055 | GB0055 | none |

    `random.seed(t)` and `generator.manual_seed(t)` raise eagerly (they take
    ints); GM204 and GM513 flag those calls whatever their argument.

    ## Captured scalars
    With `torch._dynamo.config.capture_scalar_outputs = True` (set at module
    level in the file, or the rule option `capture-scalar-outputs = true`),
    Dynamo traces `.item()`, `int(t)`, `float(t)` and `bool(t)` as unbacked
    symbols: they no longer break (measured, torch 2.13), arithmetic and
    slicing with the number stay in the graph, and the host sync remains.
    A branch on the number still breaks (GB0170), at the `if`/`while`/
    conditional expression instead of at the conversion: in that mode the
    rule reports each branch operand computed from a conversion (through
    local variables), with advice only. Of the tensors used as sizes, that
    mode reports `chunk`'s and `split`'s counts and `one_hot`'s classes: the
    count is captured, but Dynamo guards on it and breaks there (measured);
    sizes the switch traces are not reported, nor the integer arguments with
    which Dynamo fails instead of logging a break (`roll`'s shifts,
    `narrow`'s start, `randint`'s bounds, `unflatten`'s sizes).
    """

    code = "GM301"
    name = "tensor-to-python-scalar"
    summary = "`.item()` / `int(tensor)` copies a tensor to Python and splits the graph"
    dynamo_gb = gb_types("GB0124", "GB0059", "GB0170", "GB0033", "GB0208", "GB0088", "GB0569")
    options = {
        "capture-scalar-outputs": RuleOption(
            False, "the program turns `capture_scalar_outputs` on somewhere the linter cannot see (another module, a launcher script)"
        )
    }
    valid = (
        "import torch\n\n\ndef f(x):\n    return x.sum().item()\n",
        _CAPTURE + "    n = int((x > 0).sum())\n    return x[:n] * x.sum().item()\n",
        _HEADER + "    k = int(x.shape[0])\n    return x * float(n) + len(x) + k\n",
        _HEADER + "    return [x * i for i in range(x.size(0), n)] + [x * i for i in range(lengths.numel())]\n",
        _HEADER + "    items = {'a': 1}\n    return x * len(list(items.items()))\n",
        _HEADER + "    if not torch.compiler.is_compiling():\n        print(x.sum().item())\n    return x\n",
        _HEADER + "    y = torch.zeros((x.size(0), n, x.shape[1]))\n    return y, torch.full((2,), lengths.max()), x.view(-1, n)\n",
        _HEADER + "    return torch.reshape(x, (n, -1)), torch.arange(len(lengths)), x.new_zeros(x.shape)\n",
        _HEADER + "    return torch.randint(0, n, (x.shape[0],)), torch.randperm(n), torch.linspace(0, lengths.max(), 4)\n",
        "import torch\nimport torch.nn.functional as F\n\n\n@torch.compile\ndef f(x: torch.Tensor, n: int):\n"
        "    return F.interpolate(x, size=(n, x.shape[-1])), F.pad(x, (0, n), value=x.max())\n",
        # a Python condition: `torch._check` traces it (measured); a check on a shape is no tensor
        _HEADER + "    torch._check_with(ValueError, n > 0, lambda: 'bad')\n    torch._check(x.shape[0] == n)\n    return x\n",
        # a 0-d tensor the frame receives is specialised on, not converted (measured)
        _HEADER + "    return torch.zeros((2, lengths)), x.new_zeros(2, lengths)\n",
        # integer arguments that are Python ints or frame inputs (measured: no break)
        _HEADER + "    return x.roll(n), x.topk(2), x.narrow(0, 0, n), torch.reshape(x, (n, -1)), x.chunk(lengths)\n",
        # an integer buffer of the module: read like a frame argument, specialised on (measured)
        "import torch\nfrom torch import nn\n\n\nclass Pos(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('n', torch.tensor(4))\n\n    def forward(self, x):\n"
        "        return torch.arange(self.n), x.view(self.n, -1), x.new_zeros(self.n)\n\n\nmodel = torch.compile(Pos())\n",
        # a 0-d tensor of Python numbers and shapes alone: Dynamo knows its value (measured)
        _HEADER + "    half = torch.tensor(x.shape[1]) // 2\n"
        "    return torch.arange(half), x.view(torch.div(x.shape[0], 1, rounding_mode='floor'), -1)\n",
        # `math` on Python numbers; `math.prod` / `math.radians` of a tensor are traced (measured)
        "import math\n" + _HEADER + "    d = math.sqrt(x.shape[-1]) * math.log(n)\n    return x / d, math.prod(lengths), math.radians(x.sum())\n",
        # `math` on a 0-d tensor the frame receives: no break when it is an integer one (measured), dtype unknown
        "import math\n" + _HEADER + "    return x * math.sqrt(lengths)\n",
        # `%` on shapes and Python numbers, tensor modulo, f-strings of a tensor (measured: no break), a frame input
        _HEADER + "    name = 'n=%d/%d %s' % (x.shape[0], n, x.dtype)\n    return x % 3, f'{x.sum()}', name, '%d' % lengths\n",
        # a size list filled in with Python numbers only
        _HEADER + "    size = list(x.size())\n    size[0] = n + 1\n    size.append(x.shape[0])\n    return x.new_zeros(size)\n",
        # under the switch: sizes are traced; roll's shifts make Dynamo fail, with no logged break (measured)
        _CAPTURE + "    s = (x > 0).sum()\n    return torch.zeros(s), x.view(s, -1), x.roll(s)\n",
        # a sequence repeated by a frame input (specialised on) or by a shape (measured: no break)
        _HEADER + "    return torch.tensor([4] * lengths), torch.tensor([1] * x.shape[0] + (0,) * n)\n",
        # clamp bounds that are both tensors, or one tensor alone, are traced (measured)
        _HEADER + "    return torch.clamp(x, x.min(), lengths.max()), x.clamp(max=x.max()), torch.clamp(x, n, None)\n",
        # Dynamo knows a 0-d tensor made from Python numbers (DeBERTa's attention span) and reads it in the
        # graph: no break as a clamp bound, a repetition count or a `math` argument (measured)
        "import math\nimport torch\n\n\ndef span(q, k, m: int):\n    return torch.tensor(min(q.size(-2), k.size(-2), m))\n\n\n"
        "@torch.compile\ndef f(q: torch.Tensor, k: torch.Tensor):\n    s = span(q, k, 4)\n    n = torch.tensor(2)\n"
        "    return torch.clamp(q, 0, s * 2 - 1), [q] * n, math.sqrt(torch.tensor(4.0))\n",
        # `operator.index` of a Python int
        "import operator\n" + _HEADER + "    return x * operator.index(x.shape[0])\n",
        _CAPTURE + "    import operator\n    return x * operator.index((x > 0).sum())\n",
        # a class of this file has `.item()`: the untyped receiver may be one; a NumPy scalar of Python
        # numbers is a constant (measured)
        "import numpy as np\nimport torch\nfrom elsewhere import load\n\n\nclass Slot:\n    def item(self):\n"
        "        return 1\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n    return x * load(x).item() * np.float32(2.0).item()\n",
    )
    invalid = (
        # a tensor read back as text: no fix, in either mode
        Example(_HEADER + "    key = str(lengths.max())\n    return x * len(key)\n"),
        # nothing needs the number itself: the switch traces the size (unsafe, process-wide)
        Example(
            _HEADER + "    n = lengths.max()\n    return torch.zeros(n) + x.sum()\n",
            fixed=_HEADER.replace("import torch\n", "import torch\n\ntorch._dynamo.config.capture_scalar_outputs = True\n")
            + "    n = lengths.max()\n    return torch.zeros(n) + x.sum()\n",
            unsafe=True,
        ),
        Example(
            _HEADER + "    assert lengths.max().item() <= n\n    return x + 1\n",
            fixed=_HEADER + "    assert lengths.max() <= n\n    return x + 1\n",
            unsafe=True,
        ),
        Example(
            _HEADER + "    s = lengths.sum().item()\n    y = x * s\n    return y - s\n",
            fixed=_HEADER + "    s = lengths.sum().detach()\n    y = x * s\n    return y - s\n",
            unsafe=True,
        ),
        Example(
            _HEADER + "    flag = (x > 0).any().item()\n    if flag:\n        x = x + 1\n    return x\n",
            fixed=_HEADER + "    flag = (x > 0).any()\n    x = torch.where(flag, x + 1, x)\n    return x\n",
            unsafe=True,
        ),
        Example(_HEADER + "    flag = (x > 0).any().item()\n    if flag:\n        print(x)\n    return x\n"),
        Example(_HEADER + "    k = int(lengths.max())\n    return x[:, :k]\n"),
        Example(_HEADER + "    s = x.sum().item()\n    return x * s, s\n"),
        # only arrays have `.item()`: a library call's result needs no typing, but no rewrite assumes a tensor
        Example(
            "import torch\nfrom elsewhere import load\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
            "    s = load(x).item()\n    y = x * s\n    return y - s\n"
        ),
        Example(
            "import torch\nfrom torch import nn\n\n\nclass Norm(nn.BatchNorm2d):\n    def forward(self, x):\n"
            "        return x / float(self.num_batches_tracked)\n\n\nmodel = torch.compile(Norm(3))\n"
        ),
        # nothing needs the number itself: the switch traces the sizes (unsafe, process-wide)
        _switched(_HEADER + "    m = lengths.max()\n    h = torch.zeros((x.size(0), m, x.size(2)))\n    return h\n"),
        _switched(_HEADER + "    return torch.arange(lengths.max(), device=x.device) < lengths.unsqueeze(1)\n"),
        _switched(
            "import torch\nimport torch.nn.functional as F\n\n\n@torch.compile\ndef f(x: torch.Tensor, m: torch.Tensor):\n"
            "    h = m.sum()\n    return F.interpolate(x, size=(h, 4)), F.pad(x, (0, x.shape[-1] - h))\n"
        ),
        # torch_scatter's output size: a list the function fills in holds the tensor (GB0033 at the call, measured);
        # no capture switch: Dynamo then fails to build the size from the list (an internal error, measured)
        Example(_HEADER + "    size = list(x.size())\n    size[0] = lengths.max() + 1\n    return torch.zeros(size)\n"),
        # a helper's parameter that every traced call gives a computed tensor is no frame input (SpeechT5)
        _switched(
            "import torch\n\n\ndef grid(n):\n    return torch.arange(n)\n\n\n@torch.compile\n"
            "def f(x: torch.Tensor, lengths: torch.Tensor):\n    return [grid(n) for n in lengths.sum(-1)]\n"
        ),
        # torchaudio's HuBERT spans: a tensor bound of randint is not traced even under the switch (measured)
        Example(_HEADER + "    span = torch.randint(0, lengths.max() - n, size=(1,))\n    return x + span\n"),
        _switched(_HEADER + "    return torch.randint(0, 5, (lengths.sum(),)), torch.randperm(lengths.max())\n"),
        # the tensor check reads its condition back with `.item()`; nothing needs the number
        _switched(_HEADER + "    torch._check_tensor_all_with(ValueError, lengths.sum() == n, lambda: 'bad')\n    return x\n"),
        Example(_HEADER + "    torch._check_tensor_all(lengths > 0)\n    return x[: int(n)] if x.sum().item() > 0 else x\n"),
        _switched(_HEADER + "    total = lengths.sum()\n    return x.new_full((total, 2), 0.5), x.reshape(total, -1)\n"),
        # reshape's shape, topk's k and narrow's length: GB0033, traced under the switch (measured)
        _switched(_HEADER + "    k = lengths.max()\n    return torch.reshape(x, (k, -1)), x.topk(k).values, x.narrow(0, 0, k)\n"),
        # roll's shifts, chunk's count and one_hot's classes: GB0033, and the switch does not trace them (measured)
        Example(
            "import torch\nimport torch.nn.functional as F\n\n\n@torch.compile\ndef f(x: torch.Tensor, m: torch.Tensor):\n"
            "    s = m.sum()\n    return x.roll(s), x.chunk(s)[0], F.one_hot(m.long(), s + 1)\n"
        ),
        Example(_CAPTURE + "    s = x.sum().item()\n    y = x * s\n    if s > 0:\n        y = y + 1\n    return y\n"),
        # under the switch a tensor count still breaks, at a guard on the captured number (measured)
        Example(_CAPTURE + "    s = (x > 0).sum()\n    return x.chunk(s)[0], x.split(s + 1)\n"),
        # PointPillars' anchors: a map size kept in a tensor gives linspace its steps (GB0033; a guard when captured)
        Example(_HEADER + "    size = torch.tensor(list(x.size()[-2:]))\n    return torch.linspace(0, 1, size[1] + 1)\n"),
        Example(_CAPTURE + "    s = (x > 0).sum()\n    return torch.logspace(0, 1, steps=s)\n"),
        # HuBERT's span masks: a range over a tensor element, also under capture_scalar_outputs (measured)
        Example(_HEADER + "    spans = [x[j] + k for j in range(n) for k in range(lengths[j])]\n    return torch.stack(spans)\n"),
        Example(_CAPTURE + "    return [x * i for i in range(1, (x > 0).sum())]\n"),
        # MACE's conditional Huber loss: a factor tensor's item as a Python-number parameter (GB0033, measured)
        Example(
            _HEADER.replace("import torch\n", "import torch\nimport torch.nn.functional as F\n")
            + "    factors = torch.tensor([1.0, 0.7])\n    return F.huber_loss(x, x.flip(0), delta=factors[0])\n"
        ),
        # Qwen2.5-Omni's chunk lengths: a list repeated a computed tensor number of times (GB0033, measured)
        Example(_HEADER + "    chunks = torch.ceil(lengths / 4).long()\n    return torch.tensor([8] * chunks.sum()), '-' * x.argmax()\n"),
        # a tensor bound beside a Python number takes the scalar overload (GB0033, measured), a frame input too
        Example(_HEADER + "    top = x.max()\n    return torch.clamp(x, 0, top), x.clamp(min=0.0, max=lengths)\n"),
        # Deformable-DETR: split sizes computed from the rows of a shapes tensor (GB0033, measured)
        Example(_HEADER + "    return x.split([h * w for h, w in lengths], dim=1)\n"),
        # `math` converts a tensor argument to a Python number (GB0033), also under capture_scalar_outputs
        Example("import math\n" + _HEADER + "    scale = math.sqrt(lengths.sum())\n    return x / scale\n"),
        Example("import math\n" + _CAPTURE + "    if math.isnan(x.sum()):\n        return x\n    return x * math.floor(x.max())\n"),
        # `operator.index` asks for `__index__`, which reads the value back (GB0124); traced under the switch
        Example("import operator\n" + _HEADER + "    k = operator.index(lengths.max())\n    return x * k\n"),
        # printf-style formatting converts the tensor (GB0033 / GB0208 / GB0088), also under capture_scalar_outputs
        Example(_HEADER + "    s = x.sum()\n    return x, 'sum=%.3f' % s, 'max=%s' % x.max(), '%d/%d' % (s.long(), n)\n"),
        Example(_CAPTURE + "    n = (x > 0).sum()\n    return x * len('%(n)d' % {'n': n})\n"),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for call, traced, conversion in ctx.recognised(range_bound, nodes.Call):  # breaks in either mode
            message = (
                f"`range()` over `{snippet(conversion.tensor)}`, a tensor, copies it to a Python int: "
                "graph break and host sync"
            )
            yield ctx.report(call, message, traced, RANGE_BOUND)
        breaks = break_finder(ctx)
        for call, traced, conversion in ctx.recognised(math_conversion, nodes.Call):  # breaks in either mode
            if self._specialised(ctx, breaks, conversion.tensor):
                continue
            message = (
                f"`{conversion.spelling}()` converts `{snippet(conversion.tensor)}`, a tensor, to a Python number: "
                "graph break and host sync"
            )
            yield ctx.report(call, message, traced, MATH_FUNCTION)
        for operation, traced, formatted in ctx.recognised(percent_format, nodes.BinOp):  # breaks in either mode
            if frame_input(ctx.values, formatted.tensor) or breaks.resumed_input(formatted.tensor):
                continue  # a tensor the frame receives: an integer 0-d one may be specialised on, as for `math`
            message = (
                f"`%`-formatting `{snippet(formatted.tensor)}`, a tensor, converts it to a Python number or string: "
                "graph break and host sync"
            )
            yield ctx.report(operation, message, traced, PERCENT_FORMAT)
        for operation, traced, repeated in ctx.recognised(sequence_repetition, nodes.BinOp):  # breaks in either mode
            if self._specialised(ctx, breaks, repeated.tensor):
                continue
            message = (
                f"repeating a Python sequence `{snippet(repeated.tensor)}` times, a tensor, converts it to a Python int: "
                "graph break and host sync"
            )
            yield ctx.report(operation, message, traced, SEQUENCE_REPETITION)
        for call, traced, converted in ctx.recognised(unhandled_builtin, nodes.Call):  # breaks in either mode
            message = (
                f"`{builtin_name(call)}()` of `{snippet(converted.tensor)}`, a tensor, needs its value on the host: "
                "graph break and host sync"
            )
            yield ctx.report(call, message, traced, UNHANDLED_BUILTIN)
        if setting_on(ctx.values, ctx.options, CAPTURE_SCALAR_OUTPUTS):
            yield from self._captured_branches(ctx)
            yield from self._tensor_sizes(ctx, breaks, captured=True)
            return
        for call, traced, conversion in ctx.recognised(scalar_conversion, nodes.Call):
            message = (
                f"{conversion.label} copies `{snippet(conversion.tensor)}` to a Python scalar: graph break and host sync"
            )
            yield ctx.report(call, message, traced, scalar_fix(ctx.analysis, conversion))
        yield from self._tensor_sizes(ctx, breaks, captured=False)
        for call, traced, clamp in ctx.recognised(mixed_clamp_bound, nodes.Call):
            if known_value_tensor(ctx.values, clamp.tensor):
                continue  # Dynamo knows the bound: `torch.tensor(n)` (DeBERTa's attention span)
            message = (
                f"`{snippet(call.func)}` mixes the tensor bound `{snippet(clamp.tensor)}` with the Python number "
                f"`{snippet(clamp.number)}`: the tensor is copied to a Python number, graph break and host sync"
            )
            yield ctx.report(call, message, traced, MIXED_CLAMP)
        for call, traced, check in ctx.recognised(tensor_check, nodes.Call):
            message = (
                f"{check.label} reads the tensor condition `{snippet(check.condition)}` back with `.item()`: "
                "graph break and host sync"
            )
            yield ctx.report(call, message, traced, scalar_capture_fix(ctx.analysis) or TENSOR_CHECK)

    @staticmethod
    def _specialised(ctx: RuleContext, breaks: BreakFinder, tensor: nodes.NodeNG) -> bool:
        """Whether Dynamo knows *tensor*'s value while tracing, so that an in-graph read of it does not break:
        a 0-d tensor the frame (or a resumed frame) receives, which is specialised on when it is an integer
        one (measured), or one made from Python numbers (:mod:`~graphmend_lint.analysis.known_tensors`)."""
        return frame_input(ctx.values, tensor) or breaks.resumed_input(tensor) or known_value_tensor(ctx.values, tensor)

    def _tensor_sizes(self, ctx: RuleContext, breaks: BreakFinder, *, captured: bool) -> Iterator[Diagnostic]:
        """Tensors given as sizes or integer arguments; with *captured* (``capture_scalar_outputs`` on) only
        those that still break there (``chunk``'s and ``split``'s counts, ``one_hot``'s classes)."""
        # a size that is a resumed frame's input traces: not reported (``breaks``)
        for call, traced in ctx.traced_nodes(nodes.Call):
            size = breaks.tensor_size(call)
            if size is None or (captured and not size.breaks_when_captured):
                continue
            copied = (
                "`capture_scalar_outputs` captures it, but Dynamo guards on the count"
                if captured
                else "it is copied to a Python int"
            )
            message = f"`{size.operator}` takes `{snippet(size.tensor)}`, a tensor, as {size.role}: {copied}, graph break and host sync"
            fix = TENSOR_SIZE if size.bound else scalar_capture_fix(ctx.analysis) or TENSOR_SIZE
            yield ctx.report(call, message, traced, fix)

    def _captured_branches(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        """Under ``capture_scalar_outputs``: the branch operands computed from a conversion."""
        def is_capture(node: nodes.NodeNG) -> bool:
            return scalar_conversion(ctx.values, node) is not None

        def origin_of(operand: nodes.NodeNG) -> nodes.NodeNG | None:
            return captured_origin(operand, is_capture)

        return report_captured_branches(
            ctx, origin_of, "a scalar captured from a tensor", CAPTURE_SCALAR_OUTPUTS, CAPTURED_BRANCH
        )
