"""LLaVA at v4.52.4: the token/feature mismatch check is skipped under `is_torchdynamo_compiling()` (no break).

Source: huggingface/transformers@v4.52.4:src/transformers/models/llava/modeling_llava.py:280-305
Kept: the inputs_embeds-based / input_ids-based special_image_mask, the
`not is_torchdynamo_compiling() and inputs_embeds[mask].numel() != ...` guard
raising ValueError, `.to(device, dtype)` of features and masked_scatter.
Simplified: vision tower + projector are one linear; hidden 8, image_token_id 5.
"""
import torch
from torch import nn


def is_torchdynamo_compiling():
    try:
        import torch
        return torch.compiler.is_compiling()
    except Exception:
        return False


class Config:
    image_token_id = 5


class LlavaModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = Config()
        self.embed_tokens = nn.Embedding(10, 8)
        self.multi_modal_projector = nn.Linear(6, 8)

    def get_input_embeddings(self):
        return self.embed_tokens

    def forward(self, input_ids=None, pixel_features=None, inputs_embeds=None):
        if inputs_embeds is None:
            inputs_embeds = self.get_input_embeddings()(input_ids)
        if pixel_features is not None:
            image_features = self.multi_modal_projector(pixel_features)
            if input_ids is None:
                special_image_mask = inputs_embeds == self.get_input_embeddings()(
                    torch.tensor(self.config.image_token_id, dtype=torch.long, device=inputs_embeds.device)
                )
                n_image_tokens = (special_image_mask).sum(dim=1).sum(dim=0)[0]
            else:
                special_image_mask = (input_ids == self.config.image_token_id).unsqueeze(-1)
                special_image_mask = special_image_mask.expand_as(inputs_embeds).to(inputs_embeds.device)
                n_image_tokens = (input_ids == self.config.image_token_id).sum()
            if not is_torchdynamo_compiling() and inputs_embeds[special_image_mask].numel() != image_features.numel():
                n_image_tokens = (input_ids == self.config.image_token_id).sum()
                n_image_features = image_features.shape[0] * image_features.shape[1]
                raise ValueError(
                    f"Image features and image tokens do not match: tokens: {n_image_tokens}, features {n_image_features}"
                )
            image_features = image_features.to(inputs_embeds.device, inputs_embeds.dtype)
            inputs_embeds = inputs_embeds.masked_scatter(special_image_mask, image_features)
        return inputs_embeds


def make():
    torch.manual_seed(0)
    return LlavaModel(), [(torch.tensor([[1, 5, 5, 2]]), torch.randn(1, 2, 6)), (torch.tensor([[1, 3, 2]]),)]


if __name__ == "__main__":
    model = torch.compile(LlavaModel(), dynamic=True)
