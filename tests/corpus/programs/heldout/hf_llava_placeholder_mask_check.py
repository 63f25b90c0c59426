"""LLaVA get_placeholder_mask at v5.23: token/feature count check through torch_compilable_check, then masked_scatter.

Source: huggingface/transformers@v5.23.0:src/transformers/models/llava/modeling_llava.py:192-214; src/transformers/utils/import_utils.py:1947-1995
Kept: the input_ids-is-None path comparing embeddings, the image-token mask,
n_image_tokens = mask.sum(), the f-string message formatting the tensor count,
torch_compilable_check (is_tracing shortcut to torch._check_tensor_all /
torch._check), and the masked_scatter in the caller.
Simplified: image features come from a linear projector; hidden 8, image_token_id 5.
"""
import torch
from torch import nn


def is_tracing():
    return torch.compiler.is_compiling() or torch.jit.is_tracing()


def torch_compilable_check(cond, msg, error_type=ValueError):
    if is_tracing():
        if isinstance(cond, torch.Tensor):
            torch._check_tensor_all(cond)
        else:
            torch._check(cond)
        return
    if not callable(msg):
        def msg_callable():
            return msg
    else:
        msg_callable = msg
    if isinstance(cond, torch.Tensor):
        torch._check_tensor_all_with(error_type, cond, msg_callable)
    else:
        torch._check_with(error_type, cond, msg_callable)


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

    def get_placeholder_mask(self, input_ids, inputs_embeds, image_features):
        if input_ids is None:
            special_image_mask = inputs_embeds == self.get_input_embeddings()(
                torch.full((), self.config.image_token_id, dtype=torch.long, device=inputs_embeds.device)
            )
            special_image_mask = special_image_mask.all(-1)
        else:
            special_image_mask = input_ids == self.config.image_token_id
        n_image_tokens = special_image_mask.sum()
        n_image_features = image_features.shape[0] * image_features.shape[1]
        special_image_mask = special_image_mask.unsqueeze(-1).to(inputs_embeds.device)
        torch_compilable_check(
            n_image_tokens * inputs_embeds.shape[-1] == image_features.numel(),
            f"Image features and image tokens do not match, tokens: {n_image_tokens}, features: {n_image_features}",
        )
        return special_image_mask

    def forward(self, input_ids, pixel_features):
        inputs_embeds = self.get_input_embeddings()(input_ids)
        image_features = self.multi_modal_projector(pixel_features)
        special_image_mask = self.get_placeholder_mask(input_ids, inputs_embeds=inputs_embeds, image_features=image_features)
        inputs_embeds = inputs_embeds.masked_scatter(special_image_mask.expand_as(inputs_embeds), image_features)
        return inputs_embeds


model = torch.compile(LlavaModel())


def make():
    torch.manual_seed(0)
    return LlavaModel(), [(torch.tensor([[1, 5, 5, 2]]), torch.randn(1, 2, 6))]
