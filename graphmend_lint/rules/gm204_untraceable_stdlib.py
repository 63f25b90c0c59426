"""GM204: clock, host RNG (``random``, ``np.random``, seeding), ``datetime.now``, ``uuid`` and warning-filter calls
in traced code."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.host_plans import host_plan, module_helper
from graphmend_lint.analysis.random_draws import draw_arithmetic, draw_use
from graphmend_lint.analysis.side_effects import Effect, SideEffect
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.fixes.host_plan_op import host_plan_fix
from graphmend_lint.fixes.side_effect_fix import SideEffectFixes
from graphmend_lint.rules.base import Example
from graphmend_lint.rules.break_sites import break_finder
from graphmend_lint.rules.gb_types import gb_types
from graphmend_lint.rules.gm201_print import SideEffectRule

_WHY = {
    Effect.CLOCK: "Dynamo does not trace the clock",
    Effect.RANDOM: "Dynamo does not trace Python's `random` here",
    Effect.NUMPY_RANDOM: "Dynamo cannot keep this NumPy draw in the graph",
    Effect.NUMPY_GENERATOR: "Dynamo does not support methods of a NumPy random generator",
    Effect.SEED: "Dynamo skips seeding torch's RNG",
    Effect.DATETIME: "Dynamo does not trace the clock",
    Effect.UUID: "`uuid` reads host entropy Dynamo cannot trace",
    Effect.WARNING_FILTER: "Dynamo skips the `warnings` module (inside `with warnings.catch_warnings():` it "
    "then gives up on the whole function)",
    Effect.SKIPPED_HOST: "Dynamo does not trace this host function",
}
#: Draws a helper may make while it fills an array: the helper can run as one opaque op (measured for NumPy's).
_PLAN_DRAWS = frozenset({Effect.NUMPY_RANDOM})
_INSTEAD = {
    Effect.CLOCK: "time outside the compiled function (around the call), or pass the time in as an argument; "
    "on GPU use `torch.cuda.Event(enable_timing=True)`",
    Effect.RANDOM: "use torch's RNG inside compiled code (`torch.rand`, `torch.randint`, `torch.randperm`, "
    "with a `torch.Generator` for reproducibility), or draw the number outside and pass it in",
    Effect.NUMPY_RANDOM: "draw with torch's RNG (`torch.rand(())`, `torch.distributions.Beta(a, b).sample()`, "
    "`torch.randperm`), keeping the value a tensor, or draw outside the compiled function and pass it in",
    Effect.NUMPY_GENERATOR: "draw with torch's RNG and a `torch.Generator` (`torch.randint(n, (), generator=g)`, "
    "`torch.rand((), generator=g)`), or draw outside the compiled function and pass the value in",
    Effect.SEED: "seed once outside the compiled function, or pass a `torch.Generator` to the random ops",
    Effect.DATETIME: "pass the time in as an argument",
    Effect.UUID: "create ids outside the compiled function and pass them in",
    Effect.WARNING_FILTER: "set the warning filter outside the compiled function (around the call, or once at "
    "import)",
    Effect.SKIPPED_HOST: "call it outside the compiled function and pass the result in (a heap or bisect "
    "over a Python list: keep the list sorted outside, or use `torch.topk` / `torch.searchsorted` on a tensor)",
}


_PLAN = (
    "import numpy as np\nimport torch\n\n\ndef plan(shape: tuple[int, int], p: float) -> np.ndarray:\n"
    "    rows, cols = shape\n    mask = np.zeros((rows, cols), dtype=bool)\n    if np.random.rand() < p:\n"
    "        mask[:, 0] = True\n    return mask\n"
)


class UntraceableStdlibCall(SideEffectRule):
    """## What it does
    Flags calls to standard-library functions Dynamo cannot trace, in
    functions that `torch.compile` traces: the clock (`time.time`,
    `time.perf_counter`, `time.monotonic`, ...), Python's `random` module,
    NumPy draws Dynamo cannot keep in the graph (`np.random.rand() < p`,
    `np.random.beta(...)`, `np.random.choice(...)`, `np.random.rand(1).item()`),
    every method of a NumPy random-number object the file builds
    (`rng = np.random.default_rng(seed)` or `np.random.RandomState(seed)`,
    also kept as `self.rng` or as an attribute every assignment of the file
    gives one: `rng.integers(n)`, `self.random_state.beta(a, a)`,
    `embedder.ucg_prng.choice(2, p=...)`; also a parameter every call
    passes one for, and `given or np.random.RandomState()` as Spotlight
    keeps it, with `given` an argument no call in the file shows; GB0156,
    measured),
    seeding torch's RNG (`torch.manual_seed(...)`),
    `datetime.now()`/`utcnow()`/`today()`, `uuid.uuid1()`...`uuid5()` and
    changes of the warning filters (`warnings.simplefilter(...)`,
    `warnings.filterwarnings(...)`, `warnings.resetwarnings()`), typically
    inside `with warnings.catch_warnings():` to silence a deprecation. So
    are host queries and byte utilities of modules Dynamo skips:
    `time.sleep`, `os.getpid`/`getcwd`/`listdir`/`cpu_count`/`urandom`,
    `socket.gethostname`, `getpass.getuser`, `glob.glob`, `gc.collect`,
    `sys.getsizeof`, `pickle`, `json.dumps`/`loads`, `hashlib`, `zlib`
    and `base64` checksums and codecs, and `heapq.heappush`/`heappop`/
    `heapify` and the `bisect` functions that beam and tree searches use on
    Python lists.
    Also flags Python arithmetic on a draw Dynamo does trace
    (`random.uniform(a, b) * area`, `1 - lam`, `-lam`, `lam *= 2` after
    `lam = random.uniform(0, 1)`).

    ## Why is this bad
    Each call ends the graph, runs eagerly and starts a new graph after it:
    the clock, `random.random()`, `random.choice()` and the like are in
    skipped files (GB0007), `datetime.now` is an unsupported method call
    (GB0156), and so is `torch.manual_seed` (GB0007). The warning filters
    live in `warnings`, a module Dynamo skips (GB0007, logged in
    `warnings.py`); inside `with warnings.catch_warnings():` Dynamo cannot
    rebuild the context object at that break and gives up on the whole
    function (GB0092, "Reconstruction failure", at the call; measured,
    torch 2.13). The host queries and byte utilities are skipped
    functions too (GB0007; `json` is GB0156; each measured on torch 2.13),
    while `os.path.join`/`exists`,
    `platform.system()`, `tempfile.gettempdir()`, `copy.copy` of a user
    object and `random.Random(0)` trace and are not flagged. Dynamo traces NumPy as
    torch code, but only the `np.random` functions `torch._numpy` implements:
    any other (`beta`, `permutation`, `default_rng`) is unsupported (GB0294);
    `choice` checks its probabilities with a data-dependent `if`, and a draw
    without a size (`np.random.rand()`, `np.random.uniform(a, b)`) becomes a
    Python number, a data-dependent operator (GB0033), as does `.item()` on a
    sized draw. Measured exceptions: Dynamo traces `random.randint`,
    `random.randrange` and `random.uniform` itself, and `np.random.seed`,
    `np.random.shuffle` and sized draws that stay arrays
    (`np.random.normal(size=3)`), so they are not flagged. But the number
    such a traced draw returns is held in a graph tensor: Python arithmetic
    on it with another Python number (`+ - * / **`, a unary `-`, an
    augmented assignment) has no tracing rule and breaks at the operation
    (GB0213, "unimplemented builtin op on tensor arguments"). Multiplying a
    tensor by the draw (`x * random.uniform(0.8, 1.2)`) stays in the graph,
    so an operand that may be a tensor is not flagged. Python needing the
    draw's value breaks too, and is flagged: a branch on it (`if v > 0`,
    GB0170, at the test), a slice bound or index (`x[:, :v]`, GB0124;
    `x[v]`, GB0033; Vim's random class-token position), `int(v)` /
    `float(v)` (GB0178), `range(v)` (GB4841) and a size (`x.repeat(1, v,
    1)`, `torch.zeros(v, 2)`: GB0033, GFPGAN's style mixing), all measured
    on torch 2.13.
    (GB0170 and GB0124 are the ids of tensor branches and `.item()`, which
    GM101 and GM301 declare; this rule lists only the draw-specific ones.)

    ## Example
    ```python
    @torch.compile
    def step(x):
        start = time.perf_counter()
        y = x.relu()
        return y, time.perf_counter() - start
    ```

    ## Use instead
    ```python
    @torch.compile
    def step(x):
        return x.relu()

    start = time.perf_counter()
    y = step(x)
    elapsed = time.perf_counter() - start
    ```
    For randomness use torch's RNG (`torch.rand`, `torch.randint`, a
    `torch.Generator`), which Dynamo puts in the graph.

    ## Fix safety
    Mostly no automatic fix: the value is used by the computation, and where
    it should come from (an argument, torch's RNG, timing around the call) is
    a design decision. The diagnostic carries a display-only hint.

    One shape gets an **unsafe** fix: a draw inside a *NumPy plan*, a
    module-level helper that fills one array of a shape its parameters give
    (`np.zeros(shape)`) and whose traced callers turn the array into a tensor
    on the next line (`torch.tensor(mask, device=..., dtype=...)`), as
    wav2vec2's SpecAugment does. The fix wraps helper and conversion in a
    `torch.library.custom_op` with a fake that returns
    `torch.empty(shape, ...)`, and calls the op instead. Dynamo keeps the op
    whole; the draws run at run time, in eager's order. Measured on a tiny
    wav2vec2 in training (torch 2.13): 3 logged sites to 0, and the compiled
    output equals eager's with the eager, `aot_eager` and inductor backends,
    where the unfixed model's compiled output did not (its breaks do not
    replay NumPy's draws as eager makes them). Unsafe because the op is
    registered process-wide (under a name made from the module's
    `__name__`), the annotations it writes (`X | None`) need Python 3.10
    unless the module spells optionals with `Optional`, and compiled runs now
    draw as eager does. It is offered only when every parameter has an
    annotation an op schema can state (ints, floats, bools, strings, int
    sequences, tensors, each possibly optional) and every traced call has the
    two-line form; otherwise the hint stays.
    """

    code = "GM204"
    name = "untraceable-stdlib-call"
    summary = "clock, host RNG, `datetime.now`, `uuid`, warning-filter or skipped host call in compiled code splits the graph"
    dynamo_gb = gb_types("GB0007", "GB0156", "GB0033", "GB0294", "GB0213", "GB0092", "GB0178", "GB4841")
    effects = frozenset(_WHY)
    valid = (
        # an object with a `choice` method that is no NumPy generator
        "import torch\n\nclass Pick:\n    def choice(self, n):\n        return n - 1\n\nrng = Pick()\n\n"
        "@torch.compile\ndef f(x):\n    return x * rng.choice(3)\n",
        "import random\nimport torch\n\n@torch.compile\ndef f(x):\n    return x * random.randint(1, 3)\n",
        "import random\nimport torch\n\n@torch.compile\ndef f(x):\n    lam = random.uniform(0, 1)\n    return x * lam\n",
        "import random\nimport torch\n\nLAM = random.uniform(0, 1)\n\n@torch.compile\ndef f(x):\n    return x * (1 - LAM)\n",
        "import random\nimport torch\n\n@torch.compile\ndef f(x, img):\n    return x + img * random.uniform(0.8, 1.2)\n",
        "import time\nimport torch\n\ndef f(x):\n    return x * time.time()\n",
        "import os\nimport platform\nimport torch\n\n@torch.compile\ndef f(x):\n"
        "    return x * len(os.path.join('a', platform.system()))\n",
        "import torch\n\n@torch.compile\ndef f(x, time):\n    return x * time.time()\n",
        "import numpy as np\nimport torch\n\n@torch.compile\ndef f(x):\n    np.random.seed(0)\n"
        "    return x * torch.from_numpy(np.random.normal(size=3))\n",
    )
    invalid = (
        # Spotlight's sampler: the generator a model keeps, handed to a helper (GB0156, measured)
        Example(
            "import numpy as np\nimport torch\n\n\ndef sample(n, random_state):\n"
            "    return random_state.randint(0, n, (2,))\n\n\nclass Model(torch.nn.Module):\n"
            "    def __init__(self, random_state=None):\n        super().__init__()\n"
            "        self._random_state = random_state or np.random.RandomState()\n\n    def forward(self, x):\n"
            "        return x + torch.from_numpy(sample(5, self._random_state))\n\n\nmodel = torch.compile(Model())\n"
        ),
        # a NumPy generator's methods (GB0156, measured)
        Example(
            "import numpy as np\nimport torch\n\nrng = np.random.default_rng(0)\n\n@torch.compile\ndef f(x):\n"
            "    return x * rng.random()\n"
        ),
        # a traced draw Python needs the value of: a branch, a slice bound, int() (measured, GB0170/GB0124/GB0178)
        Example(
            "import random\nimport torch\n\n@torch.compile\ndef f(x):\n    p = random.randint(0, x.shape[0])\n"
            "    if p > 1:\n        x = x * 2\n    return x[:p], int(random.uniform(0, 4))\n"
        ),
        # a traced draw as a size (measured, GB0033)
        Example(
            "import random\nimport torch\n\n@torch.compile\ndef f(x: torch.Tensor):\n    k = random.randint(1, 3)\n"
            "    return x.unsqueeze(1).repeat(1, k, 1), torch.zeros(k, 2)\n"
        ),
        Example("import time\nimport torch\n\n@torch.compile\ndef f(x):\n    t = time.perf_counter()\n    return x * 2, t\n"),
        Example("from random import random\nimport torch\n\n@torch.compile\ndef f(x):\n    return x * random()\n"),
        Example("from datetime import datetime\nimport torch\n\n@torch.compile\ndef f(x):\n    return x, datetime.now()\n"),
        Example("import uuid\nimport torch\n\n@torch.compile\ndef f(x):\n    return x, uuid.uuid4()\n"),
        Example("import heapq\nimport torch\n\n@torch.compile\ndef f(x, beams: list):\n"
                "    heapq.heappush(beams, (1.0, 0))\n    return x * len(beams)\n"),
        Example("import os\nimport torch\n\n@torch.compile\ndef f(x):\n    return x * (os.getpid() % 2)\n"),
        Example("import warnings\nimport torch\n\n@torch.compile\ndef f(x):\n    with warnings.catch_warnings():\n"
                "        warnings.simplefilter('ignore')\n        return torch.meshgrid(x, x)\n"),
        Example("import random\nimport torch\n\n@torch.compile\ndef f(x):\n    area = x.shape[0] * x.shape[1]\n"
                "    target = random.uniform(0.02, 0.3) * area\n    return x[: int(target)]\n"),
        Example("import random\nimport torch\n\n@torch.compile\ndef f(x, y):\n    lam = random.uniform(0, 1)\n"
                "    return x * lam + y * (1 - lam)\n"),
        Example("import numpy as np\nimport torch\n\n@torch.compile\ndef f(x):\n"
                "    if np.random.rand() < 0.5:\n        x = x.flip(0)\n    return x\n"),
        Example("import torch\n\n@torch.compile\ndef f(x, seed: int):\n    torch.manual_seed(seed)\n"
                "    return x + torch.rand_like(x)\n"),
        # a NumPy plan of known shape, made a tensor at once (wav2vec2's SpecAugment): one custom op (unsafe)
        Example(
            _PLAN + "\n\n@torch.compile\ndef f(x):\n    m = plan(x.shape, 0.5)\n    m = torch.tensor(m, dtype=torch.bool)\n"
            "    return x.masked_fill(m, 0)\n",
            fixed=_PLAN
            + '\n\n@torch.library.custom_op("graphmend::" + __name__.replace(".", "_").strip("_") + "_plan", mutates_args=())\n'
            "def _plan_on_host(shape: list[int], p: float, *, device: torch.device | None, dtype: torch.dtype) -> torch.Tensor:\n"
            '    """`plan` as one graph op: Dynamo keeps it whole, and its NumPy draws run at run time."""\n'
            "    array = plan(tuple(shape), p)\n    return torch.tensor(array, device=device, dtype=dtype)\n\n\n"
            "@_plan_on_host.register_fake\ndef _plan_on_host_fake(shape, p, *, device, dtype):\n"
            "    rows, cols = shape\n    return torch.empty((rows, cols), device=device, dtype=dtype)\n"
            "\n\n@torch.compile\ndef f(x):\n    m = _plan_on_host(x.shape, 0.5, device=None, dtype=torch.bool)\n"
            "    return x.masked_fill(m, 0)\n",
            unsafe=True,
        ),
    )

    def message(self, effect: SideEffect) -> str:
        return f"`{effect.label}` in compiled code causes a graph break: {_WHY[effect.effect]}"

    def fix(self, call: nodes.Call, effect: SideEffect, fixes: SideEffectFixes) -> Fix | None:
        helper = module_helper(call) if effect.effect in _PLAN_DRAWS else None
        plan = None if helper is None else host_plan(fixes.analysis, helper)
        fix = None if plan is None else host_plan_fix(fixes.analysis, plan)
        return fix or Fix.advice(f"no source fix: {_INSTEAD[effect.effect]}")

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        yield from super().check(ctx)
        for node, traced, found in ctx.recognised(draw_arithmetic, nodes.BinOp, nodes.UnaryOp, nodes.AugAssign):
            yield ctx.report(
                node,
                f"Python arithmetic on the `{found.label}` draw causes a graph break: Dynamo holds the draw "
                "in a tensor and cannot apply a Python operator to it and a plain number",
                traced,
                Fix.advice(f"no source fix: {_INSTEAD[Effect.RANDOM]}"),
            )
        breaks = break_finder(ctx)
        for node, traced, use in ctx.recognised(draw_use, nodes.If, nodes.While, nodes.IfExp, nodes.Subscript, nodes.Call):
            if breaks.resumed_input(use.operand):
                continue  # a frame resumed after a break receives the draw as a plain int (measured: no break)
            yield ctx.report(
                node.test if isinstance(node, (nodes.If, nodes.While, nodes.IfExp)) else node,
                f"the `{use.label}` draw used as {use.what} causes a graph break: Dynamo holds the draw in a "
                "tensor, and Python needs its value here",
                traced,
                Fix.advice(f"no source fix: {_INSTEAD[Effect.RANDOM]}"),
            )
