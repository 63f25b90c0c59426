"""VisualBERT embeddings at v4.52.4: `if (image_text_alignment_mask == 0).sum() != 0:` masked fix-up plus logger.warning before dividing.

Source: huggingface/transformers@v4.52.4:src/transformers/models/visual_bert/modeling_visual_bert.py:77-173
Kept: the image_text_alignment path: the -1 padding mask, masked position
ids, position-embedding sum over the alignment axis, the zero-count check
with a masked write and logger.warning, the division, visual position ids
and the length check against visual_embeds.
Simplified: visual projection and token-type embeddings are small linears;
dim 4.
"""
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class VisualBertEmbeddings(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.position_embeddings = nn.Embedding(8, dim)
        self.visual_projection = nn.Linear(6, dim)
        self.visual_token_type = nn.Embedding(2, dim)
        self.visual_position_embeddings = nn.Embedding(8, dim)

    def forward(self, visual_embeds, image_text_alignment=None):
        visual_embeds = self.visual_projection(visual_embeds)
        token_type_embeddings = self.visual_token_type(torch.ones(visual_embeds.shape[:-1], dtype=torch.long))
        if image_text_alignment is not None:
            dtype = token_type_embeddings.dtype
            image_text_alignment_mask = (image_text_alignment != -1).long()
            image_text_alignment = image_text_alignment_mask * image_text_alignment
            visual_position_embeddings = self.position_embeddings(image_text_alignment)
            visual_position_embeddings *= image_text_alignment_mask.to(dtype=dtype).unsqueeze(-1)
            visual_position_embeddings = visual_position_embeddings.sum(2)
            image_text_alignment_mask = image_text_alignment_mask.to(dtype=dtype).sum(2)
            if (image_text_alignment_mask == 0).sum() != 0:
                image_text_alignment_mask[image_text_alignment_mask == 0] = 1
                logger.warning(
                    "Found 0 values in `image_text_alignment_mask`. Setting them to 1 to avoid divide-by-zero"
                    " error."
                )
            visual_position_embeddings = visual_position_embeddings / image_text_alignment_mask.unsqueeze(-1)
            visual_position_ids = torch.zeros(*visual_embeds.size()[:-1], dtype=torch.long, device=visual_embeds.device)
            if visual_position_embeddings.size(1) != visual_embeds.size(1):
                if visual_position_embeddings.size(1) < visual_embeds.size(1):
                    raise ValueError(f"Visual position embeddings length: {visual_position_embeddings.size(1)} should be the same as `visual_embeds` length: {visual_embeds.size(1)}")
                visual_position_embeddings = visual_position_embeddings[:, : visual_embeds.size(1), :]
            visual_position_embeddings = visual_position_embeddings + self.visual_position_embeddings(visual_position_ids)
        else:
            visual_position_ids = torch.zeros(*visual_embeds.size()[:-1], dtype=torch.long, device=visual_embeds.device)
            visual_position_embeddings = self.visual_position_embeddings(visual_position_ids)
        return visual_embeds + visual_position_embeddings + token_type_embeddings


embeddings = torch.compile(VisualBertEmbeddings())


def make():
    torch.manual_seed(0)
    vis = torch.randn(1, 2, 6)
    aligned = torch.tensor([[[1, 2], [3, -1]]])
    unaligned = torch.tensor([[[1, 2], [-1, -1]]])
    return VisualBertEmbeddings(), [(vis,), (vis, aligned), (vis, unaligned)]
