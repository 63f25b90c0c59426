"""Aria MoE `sequential_experts_gemm`: slice bounds `start = cumsum_num_tokens[expert_num]` are tensor
elements used in `token_states[start:end]`.

Source: huggingface/transformers@v5.5 (census version):src/transformers/models/aria/modeling_aria.py
(`sequential_experts_gemm`, `AriaGroupedExpertsGemm.forward`)
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): AriaModel / AriaTextModel eval+train,
`modeling_aria.py:272 tokens = token_states[start:end]` (reported as Tensor.item()).
Kept: the function body (zero output, cumsum with a leading zero, the per-expert slice/matmul/write-back)
and the grouped-GEMM module that calls it.
Simplified: 3 experts, in 4 / out 5 features; tokens are pre-sorted by expert.
"""
import torch
from torch import nn


def sequential_experts_gemm(token_states, expert_weights, tokens_per_expert):
    """
    Compute the matrix multiplication (GEMM) for each expert sequentially. This approach is computationally inefficient, especially when dealing with a large number of experts.
    """
    num_tokens = token_states.shape[0]
    out_features = expert_weights.shape[-1]
    output = torch.zeros(num_tokens, out_features, dtype=token_states.dtype, device=token_states.device)

    cumsum_num_tokens = torch.cumsum(tokens_per_expert, dim=0)
    # Insert zero at the begining for offset index's convenience
    zero_tensor = torch.zeros(1, dtype=torch.long, device=cumsum_num_tokens.device)
    cumsum_num_tokens = torch.cat((zero_tensor, cumsum_num_tokens))

    for expert_num in range(expert_weights.shape[0]):
        start = cumsum_num_tokens[expert_num]
        end = cumsum_num_tokens[expert_num + 1]
        tokens = token_states[start:end]

        out = torch.matmul(tokens, expert_weights[expert_num])
        output[start:end] = out
    return output


class AriaGroupedExpertsGemm(nn.Module):
    def __init__(self, in_features=4, out_features=5, groups=3):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.groups = groups
        self.weight = nn.Parameter(torch.randn(groups, in_features, out_features) * 0.1)

    def forward(self, input, tokens_per_expert):
        return sequential_experts_gemm(
            input,
            self.weight,
            tokens_per_expert.cpu(),
        )


gemm = torch.compile(AriaGroupedExpertsGemm())


def make():
    torch.manual_seed(0)
    return AriaGroupedExpertsGemm(), [(torch.randn(6, 4), torch.tensor([2, 3, 1]))]
