"""The value-kind oracle on a table of expressions (TENSOR / STATIC / UNKNOWN)."""

from __future__ import annotations

import pytest
from astroid import nodes
from value_probes import file_analysis, kinds_of

from graphmend_lint import lint_source
from graphmend_lint.analysis.values import Kind

T, S, U = Kind.TENSOR, Kind.STATIC, Kind.UNKNOWN

PRELUDE = """
import math
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd import Variable


def helper_tensor(x):
    return x * 2


def helper_static(n):
    return n + 1


class Block(nn.Module):
    def forward(self, x):
        return x


class Net(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.block = Block()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
        self.weight = nn.Parameter(torch.ones(4))
        self.register_buffer("scale", torch.ones(1))
        self.config = config
        self.threshold = 0.5
        self.name = "net"

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None, n: int = 3, flag: bool = False,
                mode: str = "mean", use_cache=True, hidden=None, *, eps: float = 1e-5):
        h = self.proj(x)
        s = x.sum()
        a, b = x.chunk(2)
        k = x.shape[0]
        flag_t = s > 0
        y = x
        y += 1
        q = helper_tensor(x)
        r = helper_static(3)
        for row in x:
            pass
        for i in range(n):
            pass
        for j, layer in enumerate(self.layers):
            pass
"""

CASES: list[tuple[str, Kind]] = [
    # torch calls and functional
    ("torch.randn(3)", T), ("torch.zeros_like(x)", T), ("torch.where(x > 0, x, 0)", T), ("torch.cat([x, x])", T),
    ("F.relu(x)", T), ("F.softmax(x, dim=-1)", T), ("torch.nn.functional.gelu(x)", T), ("torch.tensor([1.0])", T),
    ("torch.any(x > 0)", T), ("torch.isnan(x)", T), ("torch.max(x)", T), ("torch.arange(4)", T),
    ("torch.LongTensor([1])", T), ("Variable(x.data.new(3).normal_())", T), ("torch.autograd.Variable(x)", T),
    # tensor methods
    ("x.sum()", T), ("x.any()", T), ("x.max()", T), ("x.mean(-1)", T), ("x.relu()", T), ("x.float()", T),
    ("x.to(torch.float16)", T), ("x.view(-1)", T), ("x.abs().max()", T), ("x.clone()", T), ("x.norm()", T),
    # arithmetic and comparisons with a tensor
    ("x + 1", T), ("1 - x", T), ("x * s", T), ("-x", T), ("x > 0", T), ("x.sum() > 0", T), ("s > 0.5", T),
    ("x @ x", T), ("(x > 0) & (x < 1)", T), ("x ** 2", T), ("s > self.threshold", T),
    # indexing
    ("x[0]", T), ("x[:, 0]", T), ("x[0] > 0", T),
    # modules, parameters, buffers
    ("self.proj(x)", T), ("self.block(x)", T), ("self.layers[0](x)", T), ("self.weight", T), ("self.scale", T),
    ("layer(x)", T), ("h", T), ("h.mean()", T),
    # parameters and locals
    ("x", T), ("s", T), ("a", T), ("b", T), ("flag_t", T), ("y", T), ("row", T), ("q", T), ("mask", T),
    # metadata Dynamo specialises on
    ("x.shape", S), ("x.shape[0]", S), ("x.size()", S), ("x.size(-1)", S), ("x.dim()", S), ("x.ndim", S),
    ("x.numel()", S), ("x.dtype", S), ("x.device", S), ("x.requires_grad", S), ("x.is_cuda", S), ("len(x)", S),
    ("isinstance(x, torch.Tensor)", S), ("mask is None", S), ("mask is not None", S), ("self.training", S),
    ("self.config.use_cache", S), ("self.config.hidden_size * 2", S), ("k", S), ("k > 2", S), ("x.shape[0] > 1", S),
    ("x.size(-1) % 2", S), ("x.dim() == 3", S), ("x.dtype == torch.float16", S), ("x.numel() == 0", S),
    ("len(x) > 3", S), ("hasattr(self, 'cache')", S),
    # Python values
    ("3", S), ("'mean'", S), ("n", S), ("flag", S), ("mode", S), ("mode == 'mean'", S), ("n + 1", S), ("i", S),
    ("j", S), ("eps", S), ("use_cache", S), ("r", S), ("math.pi", S), ("torch.float32", S), ("self.threshold", S),
    ("[1, 2]", S), ("(x, x)", S), ("n > 2 and flag", S), ("self.name", S),
    # unknown: host conversions and things the linter can't know
    ("x.item()", U), ("int(x.sum())", U), ("x.tolist()", U), ("hidden", U), ("np.sum([1, 2])", U),
    ("unknown_function(x)", U), ("self.config", S),
]


@pytest.fixture(scope="module")
def classified() -> dict[str, Kind]:
    body = "".join(f"        _v{index} = {expression}\n" for index, (expression, _) in enumerate(CASES))
    source = PRELUDE + body + "        return h\n\n\nmodel = torch.compile(Net(None))\n"
    analysis = file_analysis(source, "values_table")
    kinds: dict[str, Kind] = {}
    for assign in analysis.module.nodes_of_class(nodes.Assign):
        target = assign.targets[0]
        if isinstance(target, nodes.AssignName) and target.name.startswith("_v"):
            kinds[CASES[int(target.name[2:])][0]] = analysis.values.kind(assign.value)
    return kinds


def test_table_is_large() -> None:
    assert len(CASES) >= 80


@pytest.mark.parametrize(("expression", "expected"), CASES, ids=[c[0] for c in CASES])
def test_expression_kind(classified: dict[str, Kind], expression: str, expected: Kind) -> None:
    assert classified[expression] is expected


# -- issue 14 §2: typing through real code --------------------------------------------------------------------



def test_arithmetic_over_parameters_then_a_tensor_method_types_the_parameters() -> None:
    kinds = kinds_of(
        "import torch\n"
        "@torch.compile\n"
        "def loss_fn(pred, target, weight, mode):\n"
        "    loss = ((pred - target) ** 2).mean()\n"
        "    scaled = -(weight * 2 + 1).sum()\n"
        "    name = (mode + '_suffix').upper()\n"
        "    probe(loss, pred, target, scaled, mode, name)\n"
        "    return loss\n"
    )
    assert kinds == {"loss": T, "pred": T, "target": T, "scaled": T, "mode": U, "name": U}



def test_multi_axis_indexing_torch_op_inputs_and_joined_lists_are_tensor_evidence() -> None:
    """Deformable-DETR's ``(shapes[:, 0] * shapes[:, 1]).sum()``, stable-audio's ``torch.sin(t * math.pi / 2)``
    and ``torch.cat([t, t])``: only arrays take those; a plain index or a factory's size says nothing."""
    kinds = kinds_of(
        "import math\n"
        "import torch\n"
        "@torch.compile\n"
        "def f(shapes, t, u, rows, n, m):\n"
        "    total = (shapes[:, 0] * shapes[:, 1]).sum()\n"
        "    sigma = torch.sin(t * math.pi / 2)\n"
        "    both = torch.cat([u, u], dim=0)\n"
        "    first = rows[0]\n"
        "    z = torch.zeros(n * 2)\n"
        "    probe(shapes, t, u, rows, n, m)\n"
        "    return total, sigma, both, first, z, m\n"
    )
    assert kinds == {"shapes": T, "t": T, "u": T, "rows": U, "n": U, "m": U}


