"""PaddleOCR-VL projector: split features by `grid_thw.prod(dim=1).tolist()`, then unpack each grid row.

Source: huggingface/transformers@00d01082bab10413f63cb823e4bedf1735691a14:src/transformers/models/paddleocr_vl/modeling_paddleocr_vl.py:77-111
(census: penguinwu/oss-model-graph-break-corpus, PaddleOCR-VL models list `_local_scalar_dense` breaks on grid_thw).
Kept: PaddleOCRProjector.__init__/forward as written (merge_kernel_size from config, split by the
tolist of per-image patch counts, zip over chunks and grid rows, `t, h, w = image_grid` tensor
unpacking, block reshape/transpose, pre_norm -> linear_1 -> GELU -> linear_2, cat).
Simplified: configs are small plain classes; GELUActivation is nn.GELU.
"""
import torch
from torch import nn


class VisionConfig:
    spatial_merge_size = 2
    hidden_size = 8


class TextConfig:
    hidden_size = 12


class PaddleOCRVLConfig:
    vision_config = VisionConfig()
    text_config = TextConfig()


class PaddleOCRProjector(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.merge_kernel_size = (config.vision_config.spatial_merge_size, config.vision_config.spatial_merge_size)

        hidden_size = config.vision_config.hidden_size * self.merge_kernel_size[0] * self.merge_kernel_size[1]

        self.pre_norm = torch.nn.LayerNorm(config.vision_config.hidden_size, eps=1e-05)
        self.linear_1 = nn.Linear(hidden_size, hidden_size, bias=True)
        self.act = nn.GELU()
        self.linear_2 = nn.Linear(hidden_size, config.text_config.hidden_size, bias=True)

    def forward(self, image_features: torch.Tensor, image_grid_thw: torch.Tensor) -> torch.Tensor:
        image_features_chunks = image_features.split(image_grid_thw.prod(dim=1).tolist(), dim=0)
        m1, m2 = self.merge_kernel_size

        processed_features = []
        for image_feature, image_grid in zip(image_features_chunks, image_grid_thw):
            image_feature = self.pre_norm(image_feature)
            t, h, w = image_grid
            d = image_feature.shape[-1]
            h_block = h // m1
            w_block = w // m2

            image_feature = image_feature.reshape(t, h_block, m1, w_block, m2, d)
            image_feature = image_feature.transpose(2, 3)
            image_feature = image_feature.reshape(t * h_block * w_block, m1 * m2 * d)

            hidden_states = self.linear_1(image_feature)
            hidden_states = self.act(hidden_states)
            hidden_states = self.linear_2(hidden_states)
            processed_features.append(hidden_states)

        return torch.cat(processed_features, dim=0)


projector = torch.compile(PaddleOCRProjector(PaddleOCRVLConfig()))


def make():
    torch.manual_seed(0)
    proj = PaddleOCRProjector(PaddleOCRVLConfig())
    one_grid = torch.tensor([[1, 4, 6]])
    two_grids = torch.tensor([[1, 4, 4], [1, 2, 6]])
    return proj, [
        (torch.randn(24, 8), one_grid),
        (torch.randn(28, 8), two_grids),
    ]
