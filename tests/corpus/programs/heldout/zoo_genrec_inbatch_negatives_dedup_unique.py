"""HSTU / generative-recommenders in-batch negative sampling: `process_batch` caches the present items' embeddings (boolean-mask indexing, optional dedup with `torch.unique(return_inverse=True)` and a scatter of offsets), then `forward` draws `torch.randint` offsets into the cache.

Source: facebookresearch/generative-recommenders@2deb5ac3ee2e4bb9449cb54d9a3da7909d4525f1:generative_recommenders/modeling/sequential/autoregressive_losses.py:28-187
Kept: NegativesSampler (`_maybe_l2_norm` with torch.linalg.norm / clamp, the abstract methods),
LocalNegativesSampler and InBatchNegativesSampler verbatim (debug_str f-strings, the size
asserts, the dedup path, `self._cached_*` attributes set in process_batch and read in forward).
The compile target mirrors the training loop (generative_recommenders/research/trainer/train.py):
`in_batch_ids = supervision_ids.view(-1)`, `process_batch(..., presences=(in_batch_ids != 0), ...)`
for "in-batch", else `negatives_sampler._item_emb = ...`, then `ar_mask = supervision_ids[:, 1:] != 0`.
Simplified: the model forward and the fbgemm dense_to_jagged inside the loss are replaced by
boolean-mask indexing of the supervision ids, and the sampler is called directly (as
jagged_forward does) instead of through the loss; 2 x 6 sequences, 8-dim embeddings,
4 negatives per position.
"""
import abc
from typing import List, Tuple

import torch