def test_a_tensors_type_name_is_a_python_string() -> None:
    """WaveGlow's ``if z.type() == 'torch.cuda.HalfTensor'``: ``t.type()`` with no argument names the type."""
    kinds = kinds_of(
        "import torch\n"
        "@torch.compile\n"
        "def f(z: torch.Tensor):\n"
        "    name = z.type()\n"
        "    cast = z.type(torch.float16)\n"
        "    probe(name, cast)\n"
        "    return cast\n"
    )
    assert kinds == {"name": S, "cast": T}


def test_nested_unpacking_types_each_name() -> None:
    """YOLOv5's ``bbox_iou``: ``(x1, y1, w1, h1), (x2, ...) = box1.chunk(4, -1), box2.chunk(4, -1)``."""
    kinds = kinds_of(
        "import torch\n"
        "def helper(t):\n"
        "    return (t, t.shape[0]), 'name'\n"
        "@torch.compile\n"
        "def iou(box1, box2: torch.Tensor, shape):\n"
        "    (x1, y1), (x2, y2) = box1.chunk(2, -1), box2.chunk(2, -1)\n"
        "    (b, h), (left, right) = box2.shape[:2], shape\n"
        "    (t, n), label = helper(box2)\n"
        "    probe(x1, y2, b, left, t, n, label)\n"
        "    return x1\n"
    )
    assert kinds == {"x1": T, "y2": T, "b": S, "left": U, "t": T, "n": S, "label": S}


def test_names_unpacked_from_a_comprehension_take_its_element_kind() -> None:
    """Qwen3-Next's ``query, key = [x.reshape(...) for x in (query, key)]``."""
    kinds = kinds_of(
        "import torch\n"
        "@torch.compile\n"
        "def f(q: torch.Tensor, k: torch.Tensor, n: int, items):\n"
        "    a, b = [x.reshape(2, -1) for x in (q, k)]\n"
        "    c, d = (x * 2 for x in (q, k))\n"
        "    e, g = [n + i for i in range(2)]\n"
        "    h, j = [item for item in items]\n"
        "    probe(a, b, c, d, e, g, h)\n"
        "    return a\n"
    )
    assert kinds == {"a": T, "b": T, "c": T, "d": T, "e": S, "g": S, "h": U}


def test_methods_of_instances_of_this_files_classes_return_their_kinds() -> None:
    """guided-diffusion's ``t, weights = self.schedule_sampler.sample(...)``, ``sample`` inherited from the base."""
    kinds = kinds_of(
        "import torch\n"
        "class Sampler:\n"
        "    def sample(self, n):\n"
        "        w = torch.ones(n)\n"
        "        return w.long(), w\n"
        "class Uniform(Sampler):\n"
        "    def count(self):\n"
        "        return 3\n"
        "class Other:\n"
        "    def sample(self, n):\n"
        "        return [n], n\n"
        "class Loop:\n"
        "    def __init__(self, flag):\n"
        "        self.sampler = Uniform()\n"
        "        self.either = Uniform() if flag else Other()\n"
        "    def step(self, x):\n"
        "        t, w = self.sampler.sample(3)\n"
        "        local = Uniform()\n"
        "        n = local.count()\n"
        "        a, b = self.either.sample(3)\n"
        "        probe(t, w, n, a, b)\n"
        "        return x\n"
        "step = torch.compile(Loop(True).step)\n"
    )
    assert kinds == {"t": T, "w": T, "n": S, "a": U, "b": U}


def test_an_isinstance_tensor_branch_makes_the_name_a_tensor_there() -> None:
    """transformers' ``torch_compilable_check``: ``if isinstance(cond, torch.Tensor): torch._check_tensor_all(cond)``."""
    kinds = kinds_of(
        "import torch\n"
        "@torch.compile\n"
        "def check(cond, other, flag):\n"
        "    if flag and isinstance(cond, torch.Tensor):\n"
        "        probe(cond)\n"
        "    else:\n"
        "        probe(cond * 1)\n"
        "    if isinstance(other, torch.Tensor):\n"
        "        other = other.tolist()\n"
        "        probe(other)\n"
        "    return flag\n"
    )
    assert kinds["cond"] is T  # the branch's test says so
    assert kinds["cond * 1"] is U  # the else branch says nothing
    assert kinds["other"] is not T  # rebound inside the branch: the test no longer holds


def test_a_failed_tensor_test_makes_the_name_no_tensor_where_it_decides() -> None:
    """pytorch-metric-learning's ``(not torch.is_tensor(losses)) and (losses == 0)``: a Python comparison."""
    kinds = kinds_of(
        "import torch\n"
        "@torch.compile\n"
        "def f(losses: torch.Tensor, x: torch.Tensor, y, z: torch.Tensor, w: torch.Tensor):\n"
        "    a = (not torch.is_tensor(losses)) and probe(losses)\n"
        "    b = torch.is_tensor(x) or probe(x)\n"
        "    if not isinstance(z, torch.Tensor):\n"
        "        probe(z)\n"
        "    if torch.is_tensor(y):\n"
        "        probe(y)\n"
        "    if isinstance(w, torch.Tensor) and a:\n"
        "        pass\n"
        "    else:\n"
        "        probe(w)  # a tensor when only ``a`` failed\n"
        "    return a\n"
    )
    assert kinds == {"losses": U, "x": U, "z": U, "y": T, "w": T}


def test_a_parameter_filled_in_when_a_call_passes_none_is_a_tensor_on_that_path() -> None:
    """VITS' ``sequence_mask(y_lengths, None)`` fills ``max_length = length.max()``; other calls pass ints."""
    kinds = kinds_of(
        "import torch\n"
        "def sequence_mask(length: torch.Tensor, max_length=None):\n"
        "    if max_length is None:\n"
        "        max_length = length.max()\n"
        "    probe(max_length)\n"
        "    return torch.arange(max_length) < length.unsqueeze(1)\n"
        "def never_none(length: torch.Tensor, size=None):\n"
        "    if size is None:\n"
        "        size = length.max()\n"
        "    probe(size)\n"
        "    return size\n"
        "@torch.compile\n"
        "def f(x: torch.Tensor, lengths: torch.Tensor):\n"
        "    return sequence_mask(lengths, x.size(1)), sequence_mask(lengths, None), never_none(lengths, 3)\n"
    )
    # ``never_none``'s only call passes 3: its ``is None`` branch never runs, so ``size`` is that int
    assert kinds == {"max_length": T, "size": S}


def test_an_isinstance_tensor_branch_nothing_can_take_narrows_nothing() -> None:
    """Every binding is a Python value (diffusers' KVAE ``time_factor``), or a parameter's Python default no call
    replaces with a tensor (torchaudio's ``mask_value=0.0``): the branch is dead, Dynamo skips it."""
    kinds = kinds_of(
        "import torch\nfrom torch import nn\n"
        "def fill(t, value=0.0, other=0.0):\n"
        "    if isinstance(value, torch.Tensor):\n"
        "        probe(value)\n"
        "    if isinstance(other, torch.Tensor):\n"
        "        probe(other + 0)\n"
        "    factor = 1.0 + 1.0 * (t.size(0) > 1)\n"
        "    if isinstance(factor, torch.Tensor):\n"
        "        probe(factor)\n"
        "    return t\n"
        "class Mask(nn.Module):\n"
        "    def forward(self, x, mask_value=0.0):\n"
        "        return probe(mask_value * 1) if isinstance(mask_value, torch.Tensor) else x\n"
        "@torch.compile\n"
        "def f(x: torch.Tensor):\n"
        "    return fill(x, other=x * 2) + Mask()(x)\n"
    )
    assert kinds["value"] is not T and kinds["factor"] is not T and kinds["mask_value * 1"] is not T
    assert kinds["other + 0"] is T  # a call passes a tensor: the branch runs


