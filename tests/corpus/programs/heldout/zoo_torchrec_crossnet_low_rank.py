"""TorchRec LowRankMixtureCrossNet (DCN-V2 with a mixture of low-rank experts): per-layer ParameterList kernels, gates only when `self._num_experts > 1`, softmax-gated MoE update (no data-dependent step).

Source: pytorch/torchrec@a48cef79ebc333da92af1311c04b041ee21a8e75:torchrec/modules/crossnet.py:265-440
Kept: __init__ and forward verbatim (xavier-initialised U/V/C kernels,
zero bias, the Optional gates ModuleList, the expert loop with the
activation callable, the num_experts branch).
Simplified: the DLRM-style model around it is a dense projection in front
and a logit head behind; 6 features, 2 layers, 3 experts, rank 2.
"""
from typing import Callable, Optional, Union

import torch


class LowRankMixtureCrossNet(torch.nn.Module):
    def __init__(
        self,
        in_features: int,
        num_layers: int,
        num_experts: int = 1,
        low_rank: int = 1,
        activation: Union[
            torch.nn.Module,
            Callable[[torch.Tensor], torch.Tensor],
        ] = torch.relu,
    ) -> None:
        super().__init__()
        assert num_experts >= 1, "num_experts must be larger or equal to 1"
        assert low_rank >= 1, "Low rank must be larger or equal to 1"

        self._num_layers = num_layers
        self._num_experts = num_experts
        self._low_rank = low_rank
        self._in_features = in_features
        self.U_kernels: torch.nn.Module = torch.nn.ParameterList(
            [
                torch.nn.Parameter(
                    torch.nn.init.xavier_normal_(
                        torch.empty(
                            self._num_experts, self._in_features, self._low_rank
                        )
                    )
                )
                for i in range(self._num_layers)
            ]
        )
        self.V_kernels: torch.nn.Module = torch.nn.ParameterList(
            [
                torch.nn.Parameter(
                    torch.nn.init.xavier_normal_(
                        torch.empty(
                            self._num_experts, self._low_rank, self._in_features
                        )
                    )
                )
                for i in range(self._num_layers)
            ]
        )
        self.bias: torch.nn.Module = torch.nn.ParameterList(
            [
                torch.nn.Parameter(
                    torch.nn.init.zeros_(torch.empty(self._in_features, 1))
                )
                for i in range(self._num_layers)
            ]
        )
        self.gates: Optional[torch.nn.Module] = (
            torch.nn.ModuleList(
                [
                    torch.nn.Linear(self._in_features, 1, bias=False)
                    for i in range(self._num_experts)
                ]
            )
            if self._num_experts > 1
            else None
        )

        self._activation = activation
        self.C_kernels: torch.nn.Module = torch.nn.ParameterList(
            [
                torch.nn.Parameter(
                    torch.nn.init.xavier_normal_(
                        torch.empty(self._num_experts, self._low_rank, self._low_rank)
                    )
                )
                for i in range(self._num_layers)
            ]
        )

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        x_0 = input.unsqueeze(2)  # (B, N, 1)
        x_l = x_0

        for layer in range(self._num_layers):
            # set up gating:
            if self._num_experts > 1:
                gating = []
                for i in range(self._num_experts):
                    # pyre-ignore[16]: `Optional` has no attribute `__getitem__`.
                    gating.append(self.gates[i](x_l.squeeze(2)))
                gating = torch.stack(gating, 1)  # (B, K, 1)

            # set up experts
            experts = []
            for i in range(self._num_experts):
                expert = torch.matmul(
                    # pyre-fixme[29]: `Union[Tensor, Module]` is not a function.
                    self.V_kernels[layer][i],
                    x_l,
                )  # (B, r, 1)
                expert = torch.matmul(
                    # pyre-fixme[29]: `Union[Tensor, Module]` is not a function.
                    self.C_kernels[layer][i],
                    self._activation(expert),
                )  # (B, r, 1)
                expert = torch.matmul(
                    # pyre-fixme[29]: `Union[Tensor, Module]` is not a function.
                    self.U_kernels[layer][i],
                    self._activation(expert),
                )  # (B, N, 1)
                # pyre-fixme[29]: `Union[Tensor, Module]` is not a function.
                expert = x_0 * (expert + self.bias[layer])  # (B, N, 1)
                experts.append(expert.squeeze(2))  # (B, N)
            experts = torch.stack(experts, 2)  # (B, N, K)

            if self._num_experts > 1:
                # MOE update
                moe = torch.matmul(
                    experts,
                    # pyre-ignore[61]: `gating` may not be initialized here.
                    torch.nn.functional.softmax(gating, 1),
                )  # (B, N, 1)
                x_l = moe + x_l  # (B, N, 1)
            else:
                x_l = experts + x_l  # (B, N, 1)

        return torch.squeeze(x_l, dim=2)  # (B, N)


class DCNInteraction(torch.nn.Module):
    """Dense features -> LowRankMixtureCrossNet -> logit, the DLRM_DCN over-arch path."""

    def __init__(self, in_features: int = 6, num_layers: int = 2, num_experts: int = 3, low_rank: int = 2):
        super().__init__()
        self.dense = torch.nn.Linear(in_features, in_features)
        self.crossnet = LowRankMixtureCrossNet(
            in_features=in_features, num_layers=num_layers, num_experts=num_experts, low_rank=low_rank
        )
        self.over = torch.nn.Linear(in_features, 1)

    def forward(self, dense_features: torch.Tensor) -> torch.Tensor:
        return self.over(self.crossnet(self.dense(dense_features)))


def make():
    torch.manual_seed(0)
    return DCNInteraction(), [(torch.randn(4, 6),)]


def build_train_model():
    model = DCNInteraction()
    model.compile(fullgraph=False)
    return model
