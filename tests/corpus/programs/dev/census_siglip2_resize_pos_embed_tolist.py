"""SigLIP2 vision embeddings: per-image `height, width = spatial_shapes[i].tolist()` drives F.interpolate of the positional grid.

Source: huggingface/transformers@v5.23.0:src/transformers/models/siglip2/modeling_siglip2.py:116-216
Census: penguinwu/oss-model-graph-break-corpus sweep_results/pt2.10 (Siglip2Model eval, modeling_siglip2.py:169 "Data dependent operator").
Kept: resize_positional_embeddings verbatim (static method, CPU upcast, the
loop over the batch, torch_compilable_check-style checks as torch._check,
padding with the first embedding) and the embeddings forward.
Simplified: the check helper is reduced to torch._check; 16 patches, dim 8.
"""
import torch
import torch.nn.functional as F
from torch import nn


def torch_compilable_check(cond, msg, error_type=ValueError):
    if not callable(msg):
        def msg_callable():
            return msg
    else:
        msg_callable = msg
    if isinstance(cond, torch.Tensor):
        torch._check_tensor_all_with(error_type, cond, msg_callable)
    else:
        torch._check_with(error_type, cond, msg_callable)


class Siglip2VisionConfig:
    hidden_size = 8
    num_channels = 3
    patch_size = 2
    num_patches = 16


class Siglip2VisionEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed_dim = config.hidden_size
        self.patch_size = config.patch_size
        self.patch_embedding = nn.Linear(
            in_features=config.num_channels * self.patch_size * self.patch_size,
            out_features=self.embed_dim,
        )
        self.num_patches = config.num_patches
        self.position_embedding_size = int(self.num_patches**0.5)
        self.position_embedding = nn.Embedding(self.num_patches, self.embed_dim)

    @staticmethod
    def resize_positional_embeddings(positional_embeddings, spatial_shapes, max_length):
        batch_size = spatial_shapes.shape[0]
        embed_dim = positional_embeddings.shape[-1]
        source_dtype = positional_embeddings.dtype

        resulted_positional_embeddings = torch.empty(
            (batch_size, max_length, embed_dim),
            device=positional_embeddings.device,
            dtype=source_dtype,
        )

        positional_embeddings = positional_embeddings.permute(2, 0, 1).unsqueeze(0)

        if positional_embeddings.device.type == "cpu":
            positional_embeddings = positional_embeddings.to(torch.float32)

        for i in range(batch_size):
            height, width = spatial_shapes[i].tolist()  # will be itemized in F.interpolate either way
            torch_compilable_check((width > 0), "Width of resized positional embeddings must be positive.")
            torch_compilable_check((height > 0), "Height of resized positional embeddings must be positive.")
            torch_compilable_check((height * width) <= max_length, "Resized positional embeddings exceed max_length.")
            resized_embeddings = F.interpolate(
                positional_embeddings,
                size=(height, width),
                mode="bilinear",
                align_corners=False,
                antialias=True,
            )
            resized_embeddings = resized_embeddings.reshape(embed_dim, height * width).transpose(0, 1)
            resized_embeddings = resized_embeddings.to(source_dtype)

            resulted_positional_embeddings[i, : height * width] = resized_embeddings
            resulted_positional_embeddings[i, height * width :] = resized_embeddings[0]

        return resulted_positional_embeddings

    def forward(self, pixel_values, spatial_shapes):
        target_dtype = self.patch_embedding.weight.dtype
        patch_embeds = self.patch_embedding(pixel_values.to(dtype=target_dtype))

        positional_embeddings = self.position_embedding.weight.reshape(
            self.position_embedding_size, self.position_embedding_size, -1
        )
        resized_positional_embeddings = self.resize_positional_embeddings(
            positional_embeddings, spatial_shapes, max_length=pixel_values.shape[1]
        )
        embeddings = patch_embeds + resized_positional_embeddings
        return embeddings


@torch.compile(dynamic=False)
def embed(module, pixel_values, spatial_shapes):
    return module(pixel_values, spatial_shapes)


def make():
    torch.manual_seed(0)
    pixel_values = torch.randn(2, 12, 12)
    spatial_shapes = torch.tensor([[3, 4], [2, 5]])
    module = Siglip2VisionEmbeddings(Siglip2VisionConfig())
    return embed._torchdynamo_orig_callable, [(module, pixel_values, spatial_shapes)]