def test_a_tensor_annotation_beside_a_python_default_is_no_evidence() -> None:
    """FastSpeech2-Conformer's ``output_attentions: torch.Tensor | None = False``: a flag unless calls pass tensors."""
    kinds = kinds_of(
        "import torch\n"
        "def attend(x, output_attentions: torch.Tensor | None = False, mask: torch.Tensor = None):\n"
        "    probe(output_attentions, mask)\n"
        "    return x\n"
        "def gate(x, flag: torch.Tensor = False):\n"
        "    probe(flag)\n"
        "    return x\n"
        "@torch.compile\n"
        "def f(x: torch.Tensor):\n"
        "    return attend(x) + gate(x, x > 0)\n"
    )
    assert kinds["output_attentions"] is U and kinds["mask"] is T
    assert kinds["flag"] is T  # every call passes a tensor


def test_annotations_are_read_through_the_imports() -> None:
    """guided-diffusion's ``def backward(self, loss: th.Tensor)`` with ``import torch as th``, and jaxtyping."""
    kinds = kinds_of(
        "import torch as th\n"
        "from jaxtyping import Bool, Float\n"
        "def backward(loss: th.Tensor, scale: 'th.Tensor | None', m: Bool[th.Tensor, 'b'], w: Float[list, 'b']):\n"
        "    probe(loss, scale, m, w)\n"
        "    return loss\n"
        "@th.compile\n"
        "def f(x):\n"
        "    return backward(x.sum(), None, x > 0, [1.0])\n"
    )
    assert kinds == {"loss": T, "scale": T, "m": T, "w": U}


def test_type_queries_and_self_updates_are_no_evidence_for_a_parameter() -> None:
    """``torch.is_tensor(scale)`` asks because ``scale`` may be a number; ``x = x * scale`` makes ``x`` a tensor
    because ``x`` was one. Neither says ``scale`` is a tensor (a Python float in the forwards that do this)."""
    kinds = kinds_of(
        "import torch\nfrom torch import nn\n"
        "class Scale(nn.Module):\n"
        "    def forward(self, x, scale=None, shift=None):\n"
        "        if torch.is_tensor(scale):\n"
        "            x = x * 2\n"
        "        if scale is not None:\n"
        "            x = x * scale\n"
        "        y = x + shift\n"
        "        probe(scale, shift)\n"
        "        return y.sum()\n"
        "model = torch.compile(Scale())\n"
    )
    assert kinds["scale"] is U
    assert kinds["shift"] is T  # ``y = x + shift`` then ``y.sum()``: the evidence the rule keeps


def test_a_slice_keeps_its_container_type_so_slice_arithmetic_is_evidence() -> None:
    kinds = kinds_of(
        "import torch\n"
        "@torch.compile\n"
        "def chunks(x, cu_seqlens, items):\n"
        "    lengths = cu_seqlens[1:] - cu_seqlens[:-1]\n"
        "    first = items[0].sum()\n"
        "    probe(cu_seqlens, lengths.tolist(), items)\n"
        "    return x\n"
    )
    # ``items[0].sum()`` says the elements are tensors, not the container: it stays unknown
    assert kinds["cu_seqlens"] is T and kinds["items"] is U



def test_nested_loop_targets_walk_enumerate_and_zip() -> None:
    kinds = kinds_of(
        "import torch\n"
        "@torch.compile\n"
        "def rows(x: torch.Tensor, d: torch.Tensor, names):\n"
        "    for i, (row, count) in enumerate(zip(x, d)):\n"
        "        for j, (name, (a, b)) in enumerate(zip(names, x)):\n"
        "            probe(i, row, count, j, name, a)\n"
        "    return x\n"
    )
    assert kinds == {"i": S, "row": T, "count": T, "j": S, "name": U, "a": T}


HELPERS = """
import torch
from torch import nn
from elsewhere import unknown_tuple


def split(x: torch.Tensor):
    return x.shape[0], x * 2, "label"


class Model(nn.Module):
    def _pad(self, ids: torch.Tensor, mask: torch.Tensor, pad: int):
        length = ids.shape[-1] + pad
        if pad > 0:
            mask = nn.functional.pad(mask, (0, pad))
        return length, ids, mask

    def forward(self, ids: torch.Tensor, mask: torch.Tensor):
        length, ids, mask = self._pad(ids, mask, 3)
        n, doubled, label = split(ids)
        a, unknown = unknown_tuple(ids)
        probe(length, ids, mask, doubled, label, unknown)
        probe(self._pad(ids, mask, 1)[2], (mask, 3)[0], (mask, 3)[1])
        probe(unknown_tuple(ids)[:, 0], unknown_tuple(ids)[..., None], unknown_tuple(ids)[0])
        return ids


model = torch.compile(Model())
"""


def test_values_returned_through_tuples_keep_their_kinds() -> None:
    kinds = kinds_of(HELPERS)
    assert kinds == {
        "length": S, "ids": T, "mask": T, "doubled": T, "label": S, "unknown": U,
        "self._pad(ids, mask, 1)[2]": T, "(mask, 3)[0]": T, "(mask, 3)[1]": S,
        "unknown_tuple(ids)[:, 0]": T, "unknown_tuple(ids)[..., None]": T, "unknown_tuple(ids)[0]": U,
    }  # fmt: skip


SUBMODULE_TUPLE = """
import torch
from torch import nn


class Rope(nn.Module):
    def forward(self, hidden: torch.Tensor, mask: torch.Tensor):
        lengths = mask.sum(dim=1).tolist()
        total = [n + 4 for n in lengths]
        return hidden * 2, lengths, total


class Attention(nn.Module):
    def forward(self, hidden: torch.Tensor):
        return hidden @ hidden.T, hidden.softmax(-1)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rope = Rope()
        self.attention = Attention()
        self.linear = nn.Linear(4, 4)

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor):
        rotated, lengths, total = self.rope(hidden, mask)
        scores, weights = self.attention(hidden)
        first, second = self.linear(hidden)
        probe(rotated, lengths, total, max(total), scores, weights, first, second)
        return rotated


model = torch.compile(Model())
"""


def test_a_submodule_call_unpacks_into_what_its_forward_returns() -> None:
    """Lumina2's ``hidden, cap_lens, seq_lens = self.rope_embedder(...)``: the lengths are Python lists, not tensors."""
    kinds = kinds_of(SUBMODULE_TUPLE)
    assert kinds == {
        "rotated": T, "lengths": U, "total": U, "max(total)": U, "scores": T, "weights": T,
        "first": T, "second": T,  # a torch module's output: rows of a tensor
    }  # fmt: skip


def test_call_sites_that_only_say_unknown_leave_the_body_evidence_in_charge() -> None:
    source = (
        "import torch\n"
        "def g(t, n):\n"
        "    probe(t, n)\n"
        "    if t.sum() > n:\n"
        "        return t + 1\n"
        "    return t\n"
        "@torch.compile\n"
        "def f(x, y):\n"
        "    return g(x, y) + g(x, 3)\n"
    )
    kinds = kinds_of(source)
    assert kinds["t"] is T  # both call sites pass f's unknown ``x``; ``t.sum()`` says tensor
    assert kinds["n"] is U  # one call site passes a Python int: stays quiet


def test_a_tensor_only_method_makes_its_result_a_tensor() -> None:
    kinds = kinds_of(
        "import torch\n"
        "from elsewhere import make_mask, load\n"
        "@torch.compile\n"
        "def f(x, model, text):\n"
        "    probe(make_mask(x).masked_fill(x > 0, 0), make_mask(x).any(), make_mask(x).item())\n"
        "    probe(model.to('cpu'), model.float(), load().split(','), load().copy(), text.upper())\n"
        "    return x\n"
    )
    assert kinds == {
        "make_mask(x).masked_fill(x > 0, 0)": T, "make_mask(x).any()": T, "make_mask(x).item()": U,
        "model.to('cpu')": U, "model.float()": U, "load().split(',')": U, "load().copy()": U, "text.upper()": U,
    }  # fmt: skip


