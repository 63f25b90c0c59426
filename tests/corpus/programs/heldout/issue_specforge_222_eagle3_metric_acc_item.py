"""EAGLE-3 draft training metric: compiled accuracy helper returning `.sum().item() / (mask.sum().item() + eps)`.

Source: sgl-project/SpecForge#222 (https://github.com/sgl-project/SpecForge/pull/222)
Code: sgl-project/SpecForge@aca179d2^:specforge/core/eagle3.py:785-789 (the
version the PR fixes) and its caller in OfflineEagle3Model.forward (TTT loop,
step 5.5) at lines 418-433.
Kept: `@torch.compile(dynamic=None)` on `_compute_metric_acc(logits, target_p,
position_mask, loss_mask)` and its body (argmax agreement between draft logits
and target probabilities, masked by `position_mask.squeeze(-1)`, summed and
turned into a Python float with `.item()`, divided by
`loss_mask.sum().item() + 1e-6`) - the reported `Graph break from
Tensor.item()`; the caller appends it to `acces` under `torch.no_grad()` once
per TTT step.
Simplified: draft vocab 32000 -> 8, batch 1 x seq 5; the draft backbone and
loss of the TTT loop are left out (main() feeds random logits).
"""
import torch


@torch.compile(dynamic=None)
def _compute_metric_acc(logits, target_p, position_mask, loss_mask):
    return (
        (logits.argmax(-1) == target_p.argmax(-1)) * position_mask.squeeze(-1)
    ).sum().item() / (loss_mask.sum().item() + 1e-6)


def main(length=3):
    acces = []
    loss_mask = torch.ones(1, 5, 1)
    position_mask = torch.ones(1, 5, 1, dtype=torch.int)
    target_p = torch.softmax(torch.randn(1, 5, 8), dim=-1)
    for idx in range(length):
        logits = torch.randn(1, 5, 8)
        # Step 5.5: record metrics
        with torch.no_grad():
            acces.append(
                _compute_metric_acc(
                    logits=logits,
                    target_p=target_p,
                    position_mask=position_mask,
                    loss_mask=loss_mask,
                )
            )
    return acces


def make():
    torch.manual_seed(0)
    logits = torch.randn(1, 5, 8)
    target_p = torch.softmax(torch.randn(1, 5, 8), dim=-1)
    position_mask = torch.tensor([[[1], [1], [0], [1], [0]]], dtype=torch.int)
    loss_mask = torch.tensor([[[1.0], [1.0], [1.0], [1.0], [0.0]]])
    return _compute_metric_acc._torchdynamo_orig_callable, [(logits, target_p, position_mask, loss_mask)]
