"""PyKEEN BasicNegativeSampler.corrupt_batch: repeat_interleave, a zip(range) loop over corruption sides and
in-place random replacement of a column slice.

Source: pykeen/pykeen@05c7bbb20c952f3e5e958e694344ace4005b1bbb:src/pykeen/sampling/basic_negative_sampler.py:18-105,
src/pykeen/sampling/negative_sampler.py:18-94 (NegativeSampler.__init__ / sample)
Kept: random_replacement_ verbatim, corrupt_batch verbatim (math.ceil split, zip(..., strict=False), the
`max_index=self.num_relations if index == 1 else self.num_entities` switch), sample() with filterer None,
num_entities / num_relations read from the mapped triples with `.item()` at construction time.
Simplified: no class_resolver filterer; LABEL_HEAD/LABEL_TAIL/TARGET_TO_INDEX constants inlined.
"""
import math

import torch
from torch import nn

LABEL_HEAD = "head"
LABEL_RELATION = "relation"
LABEL_TAIL = "tail"
TARGET_TO_INDEX = {LABEL_HEAD: 0, LABEL_RELATION: 1, LABEL_TAIL: 2}


def random_replacement_(batch, index, selection, size, max_index):
    """Replace a column of a batch of indices by random indices."""
    # At least make sure to not replace the triples by the original value
    # To make sure we don't replace the {head, relation, tail} by the
    # original value we shift all values greater or equal than the original value by one up
    # for that reason we choose the random value from [0, num_{heads, relations, tails} -1]
    replacement = torch.randint(
        high=max_index - 1,
        size=(size,),
        device=batch.device,
    )
    replacement += (replacement >= batch[selection, index]).long()
    batch[selection, index] = replacement


class NegativeSampler(nn.Module):
    def __init__(self, *, mapped_triples, num_entities=None, num_relations=None, num_negs_per_pos=None,
                 filtered=False, filterer=None):
        super().__init__()
        self.num_entities = num_entities or mapped_triples[:, [0, 2]].max().item() + 1
        self.num_relations = num_relations or mapped_triples[:, 1].max().item() + 1
        self.num_negs_per_pos = num_negs_per_pos if num_negs_per_pos is not None else 1
        self.filterer = filterer if filtered else None

    def sample(self, positive_batch):
        negative_batch = self.corrupt_batch(positive_batch=positive_batch)

        if self.filterer is None:
            return negative_batch, None

        return negative_batch, self.filterer(negative_batch=negative_batch)

    def corrupt_batch(self, positive_batch):
        raise NotImplementedError


class BasicNegativeSampler(NegativeSampler):
    def __init__(self, *, corruption_scheme=None, **kwargs):
        super().__init__(**kwargs)
        self.corruption_scheme = corruption_scheme or (LABEL_HEAD, LABEL_TAIL)
        # Set the indices
        self._corruption_indices = [TARGET_TO_INDEX[side] for side in self.corruption_scheme]

    def corrupt_batch(self, positive_batch):
        batch_shape = positive_batch.shape[:-1]

        # clone positive batch for corruption (.repeat_interleave creates a copy)
        negative_batch = positive_batch.view(-1, 3).repeat_interleave(self.num_negs_per_pos, dim=0)

        # Bind the total number of negatives to sample in this batch
        total_num_negatives = negative_batch.shape[0]

        # Equally corrupt all sides
        split_idx = int(math.ceil(total_num_negatives / len(self._corruption_indices)))

        # Do not detach, as no gradients should flow into the indices.
        for index, start in zip(self._corruption_indices, range(0, total_num_negatives, split_idx), strict=False):
            stop = min(start + split_idx, total_num_negatives)
            random_replacement_(
                batch=negative_batch,
                index=index,
                selection=slice(start, stop),
                size=stop - start,
                max_index=self.num_relations if index == 1 else self.num_entities,
            )

        return negative_batch.view(*batch_shape, self.num_negs_per_pos, 3)


def build_sampler():
    mapped_triples = torch.tensor([[0, 0, 1], [1, 1, 2], [2, 0, 3], [3, 2, 0], [4, 1, 5]])
    return BasicNegativeSampler(
        mapped_triples=mapped_triples,
        num_negs_per_pos=3,
        corruption_scheme=(LABEL_HEAD, LABEL_RELATION, LABEL_TAIL),
    )


def make():
    torch.manual_seed(0)
    sampler = build_sampler()
    positive_batch = torch.tensor([[0, 0, 1], [1, 1, 2], [2, 0, 3], [4, 1, 5]])
    return sampler.sample, [(positive_batch,)]


if __name__ == "__main__":
    sampler = build_sampler()
    sample = torch.compile(sampler.sample)
    print(sample(torch.tensor([[0, 0, 1], [1, 1, 2]]))[0].shape)
