"""uni2ts (Moirai) PackedStdScaler: packed sequences are normalised per (sample_id, dimension_id) group through an `id_mask` outer comparison, `safe_div` guards zero counts with `torch.where`, and padding rows are reset with boolean-mask stores `loc[sample_id == 0] = 0`.

Source: SalesforceAIResearch/uni2ts@074de9673ada9e358e8ac143f0cd6d77c141b1de:src/uni2ts/module/packed_scaler.py:26-118
Also: src/uni2ts/common/torch_util.py (safe_div), src/uni2ts/model/moirai/module.py
(the scaler call at the top of MoiraiModule.forward).
Kept: PackedScaler.forward (None defaults, the double round trip) and
PackedStdScaler._get_loc_scale verbatim.
Simplified: einops `reduce(..., "... seq dim -> ... 1 seq", "sum")` and
`"... seq1 seq2 -> ... seq1 1"` are written as sum/transpose; jaxtyping annotations
become plain torch.Tensor; the compiled module is the scaling prefix of
MoiraiModule.forward followed by an input projection; 8 packed steps, 1 variate.
"""
from typing import Optional

import torch
from torch import nn


def safe_div(
    numer: torch.Tensor,
    denom: torch.Tensor,
) -> torch.Tensor:
    return numer / torch.where(
        denom == 0,
        1.0,
        denom,
    )


class PackedScaler(nn.Module):
    def forward(
        self,
        target: torch.Tensor,
        observed_mask: torch.Tensor = None,
        sample_id: torch.Tensor = None,
        dimension_id: Optional[torch.Tensor] = None,
    ):
        if observed_mask is None:
            observed_mask = torch.ones_like(target, dtype=torch.bool)
        if sample_id is None:
            sample_id = torch.zeros(
                target.shape[:-1], dtype=torch.long, device=target.device
            )
        if dimension_id is None:
            dimension_id = torch.zeros(
                target.shape[:-1], dtype=torch.long, device=target.device
            )

        loc, scale = self._get_loc_scale(
            target.double(), observed_mask, sample_id, dimension_id
        )
        return loc.float(), scale.float()

    def _get_loc_scale(
        self,
        target: torch.Tensor,
        observed_mask: torch.Tensor,
        sample_id: torch.Tensor,
        dimension_id: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError


class PackedStdScaler(PackedScaler):
    def __init__(self, correction: int = 1, minimum_scale: float = 1e-5):
        super().__init__()
        self.correction = correction
        self.minimum_scale = minimum_scale

    def _get_loc_scale(
        self,
        target: torch.Tensor,
        observed_mask: torch.Tensor,
        sample_id: torch.Tensor,
        dimension_id: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        id_mask = torch.logical_and(
            torch.eq(sample_id.unsqueeze(-1), sample_id.unsqueeze(-2)),
            torch.eq(dimension_id.unsqueeze(-1), dimension_id.unsqueeze(-2)),
        )
        tobs = (
            id_mask * observed_mask.sum(-1).unsqueeze(-2)
        ).sum(-1, keepdim=True)
        loc = (
            id_mask * (target * observed_mask).sum(-1).unsqueeze(-2)
        ).sum(-1, keepdim=True)
        loc = safe_div(loc, tobs)
        var = (
            id_mask
            * (((target - loc) ** 2) * observed_mask).sum(-1).unsqueeze(-2)
        ).sum(-1, keepdim=True)
        var = safe_div(var, (tobs - self.correction))
        scale = torch.sqrt(var + self.minimum_scale)
        loc[sample_id == 0] = 0
        scale[sample_id == 0] = 1
        return loc, scale


class MoiraiInput(nn.Module):
    def __init__(self, patch_size=4, d_model=8):
        super().__init__()
        self.scaler = PackedStdScaler()
        self.in_proj = nn.Linear(patch_size, d_model)

    def forward(self, target, observed_mask, sample_id, time_id, variate_id, prediction_mask):
        loc, scale = self.scaler(
            target,
            observed_mask * ~prediction_mask.unsqueeze(-1),
            sample_id,
            variate_id,
        )
        scaled_target = (target - loc) / scale
        return self.in_proj(scaled_target)


moirai_input = torch.compile(MoiraiInput())


def make():
    torch.manual_seed(0)
    target = torch.randn(2, 8, 4) * 3 + 1
    observed_mask = torch.ones(2, 8, 4, dtype=torch.bool)
    observed_mask[0, 5, :2] = False
    sample_id = torch.tensor([[1, 1, 1, 2, 2, 2, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]])
    time_id = torch.tensor([[0, 1, 2, 0, 1, 2, 0, 0], [0, 1, 2, 3, 4, 5, 6, 7]])
    variate_id = torch.zeros(2, 8, dtype=torch.long)
    prediction_mask = torch.zeros(2, 8, dtype=torch.bool)
    prediction_mask[:, -2:] = True
    return MoiraiInput(), [
        (target, observed_mask, sample_id, time_id, variate_id, prediction_mask),
        (target[:1], observed_mask[:1], sample_id[:1], time_id[:1], variate_id[:1], prediction_mask[:1]),
    ]
