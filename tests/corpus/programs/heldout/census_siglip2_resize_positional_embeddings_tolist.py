"""SigLIP2 `resize_positional_embeddings`: `height, width = spatial_shapes[i].tolist()` per image, then
`F.interpolate` to that data-dependent size.

Source: huggingface/transformers@v5.23.0:src/transformers/models/siglip2/modeling_siglip2.py:140-190
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): Siglip2Model / Siglip2VisionModel
eval+train, `modeling_siglip2.py:169 height, width = spatial_shapes[i].tolist()`.
Kept: the static method's buffer, permute, CPU upcast, the per-image loop with tolist, the three
`torch_compilable_check` calls (transformers' helper: `torch._check` while tracing), interpolate and fill.
Simplified: embed_dim 4, a 4x4 positional grid; the patch embedding is a Linear.
"""
import torch
import torch.nn.functional as F
from torch import nn


def torch_compilable_check(cond, msg, error_type=ValueError):
    if torch.compiler.is_compiling():
        if isinstance(cond, torch.Tensor):
            torch._check_tensor_all(cond)
        else:
            torch._check(cond)
        return
    if not cond:
        raise error_type(msg)


class Siglip2VisionEmbeddings(nn.Module):
    def __init__(self, embed_dim=4, num_patches=16, patch_dim=6):
        super().__init__()
        self.patch_embedding = nn.Linear(patch_dim, embed_dim)
        self.position_embedding = nn.Embedding(num_patches, embed_dim)
        self.position_embedding_size = int(num_patches**0.5)

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

        # (height, width, embed_dim) -> (1, embed_dim, height, width) for interpolation
        positional_embeddings = positional_embeddings.permute(2, 0, 1).unsqueeze(0)

        # Upcast to float32 on CPU because antialias is not supported for bfloat16/float16 on CPU
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
        return patch_embeds + resized_positional_embeddings


embeddings = torch.compile(Siglip2VisionEmbeddings())


def make():
    torch.manual_seed(0)
    pixels = torch.randn(2, 12, 6)
    return Siglip2VisionEmbeddings(), [(pixels, torch.tensor([[3, 4], [2, 5]]))]