def test_distribution_draws_are_tensors() -> None:
    kinds = kinds_of(
        "import torch\n"
        "from torch import nn\n"
        "class Mix(nn.Module):\n"
        "    def __init__(self, alpha: float):\n"
        "        super().__init__()\n"
        "        self._dist = torch.distributions.Beta(torch.tensor([alpha]), torch.tensor([alpha]))\n"
        "        self.other = make_sampler()\n"
        "    def forward(self, x):\n"
        "        normal = torch.distributions.Normal(0.0, 1.0)\n"
        "        probe(self._dist.sample(()), normal.rsample(), self.other.sample(()))\n"
        "        return x\n"
        "model = torch.compile(Mix(1.0))\n"
    )
    assert kinds == {"self._dist.sample(())": T, "normal.rsample()": T, "self.other.sample(())": U}


def test_a_name_that_is_a_tensor_on_some_paths_and_an_untyped_parameter_on_the_others() -> None:
    """diffusers' LCM ``prev_timestep``: a schedule entry, or the timestep nothing else types."""
    kinds = kinds_of(
        "import torch\n"
        "def step(schedule, timestep, i, n):\n"
        "    if i < n:\n"
        "        prev = schedule[i].sum()\n"
        "    else:\n"
        "        prev = timestep\n"
        "    listed = prev if i else prev.tolist()\n"
        "    probe(prev)\n"
        "    return prev\n"
        "def size(length, max_length=None, given=None):\n"
        "    if max_length is None:\n"
        "        max_length = length.max()\n"
        "    if given is None:\n"
        "        given = length.max()\n"
        "    probe(max_length, given)\n"
        "    return max_length\n"
        "@torch.compile\n"
        "def f(x, t, i):\n"
        "    return step(x, t, i, 3) + size(x) + size(x, given=x.shape[0])\n"
    )
    assert kinds["prev"] is T
    assert kinds["max_length"] is T  # no call passes it: None, then the tensor
    # one call passes a Python int, but the other leaves the None default: on that call it is the tensor
    assert kinds["given"] is T


def test_a_python_value_or_a_conversion_beside_the_tensor_keeps_the_name_unknown() -> None:
    kinds = kinds_of(
        "import torch\n"
        "def unpad(x, size, flag):\n"
        "    if flag:\n"
        "        size = size.tolist()\n"
        "    extra = 0\n"
        "    if x.shape[0] > 2:\n"
        "        extra = x.sum()\n"
        "    probe(size, extra)\n"
        "    return x\n"
        "@torch.compile\n"
        "def f(x, s):\n"
        "    return unpad(x, s, True)\n"
    )
    assert kinds == {"size": U, "extra": U}


def test_a_literal_gives_way_to_a_tensor_assigned_on_every_turn_of_the_loop() -> None:
    """transformers' ``this_peer_finished = False`` ... ``this_peer_finished = unfinished.max() == 0``."""
    kinds = kinds_of(
        "import torch\n"
        "@torch.compile\n"
        "def f(x):\n"
        "    done = False\n"
        "    seen = False\n"
        "    while probe(done):\n"
        "        x = x + 1\n"
        "        done = (x > 3).all()\n"
        "        if x.shape[0] > 1:\n"
        "            seen = x.any()\n"
        "        probe(seen)\n"
        "    for row in probe(done is None):\n"
        "        done = row.all()\n"
        "    return x\n"
    )
    assert kinds["done"] is T  # the while test sees the tensor from the second turn on
    assert kinds["seen"] is U  # assigned only on some turns


def test_adding_a_value_of_unknown_kind_to_a_python_number_gives_an_unknown_kind() -> None:
    """Bayesian-CNN's ``kl = 0.0`` then ``kl += _kl`` for each model output: ``kl`` is a tensor after the loop,
    so its ``kl.item()`` breaks; adding a Python number keeps a number, and adding to a tensor keeps a tensor."""
    kinds = kinds_of(
        "import torch\n"
        "@torch.compile\n"
        "def f(net, x, n=1):\n"
        "    kl = 0.0\n"
        "    count = 0\n"
        "    acc = torch.zeros(2)\n"
        "    for _ in range(n):\n"
        "        out, part = net(x)\n"
        "        kl += part\n"
        "        count += 1\n"
        "        acc += part\n"
        "    probe(kl, kl / n, count, acc)\n"
        "    return out\n"
    )
    assert kinds == {"kl": U, "kl / n": U, "count": S, "acc": T}


def test_an_attribute_assigned_again_in_init_s_own_body_holds_the_last_value() -> None:
    """Beta-VAE's solver: ``self.C_max = args.C_max`` and then ``self.C_max = Variable(torch.FloatTensor(
    [self.C_max]))``; an instance only ever holds the tensor. One reassigned under an ``if`` may not run."""
    kinds = kinds_of(
        "import torch\n"
        "from torch import nn\n"
        "class Solver(nn.Module):\n"
        "    def __init__(self, args):\n"
        "        super().__init__()\n"
        "        self.c_max = args.c_max\n"
        "        self.c_max = torch.FloatTensor([self.c_max])\n"
        "        self.gamma = args.gamma\n"
        "        if args.tensor_gamma:\n"
        "            self.gamma = torch.FloatTensor([self.gamma])\n"
        "    def forward(self, x):\n"
        "        probe(self.c_max, self.gamma)\n"
        "        return x\n"
        "model = torch.compile(Solver(None))\n"
    )
    assert kinds == {"self.c_max": T, "self.gamma": U}


def test_calling_self_unpacks_what_forward_returns_with_as_many_values() -> None:
    """GeoDiff's ``get_loss`` unpacks six values from ``self(...)``; its ``forward`` returns six when asked for
    its edges and two otherwise, and the two-value return cannot be what a six-name unpacking takes."""
    kinds = kinds_of(
        "import torch\n"
        "from torch import nn\n"
        "class Net(nn.Module):\n"
        "    def forward(self, x, edges=False):\n"
        "        h = torch.relu(x)\n"
        "        keep = h > 0\n"
        "        if edges:\n"
        "            return h, keep, 3\n"
        "        return h, keep\n"
        "    def loss(self, x):\n"
        "        h, keep, n = self(x, edges=True)\n"
        "        probe(h, keep, n)\n"
        "        return h[keep].sum() * n\n"
        "model = Net()\n"
        "loss = torch.compile(model.loss)\n"
    )
    assert kinds == {"h": T, "keep": T, "n": S}


def test_a_binding_under_an_is_none_test_no_call_takes_is_left_out() -> None:
    """zamba2's ``_update_causal_mask``: ``target_length`` is ``sequence_length`` only when ``cache_position is
    None``, and its one caller fills ``cache_position`` in first, so only ``cache_position[-1] + 1`` runs."""
    source = (
        "import torch\n"
        "class M(torch.nn.Module):\n"
        "    def forward(self, x, cache_position=None):\n"
        "        if cache_position is None:\n"
        "            cache_position = torch.arange(x.shape[1])\n"
        "        return self.mask(x, cache_position)\n"
        "    def mask(self, x, cache_position):\n"
        "        if cache_position is None:\n"
        "            target_length = x.shape[1]\n"
        "        else:\n"
        "            target_length = cache_position[-1] + 1\n"
        "        probe(target_length)\n"
        "        return x\n"
        "m = torch.compile(M())\n"
    )
    assert kinds_of(source) == {"target_length": T}
    # a caller that may pass None keeps both bindings
    maybe_none = source.replace("return self.mask(x, cache_position)", "return self.mask(x, cache_position), self.mask(x, None)")
    assert kinds_of(maybe_none) == {"target_length": U}
    # a parameter not filled in before the call may be None
    unfilled = source.replace("        if cache_position is None:\n            cache_position = torch.arange(x.shape[1])\n", "")
    assert kinds_of(unfilled) == {"target_length": U}