class NegativesSampler(torch.nn.Module):
    def __init__(self, l2_norm: bool, l2_norm_eps: float) -> None:
        super().__init__()

        self._l2_norm: bool = l2_norm
        self._l2_norm_eps: float = l2_norm_eps

    def normalize_embeddings(self, x: torch.Tensor) -> torch.Tensor:
        return self._maybe_l2_norm(x)

    def _maybe_l2_norm(self, x: torch.Tensor) -> torch.Tensor:
        if self._l2_norm:
            x = x / torch.clamp(
                torch.linalg.norm(x, ord=2, dim=-1, keepdim=True),
                min=self._l2_norm_eps,
            )
        return x

    @abc.abstractmethod
    def debug_str(self) -> str:
        pass

    @abc.abstractmethod
    def process_batch(
        self,
        ids: torch.Tensor,
        presences: torch.Tensor,
        embeddings: torch.Tensor,
    ) -> None:
        pass

    @abc.abstractmethod
    def forward(
        self,
        positive_ids: torch.Tensor,
        num_to_sample: int,
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """
        Returns:
            A tuple of (sampled_ids, sampled_negative_embeddings).
        """
        pass


class LocalNegativesSampler(NegativesSampler):
    def __init__(
        self,
        num_items: int,
        item_emb: torch.nn.Embedding,
        all_item_ids: List[int],
        l2_norm: bool,
        l2_norm_eps: float,
    ) -> None:
        super().__init__(l2_norm=l2_norm, l2_norm_eps=l2_norm_eps)

        self._num_items: int = len(all_item_ids)
        self._item_emb: torch.nn.Embedding = item_emb
        self.register_buffer("_all_item_ids", torch.tensor(all_item_ids))

    def debug_str(self) -> str:
        sampling_debug_str = (
            f"local{f'-l2-eps{self._l2_norm_eps}' if self._l2_norm else ''}"
        )
        return sampling_debug_str

    def process_batch(
        self,
        ids: torch.Tensor,
        presences: torch.Tensor,
        embeddings: torch.Tensor,
    ) -> None:
        pass

    def forward(
        self,
        positive_ids: torch.Tensor,
        num_to_sample: int,
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """
        Returns:
            A tuple of (sampled_ids, sampled_negative_embeddings).
        """
        # assert torch.max(torch.abs(self._item_emb(positive_ids) - positive_embeddings)) < 1e-4
        output_shape = positive_ids.size() + (num_to_sample,)
        sampled_offsets = torch.randint(
            low=0,
            high=self._num_items,
            size=output_shape,
            dtype=positive_ids.dtype,
            device=positive_ids.device,
        )
        sampled_ids = self._all_item_ids[sampled_offsets.view(-1)].reshape(output_shape)
        return sampled_ids, self.normalize_embeddings(self._item_emb(sampled_ids))


class InBatchNegativesSampler(NegativesSampler):
    def __init__(
        self,
        l2_norm: bool,
        l2_norm_eps: float,
        dedup_embeddings: bool,
    ) -> None:
        super().__init__(l2_norm=l2_norm, l2_norm_eps=l2_norm_eps)

        self._dedup_embeddings: bool = dedup_embeddings

    def debug_str(self) -> str:
        sampling_debug_str = (
            f"in-batch{f'-l2-eps{self._l2_norm_eps}' if self._l2_norm else ''}"
        )
        if self._dedup_embeddings:
            sampling_debug_str += "-dedup"
        return sampling_debug_str

    def process_batch(
        self,
        ids: torch.Tensor,
        presences: torch.Tensor,
        embeddings: torch.Tensor,
    ) -> None:
        """
        Args:
           ids: (N') or (B, N) x int64
           presences: (N') or (B, N) x bool
           embeddings: (N', D) or (B, N, D) x float
        """
        assert ids.size() == presences.size()
        assert ids.size() == embeddings.size()[:-1]
        if self._dedup_embeddings:
            valid_ids = ids[presences]
            unique_ids, unique_ids_inverse_indices = torch.unique(
                input=valid_ids, sorted=False, return_inverse=True
            )
            device = unique_ids.device
            unique_embedding_offsets = torch.empty(
                (unique_ids.numel(),),
                dtype=torch.int64,
                device=device,
            )
            unique_embedding_offsets[unique_ids_inverse_indices] = torch.arange(
                valid_ids.numel(), dtype=torch.int64, device=device
            )
            unique_embeddings = embeddings[presences][unique_embedding_offsets, :]
            self._cached_embeddings = self._maybe_l2_norm(unique_embeddings)
            self._cached_ids = unique_ids
        else:
            self._cached_embeddings = self._maybe_l2_norm(embeddings[presences])
            self._cached_ids = ids[presences]

    def get_all_ids_and_embeddings(self) -> Tuple[torch.Tensor, torch.Tensor]:
        return self._cached_ids, self._cached_embeddings

    def forward(
        self,
        positive_ids: torch.Tensor,
        num_to_sample: int,
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """
        Returns:
            A tuple of (sampled_ids, sampled_negative_embeddings,).
        """
        X = self._cached_ids.size(0)
        sampled_offsets = torch.randint(
            low=0,
            high=X,
            size=positive_ids.size() + (num_to_sample,),
            dtype=positive_ids.dtype,
            device=positive_ids.device,
        )
        return (
            self._cached_ids[sampled_offsets],
            self._cached_embeddings[sampled_offsets],
        )


@torch.compile(dynamic=False)
def sample_negatives(negatives_sampler, sampling_strategy, item_emb, supervision_ids, num_negatives):
    if sampling_strategy == "in-batch":
        # get_item_embeddings currently assume 1-d tensor.
        in_batch_ids = supervision_ids.view(-1)
        negatives_sampler.process_batch(
            ids=in_batch_ids,
            presences=(in_batch_ids != 0),
            embeddings=item_emb(in_batch_ids),
        )
    else:
        negatives_sampler._item_emb = item_emb

    ar_mask = supervision_ids[:, 1:] != 0
    # the loss samples negatives for the jagged (valid) supervision ids
    jagged_supervision_ids = supervision_ids[:, 1:][ar_mask]
    sampled_ids, sampled_negative_embeddings = negatives_sampler(
        positive_ids=jagged_supervision_ids,
        num_to_sample=num_negatives,
    )
    return sampled_ids, sampled_negative_embeddings


def make():
    torch.manual_seed(0)
    num_items, dim = 20, 8
    item_emb = torch.nn.Embedding(num_items + 1, dim, padding_idx=0)
    supervision_ids = torch.tensor([[3, 5, 3, 7, 0, 0], [2, 5, 9, 11, 4, 0]])
    dedup = InBatchNegativesSampler(l2_norm=True, l2_norm_eps=1e-6, dedup_embeddings=True)
    plain = InBatchNegativesSampler(l2_norm=False, l2_norm_eps=1e-6, dedup_embeddings=False)
    local = LocalNegativesSampler(num_items, item_emb, list(range(1, num_items + 1)),
                                  l2_norm=True, l2_norm_eps=1e-6)
    return sample_negatives._torchdynamo_orig_callable, [
        (dedup, "in-batch", item_emb, supervision_ids, 4),
        (plain, "in-batch", item_emb, supervision_ids, 4),
        (local, "local", item_emb, supervision_ids, 4),
    ]
