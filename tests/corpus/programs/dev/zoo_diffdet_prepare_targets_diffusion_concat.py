"""DiffusionDet training targets: per-image gt normalisation, corrupted boxes via prepare_diffusion_concat (empty / fewer / more gt than proposals) and q_sample.

Source: ShoufaChen/DiffusionDet@26ce0f5659cd24c77657c6d9aef07d4794f4eb78:diffusiondet/detector.py:45-60,105-130,330-395,455-535
Kept: the training branch of DiffusionDet.forward up to the head (`gt_instances` list comprehension
with `.to(self.device)`, prepare_targets, t.squeeze(-1), x_boxes * images_whwh[:, None, :]),
prepare_targets verbatim (image_size tuple unpacking, torch.as_tensor of python ints,
box_xyxy_to_cxcywh, targets dict, `.repeat(len(gt_boxes), 1)`, Boxes.area()), prepare_diffusion_concat
verbatim (torch.randint timestep, `if not num_gt` fake box, num_gt vs num_proposals branches,
python-list select_mask shuffled with random.shuffle, box_placeholder clip), q_sample/extract,
the cosine schedule buffers.
Simplified: detectron2's Instances/Boxes are small stand-ins; the backbone, DynamicHead and
SetCriterionDynamicK (Hungarian matching) are left out, so forward returns the targets and the
diffused boxes. 6 proposals.
"""
import math
import random
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn


def box_cxcywh_to_xyxy(x):
    x_c, y_c, w, h = x.unbind(-1)
    b = [(x_c - 0.5 * w), (y_c - 0.5 * h),
         (x_c + 0.5 * w), (y_c + 0.5 * h)]
    return torch.stack(b, dim=-1)


def box_xyxy_to_cxcywh(x):
    x0, y0, x1, y1 = x.unbind(-1)
    b = [(x0 + x1) / 2, (y0 + y1) / 2,
         (x1 - x0), (y1 - y0)]
    return torch.stack(b, dim=-1)


class Boxes:
    def __init__(self, tensor):
        self.tensor = tensor

    def area(self):
        box = self.tensor
        return (box[:, 2] - box[:, 0]) * (box[:, 3] - box[:, 1])

    def to(self, device):
        return Boxes(self.tensor.to(device))


class Instances:
    def __init__(self, image_size, **fields):
        self.image_size = image_size
        for k, v in fields.items():
            setattr(self, k, v)

    def to(self, device):
        return Instances(self.image_size, gt_boxes=self.gt_boxes.to(device),
                         gt_classes=self.gt_classes.to(device))


def extract(a, t, x_shape):
    """extract the appropriate  t  index for a batch of indices"""
    batch_size = t.shape[0]
    out = a.gather(-1, t)
    return out.reshape(batch_size, *((1,) * (len(x_shape) - 1)))


def cosine_beta_schedule(timesteps, s=0.008):
    steps = timesteps + 1
    x = torch.linspace(0, timesteps, steps, dtype=torch.float64)
    alphas_cumprod = torch.cos(((x / timesteps) + s) / (1 + s) * math.pi * 0.5) ** 2
    alphas_cumprod = alphas_cumprod / alphas_cumprod[0]
    betas = 1 - (alphas_cumprod[1:] / alphas_cumprod[:-1])
    return torch.clip(betas, 0, 0.999)