def test_a_tensor_annotation_every_call_contradicts_with_a_python_value_gives_way() -> None:
    """Moonshine's ``_get_feat_extract_output_lengths(input_lengths: torch.LongTensor)`` called only with
    ``attention_mask.shape[-1]``: Dynamo sees an int, so ``int(...)`` of it does not break."""
    source = (
        "import torch\n"
        "class M(torch.nn.Module):\n"
        "    def lengths(self, input_lengths: torch.LongTensor):\n"
        "        probe(input_lengths)\n"
        "        return int((input_lengths - 127) / 64 + 1)\n"
        "    def forward(self, x, mask):\n"
        "        return x[:, : self.lengths(mask.shape[-1])]\n"
        "m = torch.compile(M())\n"
    )
    assert kinds_of(source) == {"input_lengths": S}
    # a call passing a tensor leaves the annotation in charge, and so does an item of a container
    assert kinds_of(source.replace("mask.shape[-1]", "mask.sum(-1)")) == {"input_lengths": T}
    assert kinds_of(source.replace("mask.shape[-1]", "{'a': mask, 'b': mask}[self.key]")) == {"input_lengths": T}


def test_the_default_arm_of_a_size_parameter_no_call_leaves_out_is_left_out() -> None:
    """OpenNMT's ``max_len = max_len or lengths.max()`` and torch_scatter's ``dim_size if dim_size is not None
    else int(index.max()) + 1``: every call passes a size, so only the parameter is the value."""
    source = (
        "import torch\n"
        "def mask(lengths, max_len=None):\n"
        "    n = max_len or lengths.max()\n"
        "    m = max_len if max_len is not None else lengths.max()\n"
        "    probe(n, m)\n"
        "    return lengths\n"
        "@torch.compile\n"
        "def f(x, lengths):\n"
        "    return mask(lengths, x.size(-1)), mask(lengths, max_len=x.shape[1]), mask(lengths, len(x)), mask(lengths, 4)\n"
    )
    assert kinds_of(source) == {"n": S, "m": S}
    # a call without the size takes the default: both arms may run
    assert kinds_of(source.replace("mask(lengths, 4)", "mask(lengths)")) == {"n": T, "m": U}
    # a zero is falsy: ``or`` may take the tensor, while ``is not None`` still holds
    assert kinds_of(source.replace("mask(lengths, 4)", "mask(lengths, 0)")) == {"n": T, "m": S}



def test_a_positive_comparison_every_size_passes_settles_the_guard() -> None:
    """WeNet's ``make_pad_mask(lengths, max_len=0)``: ``max_len if max_len > 0 else lengths.max().item()``,
    with ``maxlen = probs.size(1)`` passed; the comparison forms and their negations alike."""
    source = (
        "import torch\n"
        "def mask(lengths, max_len=0):\n"
        "    a = max_len if max_len > 0 else lengths.max()\n"
        "    b = lengths.max() if max_len <= 0 else max_len\n"
        "    c = max_len if max_len else lengths.max()\n"
        "    probe(a, b, c)\n"
        "    return lengths\n"
        "@torch.compile\n"
        "def f(probs, lengths):\n"
        "    maxlen = probs.size(1)\n"
        "    return mask(lengths, maxlen), mask(lengths, max_len=3)\n"
    )
    assert kinds_of(source) == {"a": S, "b": S, "c": S}
    # a call that leaves the default out, or passes a name bound to a tensor, may take the tensor arm
    assert kinds_of(source.replace("mask(lengths, max_len=3)", "mask(lengths)")) == {"a": U, "b": U, "c": U}
    assert kinds_of(source.replace("probs.size(1)", "probs.sum()")) == {"a": U, "b": U, "c": U}
    # ``> 2`` is not settled by an unknown positive size
    assert kinds_of(source.replace("max_len > 0", "max_len > 2"))["a"] == U


def test_findings_in_an_arm_no_call_takes_are_not_reported() -> None:
    """The ``.item()`` of WeNet's default arm never runs when every call passes a size: Dynamo logs nothing there."""
    source = (
        "import torch\n"
        "def make_pad_mask(lengths, max_len=0):\n"
        "    n = max_len if max_len > 0 else lengths.max().item()\n"
        "    if max_len <= 0:\n"
        "        print('no length')\n"
        "    return torch.arange(n) < lengths.unsqueeze(1)\n"
        "@torch.compile\n"
        "def f(probs, lengths):\n"
        "    maxlen = probs.size(1)\n"
        "    return make_pad_mask(lengths, maxlen)\n"
    )
    assert [d.code for d in lint_source(source)] == []
    leaves_it_out = source.replace("make_pad_mask(lengths, maxlen)", "make_pad_mask(lengths, maxlen), make_pad_mask(lengths)")
    assert sorted(d.code for d in lint_source(leaves_it_out)) == ["GM201", "GM301"]


def test_a_guard_every_call_settles_with_a_literal_leaves_its_other_arm_and_operands_out() -> None:
    """torchmetrics' ``if zero_division == "warn" and torch.any(denom == 0): warnings.warn(...)`` when no call
    passes ``"warn"`` (the default is ``0.0``), and Medusa's ``if temperature == 0:`` with ``temperature=0.7``."""
    source = (
        "import torch, warnings\n"
        "def safe_divide(num, denom, zero_division=0.0):\n"
        "    if zero_division == 'warn' and torch.any(denom == 0):\n"
        "        warnings.warn('zero division')\n"
        "    return num / denom\n"
        "def pick(logits, temperature):\n"
        "    if temperature == 0:\n"
        "        print('greedy')\n"
        "    return logits\n"
        "@torch.compile\n"
        "def f(num, denom):\n"
        "    return safe_divide(num, denom) + pick(num, 0.7) + pick(num, temperature=1.0)\n"
    )
    assert [d.code for d in lint_source(source)] == []
    # a call passing the literal that takes the branch, or a value that is not a literal, keeps the findings
    warns = source.replace("safe_divide(num, denom)", "safe_divide(num, denom, 'warn')")
    assert sorted(d.code for d in lint_source(warns)) == ["GM101", "GM202"]
    greedy = source.replace("pick(num, 0.7)", "pick(num, denom.sum())")
    assert sorted(d.code for d in lint_source(greedy)) == ["GM101", "GM201"]  # a tensor temperature: both run
    # a caller's own parameter forwards the literals its calls pass (torchmetrics' ``_safe_divide(..., zero_division)``)
    forwarded = source.replace("def f(num, denom):", "def g(num, denom, zero_division=0.0):\n    return safe_divide(num, denom, zero_division)\n@torch.compile\ndef f(num, denom):")
    assert [d.code for d in lint_source(forwarded.replace("safe_divide(num, denom) +", "g(num, denom) +"))] == []
    assert len(lint_source(forwarded.replace("safe_divide(num, denom) +", "g(num, denom, 'warn') +"))) == 2
    # a forward runs from calls the file does not show (the entry, ``super().forward(..., flag=True)``)
    module = (
        "import torch\n"
        "class Base(torch.nn.Module):\n"
        "    def forward(self, x, verbose=False):\n"
        "        if verbose:\n"
        "            print('shape', x.shape)\n"
        "        return x\n"
        "class Net(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.base = Base()\n"
        "    def forward(self, x):\n"
        "        return self.base(x)\n"
        "model = torch.compile(Net())\n"
    )
    assert [d.code for d in lint_source(module)] == ["GM201"]
    # ``obj.pick(...)`` may be another callable named alike: with it, the calls prove nothing
    other = source.replace("pick(num, temperature=1.0)", "pick(num, temperature=1.0) + num.pick(num, 0.5)")
    assert [d.code for d in lint_source(other)] == ["GM201"]

