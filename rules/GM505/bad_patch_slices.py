"""GM505 bad: Pixtral's per-image patch slicing, a list comprehension over `zip(...)` whose body breaks.

Source: huggingface/transformers@v5.23.0:src/transformers/models/pixtral/modeling_pixtral.py (PixtralVisionModel.forward)
The slice bounds come from a tensor of image sizes, so the body breaks (GB0124);
Dynamo then compiles the comprehension's frame on its own and breaks on the zip iterator (GB4347).
"""
import torch
from torch import nn


class PatchSlices(nn.Module):
    def __init__(self, patch_size: int = 2) -> None:
        super().__init__()
        self.patch_size = patch_size
        self.patch_conv = nn.Conv2d(3, 4, kernel_size=patch_size, stride=patch_size)

    def forward(self, pixel_values: torch.Tensor, image_sizes: torch.Tensor) -> list:
        patch_embeds = self.patch_conv(pixel_values)
        return [
            embed[..., : (size[0] // self.patch_size), : (size[1] // self.patch_size)]
            for embed, size in zip(patch_embeds, image_sizes)
        ]


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return PatchSlices(), [(torch.randn(2, 3, 8, 8), torch.tensor([[8, 6], [4, 8]]))]


compiled = torch.compile(PatchSlices())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print([t.shape for t in fn(*args)])