class DiffusionDet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.device = torch.device(cfg.MODEL.DEVICE)
        self.num_classes = cfg.MODEL.DiffusionDet.NUM_CLASSES
        self.num_proposals = cfg.MODEL.DiffusionDet.NUM_PROPOSALS

        timesteps = 1000
        betas = cosine_beta_schedule(timesteps)
        alphas = 1.0 - betas
        alphas_cumprod = torch.cumprod(alphas, dim=0)
        alphas_cumprod_prev = F.pad(alphas_cumprod[:-1], (1, 0), value=1.0)
        (timesteps,) = betas.shape
        self.num_timesteps = int(timesteps)
        self.scale = cfg.MODEL.DiffusionDet.SNR_SCALE

        self.register_buffer("betas", betas)
        self.register_buffer("alphas_cumprod", alphas_cumprod)
        self.register_buffer("alphas_cumprod_prev", alphas_cumprod_prev)
        self.register_buffer("sqrt_alphas_cumprod", torch.sqrt(alphas_cumprod))
        self.register_buffer("sqrt_one_minus_alphas_cumprod", torch.sqrt(1.0 - alphas_cumprod))
        self.to(self.device)

    # forward diffusion
    def q_sample(self, x_start, t, noise=None):
        if noise is None:
            noise = torch.randn_like(x_start)

        sqrt_alphas_cumprod_t = extract(self.sqrt_alphas_cumprod, t, x_start.shape)
        sqrt_one_minus_alphas_cumprod_t = extract(
            self.sqrt_one_minus_alphas_cumprod, t, x_start.shape
        )

        return sqrt_alphas_cumprod_t * x_start + sqrt_one_minus_alphas_cumprod_t * noise

    def forward(self, batched_inputs, images_whwh):
        if self.training:
            gt_instances = [x["instances"].to(self.device) for x in batched_inputs]
            targets, x_boxes, noises, t = self.prepare_targets(gt_instances)
            t = t.squeeze(-1)
            x_boxes = x_boxes * images_whwh[:, None, :]
            return targets, x_boxes, noises, t

    def prepare_diffusion_concat(self, gt_boxes):
        """
        :param gt_boxes: (cx, cy, w, h), normalized
        :param num_proposals:
        """
        t = torch.randint(0, self.num_timesteps, (1,), device=self.device).long()
        noise = torch.randn(self.num_proposals, 4, device=self.device)

        num_gt = gt_boxes.shape[0]
        if not num_gt:  # generate fake gt boxes if empty gt boxes
            gt_boxes = torch.as_tensor(
                [[0.5, 0.5, 1.0, 1.0]], dtype=torch.float, device=self.device
            )
            num_gt = 1

        if num_gt < self.num_proposals:
            box_placeholder = (
                torch.randn(self.num_proposals - num_gt, 4, device=self.device) / 6.0
                + 0.5
            )  # 3sigma = 1/2 --> sigma: 1/6
            box_placeholder[:, 2:] = torch.clip(box_placeholder[:, 2:], min=1e-4)
            x_start = torch.cat((gt_boxes, box_placeholder), dim=0)
        elif num_gt > self.num_proposals:
            select_mask = [True] * self.num_proposals + [False] * (
                num_gt - self.num_proposals
            )
            random.shuffle(select_mask)
            x_start = gt_boxes[select_mask]
        else:
            x_start = gt_boxes

        x_start = (x_start * 2.0 - 1.0) * self.scale

        # noise sample
        x = self.q_sample(x_start=x_start, t=t, noise=noise)

        x = torch.clamp(x, min=-1 * self.scale, max=self.scale)
        x = ((x / self.scale) + 1) / 2.0

        diff_boxes = box_cxcywh_to_xyxy(x)

        return diff_boxes, noise, t

    def prepare_targets(self, targets):
        new_targets = []
        diffused_boxes = []
        noises = []
        ts = []
        for targets_per_image in targets:
            target = {}
            h, w = targets_per_image.image_size
            image_size_xyxy = torch.as_tensor(
                [w, h, w, h], dtype=torch.float, device=self.device
            )
            gt_classes = targets_per_image.gt_classes
            gt_boxes = targets_per_image.gt_boxes.tensor / image_size_xyxy
            gt_boxes = box_xyxy_to_cxcywh(gt_boxes)
            d_boxes, d_noise, d_t = self.prepare_diffusion_concat(gt_boxes)
            diffused_boxes.append(d_boxes)
            noises.append(d_noise)
            ts.append(d_t)
            target["labels"] = gt_classes.to(self.device)
            target["boxes"] = gt_boxes.to(self.device)
            target["boxes_xyxy"] = targets_per_image.gt_boxes.tensor.to(self.device)
            target["image_size_xyxy"] = image_size_xyxy.to(self.device)
            image_size_xyxy_tgt = image_size_xyxy.unsqueeze(0).repeat(len(gt_boxes), 1)
            target["image_size_xyxy_tgt"] = image_size_xyxy_tgt.to(self.device)
            target["area"] = targets_per_image.gt_boxes.area().to(self.device)
            new_targets.append(target)

        return (
            new_targets,
            torch.stack(diffused_boxes),
            torch.stack(noises),
            torch.stack(ts),
        )


def get_cfg():
    dd = SimpleNamespace(NUM_CLASSES=3, NUM_PROPOSALS=6, SNR_SCALE=2.0)
    return SimpleNamespace(MODEL=SimpleNamespace(DEVICE="cpu", DiffusionDet=dd))


def _instances(n, h=48, w=64):
    xy = torch.rand(n, 2) * 20
    wh = torch.rand(n, 2) * 20 + 4
    boxes = torch.cat([xy, xy + wh], dim=1)
    return {"instances": Instances((h, w), gt_boxes=Boxes(boxes), gt_classes=torch.randint(0, 3, (n,)))}


model = torch.compile(DiffusionDet(get_cfg()).train())


def make():
    torch.manual_seed(0)
    net = DiffusionDet(get_cfg()).train()
    whwh = torch.tensor([[64.0, 48.0, 64.0, 48.0], [64.0, 48.0, 64.0, 48.0]])
    return net, [
        ([_instances(3), _instances(0)], whwh),
        ([_instances(6), _instances(9)], whwh),
    ]