def test_a_for_loop_iterable_is_evaluated_once_so_nothing_is_carried_into_it() -> None:
    kinds = kinds_of(
        "import torch\n"
        "@torch.compile\n"
        "def f(x):\n"
        "    total = 0\n"
        "    for row in probe(total):\n"
        "        total = row.sum()\n"
        "    return x\n"
    )
    assert kinds == {"total": S}


def test_a_parameter_the_function_rebinds_only_to_tensors_is_a_tensor() -> None:
    """Mamba's ``cache_position``: ``else: cache_position = torch.arange(...)``."""
    kinds = kinds_of(
        "import torch\n"
        "def prepare(ids, cache_position=None, lengths=None, n=None):\n"
        "    if cache_position is not None:\n"
        "        probe(cache_position[0])\n"
        "    else:\n"
        "        cache_position = torch.arange(0, 4)\n"
        "    probe(lengths, n)\n"
        "    lengths = torch.tensor(lengths)\n"
        "    if n is None:\n"
        "        n = ids.shape[0]\n"
        "    return ids\n"
        "@torch.compile\n"
        "def f(ids, c, l):\n"
        "    return prepare(ids, cache_position=c, lengths=l)\n"
    )
    assert kinds["cache_position[0]"] is T
    assert kinds["lengths"] is U  # ``torch.tensor(lengths)`` converts what was passed
    assert kinds["n"] is U  # rebound to a Python int


def test_a_scalar_annotation_loses_to_call_sites_that_all_pass_tensors() -> None:
    kinds = kinds_of(
        "import torch\n"
        "def finished(flag: bool, other: bool) -> bool:\n"
        "    probe(flag, other)\n"
        "    return True\n"
        "@torch.compile\n"
        "def f(x):\n"
        "    return finished((x > 0).all(), (x > 0).all()) and finished(x.sum() > 0, True)\n"
    )
    assert kinds == {"flag": T, "other": S}


def test_a_predicate_with_early_literal_exits_returns_a_tensor() -> None:
    """transformers' ``_is_packed_sequence``: ``return False`` early, else ``(...).bool()``."""
    kinds = kinds_of(
        "import torch\n"
        "def packed(p, b):\n"
        "    if p is None or b != 1:\n"
        "        return False\n"
        "    return (p.diff() != 1).any()\n"
        "def mixed(p):\n"
        "    if p is None:\n"
        "        return 0\n"
        "    return p.sum()\n"
        "@torch.compile\n"
        "def f(x):\n"
        "    probe(packed(x, 1), mixed(x))\n"
        "    return x\n"
    )
    assert kinds == {"packed(x, 1)": T, "mixed(x)": U}


def test_tensors_of_some_paths_only_are_partial_so_fixes_are_only_shown() -> None:
    source = (
        "import torch\n"
        "def packed(p):\n"
        "    if p is None:\n"
        "        return False\n"
        "    return (p.diff() != 1).any()\n"
        "@torch.compile\n"
        "def f(x, t, i):\n"
        "    if i:\n"
        "        prev = x.max()\n"
        "    else:\n"
        "        prev = t\n"
        "    probe(packed(x), packed(x) & prev, prev >= 0, x.sum() > prev)\n"
        "    return x\n"
    )
    analysis = file_analysis(source, "partial_case")
    probe = next(c for c in analysis.module.nodes_of_class(nodes.Call) if getattr(c.func, "name", "") == "probe")
    assert [analysis.values.kind(a) for a in probe.args] == [T, T, T, T]
    assert [analysis.values.partial(a) for a in probe.args] == [True, True, True, False]


SOURCES = """
import torch
from torch import nn


def get_mask(t: torch.Tensor):
    return t > 0, t.shape[0]


def scale(t: torch.Tensor, factor=None):
    return t * 2


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("keep", torch.ones(4, dtype=torch.bool))
        self.state = None

    def forward(self, x: torch.Tensor, ys):
        mask, n = get_mask(x)
        self.state = mask
        probe(mask, n, get_mask(x), self.keep, self.state)
        for y in ys:
            probe(y)
        return scale(x, x > 1) + scale(x)


model = torch.compile(Model())
"""


def test_value_sources_follow_bindings_helpers_parameters_and_attributes() -> None:
    """What dtype facts follow: a helper's returned tuple element, a parameter's call-site arguments, ``self.x``."""
    analysis = file_analysis(SOURCES, "sources_case")
    values = analysis.values

    def sources(node: nodes.NodeNG) -> list[str] | None:
        found = values.value_sources(node)
        return None if found is None else [source.as_string() for source in found]

    probes = [call for call in analysis.module.nodes_of_class(nodes.Call) if getattr(call.func, "name", "") == "probe"]
    mask, n, call, keep, state = probes[0].args
    assert sources(mask) == ["t > 0"] and sources(n) == ["t.shape[0]"]
    assert sources(call) == ["(t > 0, t.shape[0])"]
    assert sources(keep) == ["torch.ones(4, dtype=torch.bool)"]
    assert sources(state) == ["None", "mask"]
    assert sources(probes[1].args[0]) is None  # a loop variable
    factor = next(n for n in analysis.module.nodes_of_class(nodes.AssignName) if n.name == "factor")
    assert [s.as_string() for s in values.binding_sources(factor)] == ["x > 1"]  # the call that leaves it out gets None


def test_a_forward_takes_its_parameter_kinds_from_the_calls_of_its_instances() -> None:
    """No evidence in ``Block.forward``'s body: ``self.block(...)`` in traced code passes a tensor, an int, a mask."""
    kinds = kinds_of(
        "import torch\nfrom torch import nn\n\n\n"
        "class Block(nn.Module):\n    def forward(self, h, k, m):\n        probe(h, k, m)\n        return h\n\n\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.block = Block()\n\n"
        "    def forward(self, x: torch.Tensor):\n        return self.block(x * 2, 3, x > 0)\n\n\n"
        "model = torch.compile(Net())\n"
    )
    assert kinds == {"h": T, "k": S, "m": T}


CONTAINERS = """
import dataclasses
from typing import NamedTuple

import torch


@dataclasses.dataclass
class Out:
    sample: torch.Tensor
    steps: int = 0
    extra: torch.Tensor = None


class Pair(NamedTuple):
    mask: torch.Tensor
    count: int


class Cache:
    def __init__(self, index, size=4):
        self.index = index
        self.size = size
        self.keys = torch.zeros(size)


def step(t):
    return Out(t * 2, steps=3)


def stats(t):
    return {"total": t.sum(), "n": t.shape[0]}


@torch.compile
def f(x: torch.Tensor, c):
    out, p, cache, s = step(x), Pair(x > 0, 2), Cache(x.sum()), stats(x)
    probe(out.sample, out.steps, out.extra, p.mask, p.count, cache.index, cache.size, cache.keys, s["total"], s["n"],
          c.index, {"a": x, **s}["a"])
    return x
"""


def test_fields_attributes_and_dict_entries_of_values_this_file_builds_keep_their_kinds() -> None:
    kinds = kinds_of(CONTAINERS)
    assert kinds == {
        "out.sample": T, "out.steps": S, "out.extra": S, "p.mask": T, "p.count": S, "cache.index": T, "cache.size": S,
        "cache.keys": T, "s['total']": T, "s['n']": S,
        "c.index": U,  # a parameter nothing here passes: any object
        "{'a': x, **s}['a']": S,  # keys from elsewhere: only the container is known (static)
    }  # fmt: skip


