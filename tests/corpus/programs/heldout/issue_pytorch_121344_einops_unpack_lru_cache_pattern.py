"""einops pack / unpack inside a compiled model: `analyze_pattern` is an `lru_cache`d function.

Source: https://github.com/pytorch/pytorch/issues/121344 (arogozhnikov/einops@3e72d59c:einops/packing.py:
analyze_pattern, pack, prod, unpack; einops/parsing.py ParsedExpression.check_axis_name_return_reason;
einops/_backends.py get_backend / TorchBackend)
Kept: the lru_cache'd pattern analysis with its set/duplicate/`*` checks and axis-name validation
(keyword / 'axis' warnings), pack's per-tensor reshape loop and packed-shape list, unpack's composed-axis
lengths with the single -1 inference, split positions, slice-filler tuple and the try/except around the
reshapes, and the backend lookup cached by tensor type.
Simplified: only the torch backend exists; the AudioLM transformer from the reporter's gist is a small
token model that packs a learned start token with the sequence and unpacks it after a feed-forward block.
"""
import keyword
import warnings
from functools import lru_cache

import torch
from torch import nn


class EinopsError(RuntimeError):
    pass


class ParsedExpression:
    @staticmethod
    def check_axis_name_return_reason(name: str, allow_underscore: bool = False):
        if not str.isidentifier(name):
            return False, "not a valid python identifier"
        elif name[0] == "_" or name[-1] == "_":
            if name == "_" and allow_underscore:
                return True, ""
            return False, "axis name should should not start or end with underscore"
        else:
            if keyword.iskeyword(name):
                warnings.warn("It is discouraged to use axes names that are keywords: {}".format(name), RuntimeWarning)
            if name in ["axis"]:
                warnings.warn(
                    "It is discouraged to use 'axis' as an axis name and will raise an error in future",
                    FutureWarning,
                )
            return True, ""


class TorchBackend:
    framework_name = "torch"

    def is_appropriate_type(self, tensor):
        return isinstance(tensor, torch.Tensor)

    def shape(self, x):
        return x.shape

    def reshape(self, x, shape):
        return x.reshape(shape)

    def concat(self, tensors, axis: int):
        return torch.cat(tensors, dim=axis)


_loaded_backends = {"torch": TorchBackend()}
_type2backend = {}


def get_backend(tensor):
    """Takes a correct backend (e.g. numpy backend if tensor is numpy.ndarray) for a tensor."""
    _type = type(tensor)
    _result = _type2backend.get(_type, None)
    if _result is not None:
        return _result

    for framework_name, backend in list(_loaded_backends.items()):
        if backend.is_appropriate_type(tensor):
            _type2backend[_type] = backend
            return backend

    raise RuntimeError("Tensor type unknown to einops {}".format(type(tensor)))


@lru_cache(maxsize=128)
def analyze_pattern(pattern: str, opname: str):
    # Maybe some validation of identifiers?
    axes = pattern.split()
    axes_set = set(axes)
    if len(axes) != len(axes_set):
        raise EinopsError(f'Duplicates in axes names in {opname}(..., "{pattern}")')
    if "*" not in axes_set:
        raise EinopsError(f'No *-axis in {opname}(..., "{pattern}")')
    for axis in axes:
        if axis != "*":
            is_valid, reason = ParsedExpression.check_axis_name_return_reason(axis)
            if not is_valid:
                raise EinopsError(f'Invalid axis name {axis} in {opname}(..., "{pattern}")')
    n_axes_before = axes.index("*")
    n_axes_after = len(axes) - n_axes_before - 1
    min_axes = n_axes_before + n_axes_after
    return n_axes_before, n_axes_after, min_axes


