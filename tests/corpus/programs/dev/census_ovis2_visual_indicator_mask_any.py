"""Ovis2 multimodal embedding: for each visual indicator token, `if mask.any():` before the boolean-mask write
`inputs_embeds[mask] = visual_indicator_features[i]`.

Source: huggingface/transformers@v5.23.0:src/transformers/models/ovis2/modeling_ovis2.py:560-590 (Ovis2Model.forward)
Census: penguinwu/oss-model-graph-break-corpus sweeps the VLM families; this is Ovis2's indicator-token merge.
Kept: the loop over `visual_indicator_token_ids`, both mask constructions (input_ids vs embeddings lookup with
`.all(-1)`), the `.any()` guard and the masked write; the language model call afterwards.
Simplified: the visual indicator features are an embedding table; the language model is a Linear.
"""
import torch
from torch import nn


class Ovis2Model(nn.Module):
    def __init__(self, vocab=12, hidden=4):
        super().__init__()
        self.visual_indicator_token_ids = [9, 10, 11]
        self.embed_tokens = nn.Embedding(vocab, hidden)
        self.visual_indicator_embed = nn.Embedding(3, hidden)
        self.language_model = nn.Linear(hidden, hidden)

    def get_input_embeddings(self):
        return self.embed_tokens

    def forward(self, input_ids=None, inputs_embeds=None):
        if inputs_embeds is None:
            inputs_embeds = self.get_input_embeddings()(input_ids)
        visual_indicator_features = self.visual_indicator_embed.weight
        for i, visual_indicator_id in enumerate(self.visual_indicator_token_ids):
            if input_ids is None:
                mask = inputs_embeds == self.get_input_embeddings()(
                    torch.tensor(visual_indicator_id, dtype=torch.long, device=inputs_embeds.device)
                )
                mask = mask.all(-1)
            else:
                mask = (input_ids == visual_indicator_id).to(inputs_embeds.device)

            if mask.any():
                inputs_embeds[mask] = visual_indicator_features[i].to(inputs_embeds.device, inputs_embeds.dtype)

        return self.language_model(inputs_embeds)


model = torch.compile(Ovis2Model())


def make():
    torch.manual_seed(0)
    m = Ovis2Model()
    ids = torch.tensor([[1, 9, 2, 10, 3]])
    with torch.no_grad():
        embeds = m.embed_tokens(ids)
    return m, [(ids,), (None, embeds.clone())]