def test_self_attributes_come_from_the_bases_this_file_defines() -> None:
    """snntorch's ``NoisyLeaky(NoisyLIF(SpikingNeuron))`` reads a buffer ``SpikingNeuron.__init__`` registers;
    a class of another module (here ``Imported``) is not followed, and the class's own assignments still count."""
    kinds = kinds_of(
        "import torch\nfrom torch import nn\nfrom elsewhere import Imported\n"
        "class Base(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.register_buffer('mode', torch.tensor(0))\n"
        "        self.k = 2\n"
        "class Middle(Base):\n"
        "    pass\n"
        "class Leaf(Middle, Imported):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.scale = torch.ones(1)\n"
        "    def forward(self, h):\n"
        "        probe(self.mode, self.k, self.scale, self.other)\n"
        "        return h\n"
        "model = torch.compile(Leaf())\n"
    )
    assert kinds == {"self.mode": T, "self.k": S, "self.scale": T, "self.other": U}


def test_an_unpacking_of_a_conditional_takes_the_elements_of_both_arms() -> None:
    """Hiera's ``(bool_masked_pos, ids_restore) = self.random_masking(...) if self.is_mae else (None, None)``:
    the masking arm's elements say what the names are; the ``None`` arm is tested before use."""
    kinds = kinds_of(
        "import torch\n"
        "def masking(x):\n    return x > 0, x.argsort()\n"
        "@torch.compile\n"
        "def f(x: torch.Tensor, mae: bool):\n"
        "    (mask, ids) = masking(x) if mae else (None, None)\n"
        "    (a, b) = (None, None) if mae else (None, 2)\n"
        "    probe(mask, ids, a, b)\n"
    )
    assert kinds == {"mask": T, "ids": T, "a": S, "b": S}


def test_self_attributes_assigned_by_methods_init_calls_count() -> None:
    """snntorch's ``SpikingNeuron.__init__`` calls ``self._snn_register_buffer(...)``, which calls
    ``self._reset_mechanism_buffer(...)``, which registers the buffer a subclass branches on. A method
    ``__init__`` never calls (``reset``) is not where the instance gets its attributes."""
    kinds = kinds_of(
        "import torch\nfrom torch import nn\n"
        "class Base(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self._register(0)\n"
        "    def _register(self, mode):\n"
        "        self._mode_buffer(mode)\n"
        "        self.k = 2\n"
        "    def _mode_buffer(self, mode):\n"
        "        self.register_buffer('mode', torch.as_tensor(mode))\n"
        "    def reset(self):\n"
        "        self.other = torch.zeros(1)\n"
        "class Leaf(Base):\n"
        "    def forward(self, h):\n"
        "        probe(self.mode, self.k, self.other)\n"
        "        return h\n"
        "model = torch.compile(Leaf())\n"
    )
    assert kinds == {"self.mode": T, "self.k": S, "self.other": U}


def test_items_a_class_stores_in_its_literal_container_have_the_stored_kinds() -> None:
    """audiocraft's ``StreamingModule``: ``self._streaming_state = {}`` in a base class, tensors stored under
    keys by a subclass (``int(self._streaming_state['offset'].item())`` breaks, GB0124). A key stored
    under another key, a key nothing stores and a container that is not only a literal keep the old answer."""
    kinds = kinds_of(
        "import torch\nfrom torch import nn\n"
        "class Streaming(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self._state = {}\n"
        "        self.steps = [0]\n"
        "        self.other = {}\n"
        "        self.built = dict()\n"
        "class Attention(Streaming):\n"
        "    def _complete(self, k):\n"
        "        self._state['past_keys'] = torch.cat([k, k])\n"
        "        self._state['offset'] = torch.tensor(0)\n"
        "        self._state['count'] = 3\n"
        "        self.steps[0] = 1\n"
        "        self.built['k'] = k\n"
        "    def forward(self, x, key):\n"
        "        self._complete(x)\n"
        "        probe(self._state['offset'], self._state['past_keys'], self._state['count'], self._state[key],\n"
        "              self._state, self.steps[0], self.other['a'], self.built['k'])\n"
        "        return x\n"
        "model = torch.compile(Attention())\n"
    )
    assert kinds == {
        "self._state['offset']": T, "self._state['past_keys']": T, "self._state['count']": S,
        "self._state[key]": U,  # any of the stored values: tensors and a Python int
        "self._state": S, "self.steps[0]": S, "self.other['a']": S, "self.built['k']": S,
    }  # fmt: skip


def test_the_padded_sequence_helpers_of_torch_nn_utils_rnn_return_tensors() -> None:
    """ESPnet's RNNP: ``ys_pad, ilens = pad_packed_sequence(ys, batch_first=True)`` then
    ``[int(i + 1) // sub for i in ilens]`` (GB0124 per length, measured); a packed sequence is no tensor."""
    kinds = kinds_of(
        "import torch\n"
        "from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence\n"
        "@torch.compile\n"
        "def f(xs, lengths, rnn):\n"
        "    packed = pack_padded_sequence(xs, lengths, batch_first=True)\n"
        "    ys, _ = rnn(packed)\n"
        "    ys_pad, ilens = pad_packed_sequence(ys, batch_first=True)\n"
        "    for i in ilens:\n"
        "        probe(i)\n"
        "    probe(ys_pad, packed, pad_sequence([xs, xs]))\n"
        "    return ys_pad\n"
    )
    assert kinds == {"i": T, "ys_pad": T, "packed": U, "pad_sequence([xs, xs])": T}


def test_a_parameter_passed_on_to_a_helper_that_uses_it_as_a_tensor_is_a_tensor() -> None:
    """k-diffusion's ``sample_heun`` only indexes ``sigmas``; ``to_d(x, sigmas[i + 1], d)`` hands an item to
    ``append_dims(sigma, x.ndim)``, which reads ``.ndim``. A helper that takes it as a number, an annotated
    parameter, or a module's ``forward`` is no such evidence."""
    kinds = kinds_of(
        "import torch\nfrom torch import nn\n"
        "def append_dims(x, target_dims):\n"
        "    return x[(...,) + (None,) * (target_dims - x.ndim)]\n"
        "def to_d(x, sigma, denoised):\n"
        "    return (x - denoised) / append_dims(sigma, x.ndim)\n"
        "def scale(v, factor):\n"
        "    return v * factor\n"
        "def typed(v: float, t):\n"
        "    return t.sum() * v\n"
        "class Inner(nn.Module):\n"
        "    def forward(self, h):\n"
        "        return h.sum()\n"
        "def sample(model, x, sigmas, steps, weights, hint):\n"
        "    for i in range(len(sigmas) - 1):\n"
        "        probe(sigmas[i], steps[i], weights, hint)\n"
        "        d = to_d(x, sigmas[i + 1], model(x))\n"
        "        x = x + scale(steps[i], 2.0) + typed(weights, x) + model.inner(hint)\n"
        "    return x\n"
        "def build(model):\n"
        "    def sample_fn(x, sigmas, steps, weights, hint):\n"
        "        return sample(model, x, sigmas, steps, weights, hint)\n"
        "    return torch.compile(sample_fn)\n"
    )
    assert kinds == {"sigmas[i]": T, "steps[i]": U, "weights": U, "hint": U}


