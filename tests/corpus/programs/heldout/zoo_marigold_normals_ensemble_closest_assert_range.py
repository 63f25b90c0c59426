"""Marigold normals pipeline tail: RGB normalised to [-1, 1] under `assert rgb_norm.min() >= -1.0 and rgb_norm.max() <= 1.0`, a batched ensemble of predictions, `ensemble_normals` (cosine similarity to the mean, closest member by argmax/gather, arccos uncertainty), then `.cpu().numpy()`, clip and uint8 colouring.

Source: prs-eth/Marigold@b1dffaaa3f7a2fe406b3bb9dd3c358b30da66060:marigold/marigold_normals_pipeline.py:229-300
Also: marigold/util/ensemble.py:199-249 (ensemble_normals).
Kept: ensemble_normals verbatim; the pipeline body from the rgb normalisation
through the ensemble, the numpy conversion, clipping and colourising, with the
`batch_size > 0` choice and the `ensemble_size > 1` switch.
Simplified: the diffusion `single_infer` (VAE, UNet, DDIM loop) is a one-conv
stand-in that returns unit normals; the TensorDataset/DataLoader batching is a
plain `split` over the duplicated batch; find_batch_size, resizing and the
progress bar are left out; 8x8 images, ensemble of 3.
"""
from typing import Optional, Tuple

import numpy as np
import torch
import torch.nn as nn


def ensemble_normals(
    normals: torch.Tensor,
    output_uncertainty: bool = False,
    reduction: str = "closest",
) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """
    Ensembles the normals maps represented by the `normals` tensor with expected shape `(B, 3, H, W)`, where B is
    the number of ensemble members for a given prediction of size `(H x W)`.

    Args:
        normals (`torch.Tensor`):
            Input ensemble normals maps.
        output_uncertainty (`bool`, *optional*, defaults to `False`):
            Whether to output uncertainty map.
        reduction (`str`, *optional*, defaults to `"closest"`):
            Reduction method used to ensemble aligned predictions. The accepted values are: `"closest"` and
            `"mean"`.

    Returns:
        A tensor of aligned and ensembled normals maps with shape `(1, 3, H, W)` and optionally a tensor of
        uncertainties of shape `(1, 1, H, W)`.
    """
    if normals.dim() != 4 or normals.shape[1] != 3:
        raise ValueError(
            f"Expecting 4D tensor of shape [B,3,H,W]; got {normals.shape}."
        )
    if reduction not in ("closest", "mean"):
        raise ValueError(f"Unrecognized reduction method: {reduction}.")

    mean_normals = normals.mean(dim=0, keepdim=True)  # [1,3,H,W]
    norm = torch.norm(mean_normals, dim=1, keepdim=True)
    mean_normals /= norm.clamp(min=1e-6)  # [1,3,H,W]

    sim_cos = None
    if output_uncertainty or (reduction != "mean"):
        sim_cos = (mean_normals * normals).sum(dim=1, keepdim=True)  # [E,1,H,W]
        sim_cos = sim_cos.clamp(-1, 1)  # required to avoid NaN in uncertainty with fp16

    uncertainty = None
    if output_uncertainty:
        uncertainty = sim_cos.arccos()  # [E,1,H,W]
        uncertainty = uncertainty.mean(dim=0, keepdim=True) / np.pi  # [1,1,H,W]

    if reduction == "mean":
        return mean_normals, uncertainty  # [1,3,H,W], [1,1,H,W]

    closest_indices = sim_cos.argmax(dim=0, keepdim=True)  # [1,1,H,W]
    closest_indices = closest_indices.repeat(1, 3, 1, 1)  # [1,3,H,W]
    closest_normals = torch.gather(normals, 0, closest_indices)  # [1,3,H,W]

    return closest_normals, uncertainty  # [1,3,H,W], [1,1,H,W]



class MarigoldNormalsPipeline(nn.Module):
    def __init__(self):
        super().__init__()
        self.dtype = torch.float32
        self.device = torch.device("cpu")
        self.net = nn.Conv2d(3, 3, 3, padding=1)

    def single_infer(self, rgb_in: torch.Tensor, num_inference_steps: int, generator, show_pbar: bool) -> torch.Tensor:
        rgb_in = rgb_in.to(self.device)
        normals = self.net(rgb_in)
        return normals / normals.norm(dim=1, keepdim=True).clamp(min=1e-6)

    def forward(
        self,
        rgb: torch.Tensor,
        denoising_steps: int = 4,
        ensemble_size: int = 3,
        batch_size: int = 0,
        ensemble_kwargs: Optional[dict] = None,
        show_progress_bar: bool = False,
        generator=None,
    ):
        # Normalize rgb values
        rgb_norm: torch.Tensor = rgb / 255.0 * 2.0 - 1.0  #  [0, 255] -> [-1, 1]
        rgb_norm = rgb_norm.to(self.dtype)
        assert rgb_norm.min() >= -1.0 and rgb_norm.max() <= 1.0

        # ----------------- Predicting normals -----------------
        # Batch repeated input image
        duplicated_rgb = rgb_norm.expand(ensemble_size, -1, -1, -1)
        if batch_size > 0:
            _bs = batch_size
        else:
            _bs = ensemble_size

        # Predict normals maps (batched)
        target_pred_ls = []
        for batched_img in duplicated_rgb.split(_bs):
            target_pred_raw = self.single_infer(
                rgb_in=batched_img,
                num_inference_steps=denoising_steps,
                show_pbar=show_progress_bar,
                generator=generator,
            )
            target_pred_ls.append(target_pred_raw.detach())
        target_preds = torch.concat(target_pred_ls, dim=0)

        # ----------------- Test-time ensembling -----------------
        if ensemble_size > 1:
            final_pred, pred_uncert = ensemble_normals(
                target_preds,
                **(ensemble_kwargs or {}),
            )
        else:
            final_pred = target_preds
            pred_uncert = None

        # Convert to numpy
        final_pred = final_pred.squeeze()
        final_pred = final_pred.cpu().numpy()
        if pred_uncert is not None:
            pred_uncert = pred_uncert.squeeze().cpu().numpy()

        # Clip output range
        final_pred = final_pred.clip(-1, 1)

        # Colorize
        normals_img = ((final_pred + 1) * 127.5).astype(np.uint8)
        return final_pred, normals_img, pred_uncert


pipe = MarigoldNormalsPipeline()
pipe = torch.compile(pipe)


def make():
    torch.manual_seed(0)
    rgb = torch.randint(0, 256, (1, 3, 8, 8)).float()
    return MarigoldNormalsPipeline(), [
        (rgb,),
        (rgb, 4, 3, 2, {"output_uncertainty": True, "reduction": "mean"}),
        (rgb, 4, 1),
    ]
