"""GM401 on boolean-mask reads whose mask's dtype is not shown where it indexes, checked against Dynamo.

A parameter named as a mask (``input_features_mask``, Granite Speech) is read
as one unless a call in this file passes something else for it (``...`` as
detectron2's ``fg_mask``, an integer tensor, ``None``); masks stay masks through
``.to(device)`` and ``F.pad``, and in the dicts and tuples helpers return. Each program defines ``f`` and is called with
:data:`INPUTS`; the lint half asserts GM401's lines, the ``dynamo`` half that
Dynamo logs GB0036 at exactly those lines (torch 2.13.0, measured). A program
with no line is a near miss: it looks like a mask read but selects nothing.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from graphmend_lint import lint_source

HEADER = "import torch\nimport torch.nn.functional as F\n\n\n"  # the program starts on line 5

#: name -> (program, GM401 lines = GB0036 lines); every ``f`` takes ``(x, m)``, see INPUTS
PROGRAMS: dict[str, tuple[str, set[int]]] = {
    # the compiled function's own parameter, also inverted
    "entry-mask": ("def f(x: torch.Tensor, keep_mask):\n    return x[keep_mask] * 2\n", {6}),
    # a one-letter tag after the word (OSTrack's `box_mask_z`, the template's), moved and expanded
    "entry-tagged-mask": (
        "def f(x: torch.Tensor, box_mask_z):\n    box_mask_z = box_mask_z.unsqueeze(1).expand(-1, 2)\n"
        "    return x.view(8, 1).expand(-1, 2)[box_mask_z] * 2\n",
        {7},
    ),
    # transformers annotates masks `torch.LongTensor` by habit; as an index the name wins (Janus's images_seq_mask)
    "entry-long-annotated-mask": (
        "def f(x: torch.Tensor, images_seq_mask: torch.LongTensor):\n    return x[images_seq_mask] * 2\n",
        {6},
    ),
    "entry-inverted-mask": ("def f(x: torch.Tensor, padding_mask=None):\n    return x[~padding_mask] * 2\n", {6}),
    "entry-bool-masked-pos": ("def f(x: torch.Tensor, bool_masked_pos):\n    return x[~bool_masked_pos] * 2\n", {6}),
    # passed on from a parameter named as a mask (Granite Speech's get_merged_audio_embeddings)
    "passed-on-mask": (
        "def merge(feats, input_features_mask=None):\n    if input_features_mask is not None:\n"
        "        feats = feats[input_features_mask]\n    return feats * 2\n\n\n"
        "def f(x: torch.Tensor, input_features_mask=None):\n    return merge(x, input_features_mask)\n",
        {7},
    ),
    # rebound only to masks: a default filled in, a dtype normalised (`if m.dtype != torch.bool: m = m > .5`)
    "mask-filled-when-none": (
        "def f(x: torch.Tensor, keep_mask=None):\n    if keep_mask is None:\n"
        "        keep_mask = torch.ones(x.shape[0], dtype=torch.bool)\n    return x[keep_mask] * 2\n",
        {8},
    ),
    "mask-normalised": (
        "def f(x: torch.Tensor, valid_mask):\n    if valid_mask.dtype != torch.bool:\n"
        "        valid_mask = valid_mask > 0.5\n    return x[valid_mask] * 2\n",
        {8},
    ),
    "mask-rebound-to-indices": (
        "def f(x: torch.Tensor, valid_mask):\n    if valid_mask.dtype == torch.bool:\n"
        "        valid_mask = valid_mask.long()\n    return x[valid_mask] * 2\n",
        set(),
    ),
    # one call passes a comparison, the other a parameter named as a mask
    "helper-given-a-comparison-and-a-mask": (
        "def pick(h, token_mask: torch.Tensor):\n    return h[token_mask] * 2\n\n\n"
        "def f(x: torch.Tensor, valid_mask):\n    return pick(x, x > 0), pick(x, valid_mask)\n",
        {6},
    ),
    # moved, sliced or rebound to itself moved, the parameter is still the mask (Qwen3-VL's deepstack)
    "rebound-moved-mask": (
        "def deepstack(h, visual_pos_masks: torch.Tensor):\n    visual_pos_masks = visual_pos_masks.to(h.device)\n"
        "    return h[visual_pos_masks, :] * 2\n\n\n"
        "def f(x: torch.Tensor, image_mask):\n    return deepstack(x[:, None], image_mask), x[image_mask[..., None][:, 0]]\n",
        {7, 11},
    ),
    # a mask moved to a device named by a variable, or padded, stays boolean
    "mask-to-device-name": ("def f(x: torch.Tensor, m, device='cpu'):\n    k = x > 0\n    return x[k.to(device)] * 2\n", {7}),
    "padded-mask": ("def f(x: torch.Tensor, m):\n    k = F.pad(x > 0, (0, 2))\n    return x[k[:8]] * 2\n", {7}),
    # a comparison of a value of unknown kind indexes a tensor: a Python number would make the index a bool
    "compared-parameter": (
        "def f(x: torch.Tensor, labels):\n    keep = (labels >= 0) & (labels != 3)\n"
        "    return x[labels != -100] * 2, x[keep]\n",
        {7},
    ),
    "compared-numpy": (
        "def f(x: torch.Tensor, m):\n    a = x.numpy()\n    b = a + 1\n    return torch.from_numpy(a[b > 1.5]) * 2\n",
        {8},
    ),
    "compared-python-number": (
        "def f(x: torch.Tensor, m):\n    n = x.shape[0]\n    return x[n > 4] * 2, x[(n > 4) & (n < 9)], torch.from_numpy(x.numpy()[n > 4])\n",
        set(),
    ),
    # an entry of a dict a helper returns
    "dict-entry-mask": (
        "def masks(h):\n    return {'keep': h > 0, 'n': h.shape[0]}\n\n\n"
        "def f(x: torch.Tensor, m):\n    out = masks(x)\n    return x[out['keep']] * out['n']\n",
        {11},
    ),
    "dict-entry-index": (
        "def masks(h):\n    return {'keep': (h > 0).long(), 'n': h.shape[0]}\n\n\n"
        "def f(x: torch.Tensor, m):\n    out = masks(x)\n    return x[out['keep']] * out['n']\n",
        set(),
    ),
    # near misses: detectron2 passes `...` as `fg_mask` (a view); an integer tensor gathers; so does a 0/1
    # attention mask; `.to(dtype)` converts; `mask_indices` names indices
    "helper-given-ellipsis": (
        "def loss(h, fg_mask: torch.Tensor):\n    return h[fg_mask] * 2\n\n\n"
        "def f(x: torch.Tensor, m):\n    return loss(x, ...) + loss(x[None], ...).sum()\n",
        set(),
    ),
    # a row of a mask parameter per loop step is a mask (vector-quantize-pytorch's `samples[seq_mask[ind]]`, the
    # mask passed on from a parameter named as one); the same row of an integer tensor gathers
    "row-of-a-mask-parameter": (
        "def pick(rows, seq_mask=None):\n    out = []\n    for ind, row in enumerate(rows):\n"
        "        if seq_mask is not None:\n            row = row[seq_mask[ind]]\n        out.append(row.sum())\n"
        "    return out\n\n\ndef f(x: torch.Tensor, keep_mask):\n    return pick(x.view(2, 4), keep_mask.view(2, 4))\n",
        {9},
    ),
    "row-of-an-integer-mask-parameter": (
        "def pick(rows, seq_mask=None):\n    out = []\n    for ind, row in enumerate(rows):\n"
        "        if seq_mask is not None:\n            row = row[seq_mask[ind]]\n        out.append(row.sum())\n"
        "    return out\n\n\ndef f(x: torch.Tensor, m):\n    return pick(x.view(2, 4), (x > 0).view(2, 4).long())\n",
        set(),
    ),
    # a mask read of an instance of a class of this file runs its `__getitem__`, which Dynamo inlines: the read
    # of `item` selects (detectron2's Boxes), though other reads pass an index tensor or an int (the int branch
    # reads an int); with no read passing a mask, nothing selects
    "getitem-given-a-mask": (
        "class Boxes:\n    def __init__(self, tensor: torch.Tensor):\n        self.tensor = tensor\n\n"
        "    def __getitem__(self, item):\n        if isinstance(item, int):\n"
        "            return Boxes(self.tensor[item].view(1, -1))\n        return Boxes(self.tensor[item])\n\n\n"
        "def f(x: torch.Tensor, m):\n    boxes = Boxes(x.view(4, 2))\n    order = x.view(4, 2)[:, 1].argsort()\n"
        "    return boxes[x.view(4, 2)[:, 0] > 0].tensor.sum(), boxes[order].tensor, boxes[0].tensor\n",
        {12},
    ),
    "getitem-given-indices": (
        "class Boxes:\n    def __init__(self, tensor: torch.Tensor):\n        self.tensor = tensor\n\n"
        "    def __getitem__(self, item):\n        if isinstance(item, int):\n"
        "            return Boxes(self.tensor[item].view(1, -1))\n        return Boxes(self.tensor[item])\n\n\n"
        "def f(x: torch.Tensor, m):\n    boxes = Boxes(x.view(4, 2))\n    order = x.view(4, 2)[:, 1].argsort()\n"
        "    return boxes[order].tensor, boxes[0].tensor\n",
        set(),
    ),
    # functions called through `checkpoint` and `map` run in the compiled frame: their mask reads break there
    "checkpointed-helper": (
        "def sel(h: torch.Tensor):\n    return h[h > 0] * 2\n\n\n"
        "def f(x: torch.Tensor, m):\n    return torch.utils.checkpoint.checkpoint(sel, x, use_reentrant=False)\n",
        {6},
    ),
    "mapped-helper": (
        "def sel(h: torch.Tensor):\n    return h[h > 0] * 2\n\n\ndef f(x: torch.Tensor, m):\n    return list(map(sel, [x, x + 1]))\n",
        {6},
    ),
    "checkpointed-gather": (
        "def sel(h: torch.Tensor):\n    return h[(h > 0).long()] * 2\n\n\n"
        "def f(x: torch.Tensor, m):\n    return torch.utils.checkpoint.checkpoint(sel, x, use_reentrant=False)\n",
        set(),
    ),
    # reading a `@property` runs its getter in the compiled frame; a plain method read without a call runs nothing
    "property-getter": (
        "class Keep:\n    def __init__(self, t: torch.Tensor):\n        self.t = t\n\n    @property\n"
        "    def kept(self):\n        return self.t[self.t > 0]\n\n\n"
        "def f(x: torch.Tensor, m):\n    return Keep(x).kept * 2\n",
        {11},
    ),
    "method-not-called": (
        "class Keep:\n    def __init__(self, t: torch.Tensor):\n        self.t = t\n\n"
        "    def kept(self):\n        return self.t[self.t > 0]\n\n\ndef f(x: torch.Tensor, m):\n"
        "    return x * 2 if callable(Keep(x).kept) else x\n",
        set(),
    ),
    "helper-given-an-integer-tensor": (
        "def pick(h, sel_mask):\n    return h[sel_mask] * 2\n\n\ndef f(x: torch.Tensor, m):\n    return pick(x, (x > 0).long())\n",
        set(),
    ),
    "helper-given-none-and-a-mask": (
        "def pick(h, sel_mask):\n    return h if sel_mask is None else h[sel_mask] * 2\n\n\n"
        "def f(x: torch.Tensor, m):\n    return pick(x, None), pick(x, (x > 0).long())\n",
        set(),
    ),
    "entry-attention-mask": ("def f(x: torch.Tensor, attention_mask):\n    return x[attention_mask.long()] * 2, x[attention_mask]\n", set()),
    "mask-to-dtype-name": ("def f(x: torch.Tensor, m, dtype=torch.long):\n    k = x > 0\n    return x[k.to(dtype)] * 2\n", set()),
    "mask-indices": ("def f(x: torch.Tensor, mask_indices):\n    return x[mask_indices] * 2\n", set()),
    # a value indexed by its own (in)equality with anything is an array (BiSeNet's OHEM loss,
    # `labels[labels != self.ignore_lb]`); a list's `!=` is one bool, which no code indexes with
    "self-inequality": ("def f(x: torch.Tensor, labels, ignore=0):\n    return x.sum() * labels[labels != ignore].numel()\n", {6}),
    "list-element-equality": ("def f(x: torch.Tensor, m):\n    ks = [0, 1]\n    return x * ks[ks[0] == 0]\n", set()),
    # neither side typed: a value of unknown kind indexed by a comparison of another is an array in real code
    # (a loss's `logits[labels != -100]`, `loss[target > 0].mean()`); a literal container indexed by a bool
    # (`pair[step < 2]`) is not
    "untyped-label-mask": ("def f(logits, labels):\n    return logits[labels != -100] * 2\n", {6}),
    "untyped-loss-mask": (
        "def f(pred, target):\n    loss = (pred - target) ** 2\n    pos = target > 0\n    return loss[pos].mean()\n",
        {8},
    ),
    # a comparison of untyped values that later code uses as a tensor is a mask through reshapes
    # (transformers' `get_placeholder_mask`: `input_ids == self.config.image_token_id`, then `.unsqueeze(-1)`)
    "untyped-comparison-reshaped": (
        "def f(x, ids):\n    hit = ids == 1\n    hit = hit.unsqueeze(-1).expand(-1, 2)\n"
        "    return x.unsqueeze(-1).expand(-1, 2)[hit] * 2\n",
        {8},
    ),
    "untyped-literal-pair": ("def f(x, m):\n    pair = (x, x * 2)\n    step = len(pair)\n    return pair[step < 2]\n", set()),
}
#: What ``f`` is called with: ``x`` random, ``m`` a bool mask of it, except where the parameter's name says
#: it holds integers (an attention mask of 0/1, indices, labels): there ``m`` is an integer tensor.
INTEGER_INPUTS = frozenset(
    {"entry-attention-mask", "mask-indices", "compared-parameter", "self-inequality", "untyped-label-mask",
     "untyped-loss-mask", "untyped-comparison-reshaped"}
)


def source(name: str) -> str:
    return HEADER + PROGRAMS[name][0]


def _gm401_lines(name: str) -> set[int]:
    """GM401's lines on the program with ``f`` compiled after its definition (so that lines keep)."""
    compiled = source(name) + "\n\nf = torch.compile(f)\n"
    return {d.start.line for d in lint_source(compiled) if d.code == "GM401"}


@pytest.mark.parametrize("name", PROGRAMS)
def test_gm401_flags_exactly_the_logged_lines(name: str) -> None:
    assert _gm401_lines(name) == PROGRAMS[name][1]


@pytest.mark.dynamo
@pytest.mark.parametrize("name", PROGRAMS)
def test_dynamo_logs_gb0036_at_exactly_those_lines(name: str, tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from graphmend_lint.verify.breaks import capture_breaks

    path = tmp_path / "program.py"
    path.write_text(source(name))
    spec = importlib.util.spec_from_file_location("program", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    x = torch.randn(8)
    m = (x > 0).long() if name in INTEGER_INPUTS else x > 0
    report = capture_breaks(module.f, x, m)
    logged = {site.line for site in report.sites if site.gb_id == "GB0036"}
    assert logged == PROGRAMS[name][1]
    assert {site.line for site in report.sites} <= PROGRAMS[name][1], "a break that is not a mask read"