def test_items_of_a_copy_of_a_tensor_are_tensors() -> None:
    """``for length in sorted(lengths, reverse=True)`` (torchaudio's HuBERT spans): iterating a tensor yields
    tensors, and ``sorted``/``list``/``tuple``/``reversed`` keep them; a shape's items are Python ints."""
    kinds = kinds_of(
        "import torch\n"
        "@torch.compile\n"
        "def f(t: torch.Tensor, xs):\n"
        "    for a in sorted(t, reverse=True):\n"
        "        probe(a)\n"
        "    for b in list(t.shape):\n"
        "        probe(b)\n"
        "    for c in tuple(xs):\n"
        "        probe(c)\n"
        "    ys = list(t)\n"
        "    for i, d in enumerate(reversed(ys)):\n"
        "        probe(d)\n"
        "    return t\n"
    )
    assert kinds == {"a": T, "b": U, "c": U, "d": T}


def test_an_isinstance_python_type_branch_makes_the_name_a_python_value_there() -> None:
    """diffusers' ``if isinstance(pos, int): pos = torch.arange(pos)`` with a tensor ``pos`` from every caller."""
    kinds = kinds_of(
        "import torch\n"
        "def embed(dim, pos):\n"
        "    if isinstance(pos, int):\n"
        "        probe(pos)\n"
        "        pos = torch.arange(pos)\n"
        "        probe(pos * 1)\n"
        "    if isinstance(dim, (int, float)) and dim > 2:\n"
        "        probe(dim * 1)\n"
        "    return probe(pos + 0)\n"
        "@torch.compile\n"
        "def f(x: torch.Tensor):\n"
        "    return embed(x.sum(), x[:, 0])\n"
    )
    assert kinds == {"pos": S, "pos * 1": T, "dim * 1": S, "pos + 0": T}


def test_items_of_a_list_appended_tensors_are_tensors() -> None:
    """``hs.append(layer(h))`` then ``if hs[-1].sum() > 0:`` (GB0170, measured on torch 2.13); a list given
    anything else, or built by more appends than are worth classifying, stays a Python list's item."""
    appends = "".join(f"    many.append(x + {i})\n" for i in range(9))
    kinds = kinds_of(
        "import torch\n"
        "@torch.compile\n"
        "def f(x: torch.Tensor, n: int):\n"
        "    hs = []\n"
        "    mixed = []\n"
        "    many = []\n"
        "    for i in range(n):\n"
        "        hs.append(x * i)\n"
        "        mixed.append(i)\n"
        "        mixed.append(x)\n"
        f"{appends}"
        "    probe(hs[-1], hs[0], mixed[-1], many[-1])\n"
        "    return torch.stack(hs)\n"
    )
    assert kinds == {"hs[-1]": T, "hs[0]": T, "mixed[-1]": S, "many[-1]": S}


def test_a_list_whose_appends_read_it_again_is_classified_once() -> None:
    """Qwen2.5-Omni computes each appended position from the list's last item: without a guard every read
    classified every item again, without end."""
    steps = "".join(
        "    start = pos[-1].max() + 1 if len(pos) > 0 else 0\n"
        f"    pos.append(torch.arange({i + 1}) + start)\n"
        for i in range(6)
    )
    kinds = kinds_of(
        "import torch\n"
        "@torch.compile\n"
        "def f(x: torch.Tensor):\n"
        "    pos = []\n"
        f"{steps}"
        "    probe(pos[-1])\n"
        "    return torch.cat(pos)\n"
    )
    assert kinds == {"pos[-1]": T}


def test_a_parameter_one_traced_call_passes_a_tensor_is_a_tensor_though_another_passes_an_int() -> None:
    """Dynamo inlines each call on its own: the tensor call breaks in the body (torchdrug's
    ``multi_slice_mask``). A same-named call on an attribute (``self.scale(x)``, a submodule) may be
    anything and says nothing."""
    kinds = kinds_of(
        "import torch\n"
        "def pad(n):\n"
        "    return probe(n)\n"
        "def scale(k):\n"
        "    return probe(k)\n"
        "class Net(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.scale = torch.nn.Linear(2, 2)\n"
        "    def forward(self, x, lengths):\n"
        "        return self.scale(x) * scale(x.shape[0]), pad(lengths.max()), pad(x.shape[0])\n"
        "model = torch.compile(Net())\n"
    )
    assert kinds == {"n": T, "k": Kind.UNKNOWN}


def test_loop_items_are_followed_through_copies_and_slices() -> None:
    """U-ViT's sampler walks ``list(zip(ts, ts[1:]))[::-1]``: each unpacked name still walks its tensor."""
    kinds = kinds_of(
        "import torch\n"
        "@torch.compile\n"
        "def f(x: torch.Tensor, ts: torch.Tensor, names: list):\n"
        "    for s, t in list(zip(ts, ts[1:]))[::-1]:\n"
        "        probe(s, t)\n"
        "    for u in sorted(ts)[1:]:\n"
        "        probe(u)\n"
        "    for n in reversed(names[1:]):\n"
        "        probe(n)\n"
        "    for a, b in track(zip(ts, ts[1:]), True):\n"
        "        probe(a)\n"
        "    return x\n"
        "def track(it, disable):\n"
        "    return it\n"
    )
    assert kinds == {"s": T, "t": T, "u": T, "n": Kind.UNKNOWN, "a": T}


def test_a_named_lambda_types_its_parameter_from_its_calls_and_its_result_from_its_body() -> None:
    """VIBE's loss: ``flatten = lambda x: x.reshape(-1)`` over weights read from a batch dict and cast to
    bool (a module converts to no bool dtype, so ``.type(torch.bool)`` is a tensor)."""
    kinds = kinds_of(
        "import torch\n"
        "@torch.compile\n"
        "def f(batch, x: torch.Tensor):\n"
        "    flatten = lambda v: probe(v).reshape(-1)\n"
        "    w = flatten(batch['w'].type(torch.bool))\n"
        "    probe(w)\n"
        "    return x\n"
    )
    assert kinds == {"v": T, "w": T}


def test_an_item_of_a_dict_built_with_keywords_keeps_its_kind() -> None:
    """torchvision's ColorJitter: ``_get_params`` returns ``dict(fn_idx=torch.randperm(4), ...)`` and the
    transform loops over ``params["fn_idx"]``, each step a 0-d tensor (``if fn_id == 0`` logs GB0170)."""
    kinds = kinds_of(
        "import torch\n"
        "def params():\n"
        "    return dict(fn_idx=torch.randperm(4), b=1.0)\n"
        "@torch.compile\n"
        "def f(x: torch.Tensor):\n"
        "    p = params()\n"
        "    for fn_id in p['fn_idx']:\n"
        "        probe(fn_id)\n"
        "    probe(p['b'])\n"
        "    return x\n"
    )
    assert kinds == {"fn_id": T, "p['b']": S}


def test_a_comparison_with_a_string_is_no_tensor_evidence() -> None:
    """foundation-model-stack's attention: ``use_flash = attn_algorithm == "flash"`` goes to
    ``torch.backends.cuda.enable_flash_sdp(use_flash)``, a torch function, yet ``attn_algorithm`` is a string
    setting (``if attn_algorithm:`` logs nothing); ``scale == 2`` into ``torch.relu`` still says tensor."""
    kinds = kinds_of(
        "import torch\n"
        "@torch.compile\n"
        "def f(x: torch.Tensor, attn_algorithm=None, scale=None):\n"
        "    use_flash = attn_algorithm == 'flash'\n"
        "    torch.backends.cuda.enable_flash_sdp(use_flash)\n"
        "    probe(attn_algorithm)\n"
        "    y = torch.relu(scale == 2)\n"
        "    probe(scale)\n"
        "    return x\n"
    )
    assert kinds == {"attn_algorithm": U, "scale": T}