def pack(tensors, pattern: str):
    n_axes_before, n_axes_after, min_axes = analyze_pattern(pattern, "pack")

    # packing zero tensors is illegal
    backend = get_backend(tensors[0])

    reshaped_tensors = []
    packed_shapes = []
    for i, tensor in enumerate(tensors):
        shape = backend.shape(tensor)
        if len(shape) < min_axes:
            raise EinopsError(
                f"packed tensor #{i} (enumeration starts with 0) has shape {shape}, "
                f"while pattern {pattern} assumes at least {min_axes} axes"
            )
        axis_after_packed_axes = len(shape) - n_axes_after
        packed_shapes.append(shape[n_axes_before:axis_after_packed_axes])
        reshaped_tensors.append(backend.reshape(tensor, (*shape[:n_axes_before], -1, *shape[axis_after_packed_axes:])))

    return backend.concat(reshaped_tensors, axis=n_axes_before), packed_shapes


def prod(x) -> int:
    result = 1
    for i in x:
        result *= i
    return result


def unpack(tensor, packed_shapes, pattern: str):
    n_axes_before, n_axes_after, min_axes = analyze_pattern(pattern, opname="unpack")

    backend = get_backend(tensor)
    input_shape = backend.shape(tensor)
    if len(input_shape) != n_axes_before + 1 + n_axes_after:
        raise EinopsError(f"unpack(..., {pattern}) received input of wrong dim with shape {input_shape}")

    unpacked_axis: int = n_axes_before

    lengths_of_composed_axes = [-1 if -1 in p_shape else prod(p_shape) for p_shape in packed_shapes]

    n_unknown_composed_axes = sum(int(x == -1) for x in lengths_of_composed_axes)
    if n_unknown_composed_axes > 1:
        raise EinopsError(
            f"unpack(..., {pattern}) received more than one -1 in {packed_shapes} and can't infer dimensions"
        )

    # [[], [2, 3], [4], [-1, 5], [6]] < examples of packed_axis
    # split positions when computed should be
    # [0,   1,      7,   11,      N-6 , N ], where N = length of axis
    split_positions = [0] * len(packed_shapes) + [input_shape[unpacked_axis]]
    if n_unknown_composed_axes == 0:
        for i, x in enumerate(lengths_of_composed_axes[:-1]):
            split_positions[i + 1] = split_positions[i] + x
    else:
        unknown_composed_axis: int = lengths_of_composed_axes.index(-1)
        for i in range(unknown_composed_axis):
            split_positions[i + 1] = split_positions[i] + lengths_of_composed_axes[i]
        for j in range(unknown_composed_axis + 1, len(lengths_of_composed_axes))[::-1]:
            split_positions[j] = split_positions[j + 1] - lengths_of_composed_axes[j]

    shape_start = input_shape[:unpacked_axis]
    shape_end = input_shape[unpacked_axis + 1 :]
    slice_filler = (slice(None, None),) * unpacked_axis
    try:
        return [
            backend.reshape(
                # shortest way slice arbitrary axis
                tensor[(*slice_filler, slice(split_positions[i], split_positions[i + 1]))],
                (*shape_start, *element_shape, *shape_end),
            )
            for i, element_shape in enumerate(packed_shapes)
        ]
    except Exception as e:
        # this hits if there is an error during reshapes, which means passed shapes were incorrect
        raise EinopsError(
            f'Error during unpack(..., "{pattern}"): could not split axis of size {split_positions[-1]}'
            f" into requested {packed_shapes}"
        ) from e


class StartTokenTransformer(nn.Module):
    def __init__(self, num_tokens=20, dim=8):
        super().__init__()
        self.token_emb = nn.Embedding(num_tokens, dim)
        self.start_token = nn.Parameter(torch.randn(dim))
        self.ff = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.to_logits = nn.Linear(dim, num_tokens)

    def forward(self, ids, ps_override=None):
        x = self.token_emb(ids)
        start = self.start_token.expand(x.shape[0], -1)
        x, ps = pack([start, x], "b * d")
        x = x + self.ff(x)
        if ps_override is not None:
            ps = ps_override
        start, x = unpack(x, ps, "b * d")
        return self.to_logits(x), start


model = torch.compile(StartTokenTransformer())


def make():
    torch.manual_seed(0)
    ids = torch.randint(0, 20, (2, 5))
    return StartTokenTransformer(), [(ids,), (ids, [(), (-1,)])]
