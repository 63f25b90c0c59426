"""nano-vllm ParallelLMHead: reads a global prefill Context and gathers the last token of each sequence via `cu_seqlens_q`.

Source: GeeeekExplorer/nano-vllm@08c00ed59ca20d04627e2ff79173a5e4c6a15aab:nanovllm/layers/embed_head.py:1-66
(Context from nanovllm/utils/context.py, the version with `is_prefill` and
`context_lens`, as set by ModelRunner.prepare_prefill)
Kept: VocabParallelEmbedding's partition bookkeeping, weight_loader and
masked tp forward; ParallelLMHead.forward as written: `get_context()`, `if
context.is_prefill:` gather at `context.cu_seqlens_q[1:] - 1`,
`.contiguous()`, `F.linear` with the shared weight, and the tp>1 gather
branch; the module-level `_CONTEXT` dataclass with set/get/reset.
Simplified: single process, so `dist.get_rank()` / `dist.get_world_size()`
are replaced by 0 / 1 (the tp>1 branches stay in the code, untaken);
vocab 32, hidden 16. The head is compiled on its own
(`torch.compile(lm_head)`) and called after a prefill `set_context(...)`
for two sequences of 3 and 4 tokens, as ModelRunner does.
"""
from dataclasses import dataclass

import torch
from torch import nn
import torch.nn.functional as F
import torch.distributed as dist


@dataclass
class Context:
    is_prefill: bool = False
    cu_seqlens_q: torch.Tensor | None = None
    cu_seqlens_k: torch.Tensor | None = None
    max_seqlen_q: int = 0
    max_seqlen_k: int = 0
    slot_mapping: torch.Tensor | None = None
    context_lens: torch.Tensor | None = None
    block_tables: torch.Tensor | None = None


_CONTEXT = Context()


def get_context():
    return _CONTEXT


def set_context(is_prefill, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=0, max_seqlen_k=0, slot_mapping=None, context_lens=None, block_tables=None):
    global _CONTEXT
    _CONTEXT = Context(is_prefill, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, slot_mapping, context_lens, block_tables)


def reset_context():
    global _CONTEXT
    _CONTEXT = Context()


class VocabParallelEmbedding(nn.Module):

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
    ):
        super().__init__()
        self.tp_rank = 0  # dist.get_rank() in the multi-GPU engine
        self.tp_size = 1  # dist.get_world_size()
        assert num_embeddings % self.tp_size == 0
        self.num_embeddings = num_embeddings
        self.num_embeddings_per_partition = self.num_embeddings // self.tp_size
        self.vocab_start_idx = self.num_embeddings_per_partition * self.tp_rank
        self.vocab_end_idx = self.vocab_start_idx + self.num_embeddings_per_partition
        self.weight = nn.Parameter(torch.empty(self.num_embeddings_per_partition, embedding_dim))
        self.weight.weight_loader = self.weight_loader

    def weight_loader(self, param: nn.Parameter, loaded_weight: torch.Tensor):
        param_data = param.data
        shard_size = param_data.size(0)
        start_idx = self.tp_rank * shard_size
        loaded_weight = loaded_weight.narrow(0, start_idx, shard_size)
        param_data.copy_(loaded_weight)

    def forward(self, x: torch.Tensor):
        if self.tp_size > 1:
            mask = (x >= self.vocab_start_idx) & (x < self.vocab_end_idx)
            x = mask * (x - self.vocab_start_idx)
        y = F.embedding(x, self.weight)
        if self.tp_size > 1:
            y = mask.unsqueeze(-1) * y
            dist.all_reduce(y)
        return y


class ParallelLMHead(VocabParallelEmbedding):

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        bias: bool = False,
    ):
        assert not bias
        super().__init__(num_embeddings, embedding_dim)

    def forward(self, x: torch.Tensor):
        context = get_context()
        if context.is_prefill:
            last_indices = context.cu_seqlens_q[1:] - 1
            x = x[last_indices].contiguous()
        logits = F.linear(x, self.weight)
        if self.tp_size > 1:
            all_logits = [torch.empty_like(logits) for _ in range(self.tp_size)] if self.tp_rank == 0 else None
            dist.gather(logits, all_logits, 0)
            logits = torch.cat(all_logits, -1) if self.tp_rank == 0 else None
        return logits


def load_lm_head():
    lm_head = ParallelLMHead(32, 16)
    lm_head.weight.weight_loader(lm_head.weight, torch.randn(32, 16))
    return lm_head


def make():
    torch.manual_seed(0)
    lm_head = load_lm_head()
    cu_seqlens = torch.tensor([0, 3, 7], dtype=torch.int32)
    set_context(True, cu_seqlens_q=cu_seqlens, cu_seqlens_k=cu_seqlens, max_seqlen_q=4, max_seqlen_k=4)
    return lm_head, [(torch.randn(7, 16),), (torch.randn(7, 16) * 2.0,)]


def main():
    return torch.compile(load_lm_head())
