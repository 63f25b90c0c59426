"""PyKEEN ConvKB interaction scored against all tails with slicing: `Interaction.score_t` unsqueezes through
`parallel_unsqueeze` (isinstance Sequence check), `score` splits the representations with
`parallel_slice_batches` (numpy.cumsum offsets, a generator, `sum(map(list, rs), [])`) and concatenates the
per-slice ConvKB scores; ConvKB stacks broadcast h/r/t and convolves a (1, d, 3) image.

Source: pykeen/pykeen@05c7bbb20c952f3e5e958e694344ace4005b1bbb:src/pykeen/nn/modules.py:117-166
(parallel_slice_batches, parallel_unsqueeze), 169-427 (Interaction.score / score_t / reset_parameters),
993-1103 (ConvKBInteraction), src/pykeen/utils.py:680-766 (upgrade_to_sequence, ensure_tuple, unpack_singletons)
Kept: those functions and ConvKBInteraction verbatim (including reset_parameters' constant filter init), the
slice_size / slice_dim plumbing of score().
Simplified: typing generics, overloads and docstrings dropped; embedding_dim 6, 4 filters; evaluation-style
usage (eval mode, slice_size 3 over 7 entities) in a compiled helper.
"""
from collections.abc import Sequence

import numpy
import torch
from torch import nn


def upgrade_to_sequence(x):
    return x if (isinstance(x, Sequence) and not isinstance(x, str)) else (x,)


def ensure_tuple(*x):
    return tuple(upgrade_to_sequence(xx) for xx in x)


def unpack_singletons(*xs):
    return tuple(x[0] if len(x) == 1 else x for x in xs)


def parallel_slice_batches(*representations, split_size, dim):
    # normalize input
    rs = ensure_tuple(*representations)
    # get number of head/relation/tail representations
    length = list(map(len, rs))
    splits = numpy.cumsum([0] + length)
    # flatten list
    rsl = sum(map(list, rs), [])
    # split tensors
    parts = [r.split(split_size, dim=dim) for r in rsl]
    # broadcasting
    n_parts = max(map(len, parts))
    parts = [r_parts if len(r_parts) == n_parts else r_parts * n_parts for r_parts in parts]
    # yield batches
    for batch in zip(*parts, strict=False):
        # complex typing
        yield unpack_singletons(*(batch[start:stop] for start, stop in zip(splits, splits[1:], strict=False)))  # type: ignore[misc]


def parallel_unsqueeze(x, dim):
    """Unsqueeze all representations along the given dimension."""
    if not isinstance(x, Sequence):
        return x.unsqueeze(dim=dim)
    return [xx.unsqueeze(dim=dim) for xx in x]


class Interaction(nn.Module):
    """Base class for interaction functions."""

    def score(self, h, r, t, slice_size=None, slice_dim=1):
        if slice_size is None:
            return self(h=h, r=r, t=t)
        return torch.cat(
            [
                self(h=h_batch, r=r_batch, t=t_batch)
                for h_batch, r_batch, t_batch in parallel_slice_batches(h, r, t, split_size=slice_size, dim=slice_dim)
            ],
            dim=slice_dim,
        )

    def score_hrt(self, h, r, t):
        return self.score(h=h, r=r, t=t).unsqueeze(dim=-1)

    def score_t(self, h, r, all_entities, slice_size=None):
        return self.score(
            h=parallel_unsqueeze(h, dim=1),
            r=parallel_unsqueeze(r, dim=1),
            t=parallel_unsqueeze(all_entities, dim=0),
            slice_size=slice_size,
        )

    def reset_parameters(self):
        """Reset parameters the interaction function may have."""
        for mod in self.modules():
            if mod is self:
                continue
            if hasattr(mod, "reset_parameters"):
                mod.reset_parameters()


class ConvKBInteraction(Interaction):
    def __init__(
        self,
        hidden_dropout_rate: float = 0.0,
        embedding_dim: int = 200,
        num_filters: int = 400,
    ):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.num_filters = num_filters

        # The interaction model
        self.conv = nn.Conv2d(in_channels=1, out_channels=num_filters, kernel_size=(1, 3), bias=True)
        self.activation = nn.ReLU()
        self.hidden_dropout = nn.Dropout(p=hidden_dropout_rate)
        self.linear = nn.Linear(embedding_dim * num_filters, 1, bias=True)

    # docstr-coverage: inherited
    def reset_parameters(self):  # noqa: D102
        # Use Xavier initialization for weight; bias to zero
        nn.init.xavier_uniform_(self.linear.weight, gain=nn.init.calculate_gain("relu"))
        nn.init.zeros_(self.linear.bias)

        # Initialize all filters to [0.1, 0.1, -0.1],
        #  c.f. https://github.com/daiquocnguyen/ConvKB/blob/master/model.py#L34-L36
        nn.init.constant_(self.conv.weight[..., :2], 0.1)
        nn.init.constant_(self.conv.weight[..., 2], -0.1)
        nn.init.zeros_(self.conv.bias)

    def forward(self, h, r, t):
        # cat into shape (..., 1, d, 3)
        x = torch.stack(torch.broadcast_tensors(h, r, t), dim=-1).unsqueeze(dim=-3)
        s = x.shape
        x = x.view(-1, *s[-3:])
        x = self.conv(x)
        x = x.view(*s[:-3], -1)
        x = self.activation(x)

        # Apply dropout, cf. https://github.com/daiquocnguyen/ConvKB/blob/master/model.py#L54-L56
        x = self.hidden_dropout(x)

        # Linear layer for final scores; use flattened representations, shape: (*batch_dims, d * f)
        x = self.linear(x)
        return x.squeeze(dim=-1)


class TailPredictor(nn.Module):
    """Entity/relation embeddings plus the interaction, scored 1-to-all over tails in slices."""

    def __init__(self, num_entities=7, num_relations=3, embedding_dim=6, num_filters=4, slice_size=3):
        super().__init__()
        self.entity_embeddings = nn.Embedding(num_entities, embedding_dim)
        self.relation_embeddings = nn.Embedding(num_relations, embedding_dim)
        self.interaction = ConvKBInteraction(hidden_dropout_rate=0.1, embedding_dim=embedding_dim, num_filters=num_filters)
        self.interaction.reset_parameters()
        self.slice_size = slice_size

    def forward(self, hr_batch):
        h = self.entity_embeddings(hr_batch[:, 0])
        r = self.relation_embeddings(hr_batch[:, 1])
        return self.interaction.score_t(h=h, r=r, all_entities=self.entity_embeddings.weight, slice_size=self.slice_size)


predictor = torch.compile(TailPredictor().eval())


def make():
    torch.manual_seed(0)
    hr_batch = torch.tensor([[0, 1], [3, 0], [6, 2]])
    return TailPredictor().eval(), [(hr_batch,)]
