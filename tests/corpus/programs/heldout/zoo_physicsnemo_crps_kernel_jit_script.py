"""PhysicsNeMo crps(): method check, `torch.as_tensor(obs, ...)` on a tensor or a numpy array, then kcrps's movedim into a @torch.jit.script kernel-CRPS implementation.

Source: NVIDIA/physicsnemo@52243dae8380b1f07529ac39d9ce374fbde51d7b:physicsnemo/metrics/general/crps.py:29-92,290-360
Kept: _kernel_crps_implementation (TorchScript, sort + closed-form spread),
kcrps, and crps's method validation, `n = pred.shape[dim]`, as_tensor and
the kernel/sort dispatch.
Simplified: the "histogram" method (which needs histogram.cdf) raises here
instead of computing; _crps_gaussian / _crps_from_cdf are not used by the
dispatch kept and are dropped. The compile entry is an ensemble training
loss that averages the CRPS map.
"""
from typing import Union

import numpy as np
import torch

Tensor = torch.Tensor


# Note: Use @torch.jit.script (not @torch.compile) because the sorted() call and
# subsequent operations depend on input shapes. torch.compile recompiles for each
# unique shape, causing massive CI slowdowns when tests use varying ensemble sizes.
@torch.jit.script
def _kernel_crps_implementation(pred: Tensor, obs: Tensor, biased: bool) -> Tensor:
    """An O(m log m) implementation of the kernel CRPS formulas"""
    skill = torch.abs(pred - obs[..., None]).mean(-1)
    pred, _ = torch.sort(pred)

    m = pred.size(-1)
    i = torch.arange(1, m + 1, device=pred.device, dtype=pred.dtype)
    denom = m * m if biased else m * (m - 1)
    factor = (2 * i - m - 1) / denom
    spread = torch.sum(factor * pred, dim=-1)
    return skill - spread


def kcrps(pred: Tensor, obs: Tensor, dim: int = 0, biased: bool = True):
    pred = torch.movedim(pred, dim, -1)
    return _kernel_crps_implementation(pred, obs, biased=biased)


def crps(
    pred: Tensor, obs: Union[Tensor, np.ndarray], dim: int = 0, method: str = "kernel"
) -> Tensor:
    if method not in ["kernel", "sort", "histogram"]:
        raise ValueError("Method must either be 'kernel', 'sort' or 'histogram'.")

    n = pred.shape[dim]
    obs = torch.as_tensor(obs, device=pred.device, dtype=pred.dtype)
    if method in ["kernel", "sort"]:
        return kcrps(pred, obs, dim=dim)
    else:
        raise NotImplementedError("histogram CRPS needs histogram.cdf, not included")


def ensemble_crps_loss(ensemble: Tensor, target: Union[Tensor, np.ndarray], method: str = "kernel") -> Tensor:
    return crps(ensemble, target, dim=0, method=method).mean()


loss_fn = torch.compile(ensemble_crps_loss)


def make():
    torch.manual_seed(0)
    ensemble = torch.randn(5, 4, 3)
    target = torch.randn(4, 3)
    return ensemble_crps_loss, [
        (ensemble, target),
        (ensemble, target.numpy().copy(), "sort"),
        (ensemble, target, "spectral"),
    ]


RAISING_INPUTS = {2: "ValueError"}
