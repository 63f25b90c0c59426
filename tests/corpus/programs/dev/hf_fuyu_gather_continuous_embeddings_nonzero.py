"""Fuyu gather_continuous_embeddings: per-batch nonzero of patch indices, size check, indexed assignment.

Source: huggingface/transformers@v4.53.0:src/transformers/models/fuyu/modeling_fuyu.py:67-80,95-152
Kept: the method unchanged: the batch-size ValueError, word_embeddings.clone(),
`for batch_idx in range(word_embeddings.shape[0])` with
torch.nonzero(..., as_tuple=True)[0], src_indices lookup, the "more indices than
embeddings" ValueError, and the advanced-index assignment; get_image_features
producing the list of continuous embeddings.
Simplified: FuyuModel reduced to the embedding tables this method needs; the
compiled entry is the bound method, as a user would compile a helper.
"""
import torch
from torch import nn


class FuyuConfig:
    vocab_size = 20
    hidden_size = 8
    patch_size = 2
    num_channels = 1


class FuyuModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.vision_embed_tokens = nn.Linear(
            config.patch_size * config.patch_size * config.num_channels, config.hidden_size
        )

    def get_image_features(self, pixel_values, **kwargs):
        patch_embeddings = [
            self.vision_embed_tokens(patch.to(self.vision_embed_tokens.weight.dtype)).squeeze(0)
            for patch in pixel_values
        ]
        return patch_embeddings

    def gather_continuous_embeddings(self, word_embeddings, continuous_embeddings, image_patch_input_indices):
        if not (word_embeddings.shape[0] == len(continuous_embeddings)):
            raise ValueError(
                f"Batch sizes must match! Got {len(continuous_embeddings)=} and {word_embeddings.shape[0]=}"
            )

        output_embeddings = word_embeddings.clone()
        for batch_idx in range(word_embeddings.shape[0]):
            dst_indices = torch.nonzero(image_patch_input_indices[batch_idx] >= 0, as_tuple=True)[0]
            src_indices = image_patch_input_indices[batch_idx][dst_indices]
            if src_indices.shape[0] > continuous_embeddings[batch_idx].shape[0]:
                raise ValueError(
                    f"Number of continuous embeddings {continuous_embeddings[batch_idx].shape=} does not match "
                    f"number of continuous token ids {src_indices.shape=} in batch element {batch_idx}."
                )
            output_embeddings[batch_idx, dst_indices] = continuous_embeddings[batch_idx][src_indices].to(
                output_embeddings.device
            )
        return output_embeddings


fuyu = FuyuModel(FuyuConfig())
gather = torch.compile(fuyu.gather_continuous_embeddings)


def make():
    torch.manual_seed(0)
    m = FuyuModel(FuyuConfig())
    ids = torch.randint(0, 20, (2, 6))
    words = m.embed_tokens(ids).detach()
    patches = torch.randn(2, 3, 4)
    cont = [e.detach() for e in m.get_image_features(patches)]
    idx = torch.tensor([[0, 1, 2, -1, -1, -1], [-1, 0, -1, 1, -1, -1]])
    too_many = torch.tensor([[0, 1, 2, 3, -1, -1], [0, -1, -1, -1, -1, -1]])
    return m.gather_continuous_embeddings, [
        (words, cont, idx),
        (words, cont[:1], idx),
        (words, cont, too_many),
    ]


RAISING_INPUTS = {1: "ValueError", 2: "ValueError"}
