"""timm VOLO forward_train with mix_token: Beta sample and `rand_bbox` returning four `.item()` ints for slicing.

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/models/volo.py:465-495,999-1058
Kept: rand_bbox (tensor sqrt/int/randint/clamp then .item()), the training
mix-token block with clone + flipped paste, the pooled class token, the aux
head and the reverse mix on the aux tokens, the 3-tuple return.
Simplified: tokens learning is one linear layer; 8x8 patch grid, pooling_scale 2.
"""
import torch
from torch import nn


def rand_bbox(size, lam, scale=1):
    W = size[1] // scale
    H = size[2] // scale
    W_t = torch.tensor(W, dtype=torch.float32)
    H_t = torch.tensor(H, dtype=torch.float32)
    cut_rat = torch.sqrt(1. - lam)
    cut_w = (W_t * cut_rat).int()
    cut_h = (H_t * cut_rat).int()
    cx = torch.randint(0, W, (1,))
    cy = torch.randint(0, H, (1,))
    bbx1 = torch.clamp(cx - cut_w // 2, 0, W)
    bby1 = torch.clamp(cy - cut_h // 2, 0, H)
    bbx2 = torch.clamp(cx + cut_w // 2, 0, W)
    bby2 = torch.clamp(cy + cut_h // 2, 0, H)
    return bbx1.item(), bby1.item(), bbx2.item(), bby2.item()


class VOLO(nn.Module):
    def __init__(self, dim=8, num_classes=3):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, 2, 2)
        self.mix_token = True
        self.beta = 1.0
        self.pooling_scale = 2
        self.tokens = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.global_pool = "token"
        self.aux_head = nn.Linear(dim, num_classes)

    def forward_train(self, x):
        x = self.patch_embed(x)
        x = x.permute(0, 2, 3, 1)
        if self.mix_token and self.training:
            lam = torch.distributions.Beta(self.beta, self.beta).sample()
            patch_h, patch_w = x.shape[1] // self.pooling_scale, x.shape[2] // self.pooling_scale
            bbx1, bby1, bbx2, bby2 = rand_bbox(x.size(), lam, scale=self.pooling_scale)
            temp_x = x.clone()
            sbbx1, sbby1 = self.pooling_scale * bbx1, self.pooling_scale * bby1
            sbbx2, sbby2 = self.pooling_scale * bbx2, self.pooling_scale * bby2
            temp_x[:, sbbx1:sbbx2, sbby1:sbby2, :] = x.flip(0)[:, sbbx1:sbbx2, sbby1:sbby2, :]
            x = temp_x
        else:
            bbx1, bby1, bbx2, bby2 = 0, 0, 0, 0
        x = self.tokens(x.reshape(x.shape[0], -1, x.shape[-1]))
        x = self.norm(x)
        x_cls = x[:, 0] if self.global_pool == "token" else x.mean(dim=1)
        x_aux = self.aux_head(x[:, 1:])
        if not self.training:
            return x_cls.sum(-1) + 0.5 * x_aux.max(1)[0].sum(-1)
        if self.mix_token and self.training:
            x_aux = torch.cat([x_aux, x_aux[:, :1]], dim=1).reshape(x_aux.shape[0], patch_h * 2, patch_w * 2, x_aux.shape[-1])
            temp_x = x_aux.clone()
            temp_x[:, bbx1:bbx2, bby1:bby2, :] = x_aux.flip(0)[:, bbx1:bbx2, bby1:bby2, :]
            x_aux = temp_x.reshape(x_aux.shape[0], -1, x_aux.shape[-1])
        return x_cls, x_aux, (bbx1, bby1, bbx2, bby2)

    def forward(self, x):
        return self.forward_train(x)


def make():
    torch.manual_seed(0)
    return VOLO().train(), [(torch.randn(2, 3, 16, 16),)]


if __name__ == "__main__":
    model = torch.compile(VOLO().train())
