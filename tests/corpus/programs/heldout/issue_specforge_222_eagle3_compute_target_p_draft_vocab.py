"""EAGLE-3 target distribution over the draft vocab: compiled `t2d` gather/mask/softmax, padded for the TTT steps.

Source: sgl-project/SpecForge#222 (https://github.com/sgl-project/SpecForge/pull/222)
Code: sgl-project/SpecForge@aca179d2^:specforge/core/eagle3.py:751-782 (the
file the PR edits; this helper sits next to the `.item()` metric it fixes).
Kept: `_compute_target_p_padded(target, t2d, loss_mask, length)` (under
`torch.no_grad()`, calls the compiled helper, `assert len(target_p.shape) == 3`,
`F.pad` of the sequence axis by `length` with value `1 / vocab`) and the
`@torch.compile(dynamic=None)` helper `_compute_target_p` (argmax of the target
head, boolean `t2d[target_max_token]` lookup, `[..., None].int()` times
`loss_mask`, vocab selection with `target_head[..., t2d]`, float cast,
`nn.Softmax(dim=2)(...)` built inline, `.detach()`, tuple return).
Simplified: target vocab 32000 -> 12 with a 6-token draft vocab, batch 1 x
seq 5, length 3.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def _compute_target_p_padded(target, t2d, loss_mask, length):
    with torch.no_grad():
        target_p, position_mask = _compute_target_p(
            target=target,
            t2d=t2d,
            loss_mask=loss_mask,
        )

        assert len(target_p.shape) == 3
        target_p_padded = F.pad(
            target_p,
            pad=(0, 0, 0, length),
            mode="constant",
            # For bitwise equality with previous code
            value=1 / target_p.shape[-1],
        )

        return target_p_padded, position_mask


@torch.compile(dynamic=None)
def _compute_target_p(target, t2d, loss_mask):
    target_head = target
    target_max_token = target_head.argmax(-1)
    target_mask = t2d[target_max_token]
    target_mask = target_mask[..., None].int()
    position_mask = target_mask * loss_mask
    target_head = target_head[..., t2d]
    target_head = target_head.float()
    target_p = nn.Softmax(dim=2)(target_head)
    target_p = target_p.detach()
    return target_p, position_mask


def make():
    torch.manual_seed(0)
    target = torch.randn(1, 5, 12)
    t2d = torch.tensor([True, False, True, True, False, False, True, False, True, False, True, False])
    loss_mask = torch.tensor([[[1], [1], [1], [0], [1]]])
    return _compute_target_p._torchdynamo_orig_callable, [(target, t2d, loss_mask)]
