"""timm LambdaLayer in a small lambda-ResNet bottleneck: conv-lambda and relative-position variants, `self.pos_emb is None` switch, split into q/k/v with BatchNorm.

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/layers/lambda_layer.py:34-175
Kept: rel_pos_indices (ndgrid of aranges, in-place offsets), LambdaLayer
(__init__'s dim_qk/dim_v plumbing, the `r is not None` choice between a
Conv3d lambda conv and a pos_emb Parameter with a non-persistent
rel_pos_indices buffer, stride-2 AvgPool, reset_parameters/_init_buffers)
and forward (torch.split, norm_q/norm_v, softmax keys, content and position
lambdas, the pos_emb gather by rel_pos_indices, reshape to B, C, H, W);
an eval model compiled (the harness also runs it in training mode).
Simplified: timm's to_2tuple / make_divisible / ndgrid / trunc_normal_
helpers inlined (torch.meshgrid indexing='ij', nn.init.trunc_normal_); the
surrounding byobnet bottleneck reduced to conv-BN-act, lambda, BN-act,
conv-BN and a residual; 16 channels, 2 heads, 8x8 then 4x4 feature maps.
"""
from typing import Optional, Tuple

import torch
from torch import nn
import torch.nn.functional as F


def to_2tuple(x):
    if isinstance(x, (tuple, list)):
        return tuple(x)
    return (x, x)


def make_divisible(v, divisor=8, min_value=None, round_limit=.9):
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < round_limit * v:
        new_v += divisor
    return new_v


def ndgrid(*tensors):
    return torch.meshgrid(*tensors, indexing='ij')


def rel_pos_indices(size, device=None):
    size = to_2tuple(size)
    pos = torch.stack(ndgrid(
        torch.arange(size[0], device=device, dtype=torch.long),
        torch.arange(size[1], device=device, dtype=torch.long),
    )).flatten(1)
    rel_pos = pos[:, None, :] - pos[:, :, None]
    rel_pos[0] += size[0] - 1
    rel_pos[1] += size[1] - 1
    return rel_pos  # 2, H * W, H * W


class LambdaLayer(nn.Module):
    def __init__(
            self,
            dim: int,
            dim_out: Optional[int] = None,
            feat_size: Optional[Tuple[int, int]] = None,
            stride: int = 1,
            num_heads: int = 4,
            dim_head: int = 16,
            r: int = 9,
            qk_ratio: float = 1.0,
            qkv_bias: bool = False,
    ):
        super().__init__()
        dim_out = dim_out or dim
        assert dim_out % num_heads == 0, ' should be divided by num_heads'
        self.dim_qk = dim_head or make_divisible(dim_out * qk_ratio, divisor=8) // num_heads
        self.num_heads = num_heads
        self.dim_v = dim_out // num_heads

        self.qkv = nn.Conv2d(
            dim,
            num_heads * self.dim_qk + self.dim_qk + self.dim_v,
            kernel_size=1,
            bias=qkv_bias,
        )
        self.norm_q = nn.BatchNorm2d(num_heads * self.dim_qk)
        self.norm_v = nn.BatchNorm2d(self.dim_v)

        if r is not None:
            # local lambda convolution for pos
            self.conv_lambda = nn.Conv3d(1, self.dim_qk, (r, r, 1), padding=(r // 2, r // 2, 0))
            self.pos_emb = None
            self.rel_pos_indices = None
            self.feat_size = None
        else:
            # relative pos embedding
            assert feat_size is not None
            feat_size = to_2tuple(feat_size)
            self.feat_size = feat_size
            rel_size = [2 * s - 1 for s in feat_size]
            M = feat_size[0] * feat_size[1]
            self.conv_lambda = None
            self.pos_emb = nn.Parameter(torch.empty(rel_size[0], rel_size[1], self.dim_qk))
            self.register_buffer(
                'rel_pos_indices',
                torch.empty((2, M, M), dtype=torch.long),
                persistent=False,
            )

        self.pool = nn.AvgPool2d(2, 2) if stride == 2 else nn.Identity()

        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Initialize parameters and buffers."""
        nn.init.trunc_normal_(self.qkv.weight, std=self.qkv.weight.shape[1] ** -0.5)  # fan-in
        if self.conv_lambda is not None:
            nn.init.trunc_normal_(self.conv_lambda.weight, std=self.dim_qk ** -0.5)
        if self.pos_emb is not None:
            nn.init.trunc_normal_(self.pos_emb, std=.02)
        self._init_buffers()

    def _init_buffers(self) -> None:
        """Compute and fill non-persistent buffer values."""
        if self.rel_pos_indices is not None:
            self.rel_pos_indices.copy_(
                rel_pos_indices(self.feat_size, device=self.rel_pos_indices.device)
            )

    def forward(self, x):
        B, C, H, W = x.shape
        M = H * W
        qkv = self.qkv(x)
        q, k, v = torch.split(qkv, [
            self.num_heads * self.dim_qk, self.dim_qk, self.dim_v], dim=1)
        q = self.norm_q(q).reshape(B, self.num_heads, self.dim_qk, M).transpose(-1, -2)  # B, num_heads, M, K
        v = self.norm_v(v).reshape(B, self.dim_v, M).transpose(-1, -2)  # B, M, V
        k = F.softmax(k.reshape(B, self.dim_qk, M), dim=-1)  # B, K, M

        content_lam = k @ v  # B, K, V
        content_out = q @ content_lam.unsqueeze(1)  # B, num_heads, M, V

        if self.pos_emb is None:
            position_lam = self.conv_lambda(v.reshape(B, 1, H, W, self.dim_v))  # B, H, W, V, K
            position_lam = position_lam.reshape(B, 1, self.dim_qk, H * W, self.dim_v).transpose(2, 3)  # B, 1, M, K, V
        else:
            # FIXME relative pos embedding path not fully verified
            pos_emb = self.pos_emb[self.rel_pos_indices[0], self.rel_pos_indices[1]].expand(B, -1, -1, -1)
            position_lam = (pos_emb.transpose(-1, -2) @ v.unsqueeze(1)).unsqueeze(1)  # B, 1, M, K, V
        position_out = (q.unsqueeze(-2) @ position_lam).squeeze(-2)  # B, num_heads, M, V

        out = (content_out + position_out).transpose(-1, -2).reshape(B, C, H, W)  # B, C (num_heads * V), H, W
        out = self.pool(out)
        return out


class ConvNormAct(nn.Sequential):
    def __init__(self, in_chs, out_chs, kernel_size=1, stride=1, apply_act=True):
        super().__init__(
            nn.Conv2d(in_chs, out_chs, kernel_size, stride=stride, padding=kernel_size // 2, bias=False),
            nn.BatchNorm2d(out_chs),
            nn.ReLU() if apply_act else nn.Identity(),
        )


class SelfAttnBlock(nn.Module):
    """ ResNet-like Bottleneck Block - 1x1 - optional kxk - self attn - 1x1 """

    def __init__(self, in_chs, out_chs, stride=1, feat_size=None, r=5, num_heads=2, dim_head=4):
        super().__init__()
        mid_chs = out_chs
        self.shortcut = ConvNormAct(in_chs, out_chs, stride=stride, apply_act=False) if stride != 1 or in_chs != out_chs else nn.Identity()
        self.conv1_1x1 = ConvNormAct(in_chs, mid_chs)
        self.self_attn = LambdaLayer(mid_chs, stride=stride, feat_size=feat_size, r=r, num_heads=num_heads, dim_head=dim_head)
        self.post_attn = nn.Sequential(nn.BatchNorm2d(mid_chs), nn.ReLU())
        self.conv3_1x1 = ConvNormAct(mid_chs, out_chs, apply_act=False)
        self.act = nn.ReLU()

    def forward(self, x):
        shortcut = x
        x = self.conv1_1x1(x)
        x = self.self_attn(x)
        x = self.post_attn(x)
        x = self.conv3_1x1(x)
        x = x + self.shortcut(shortcut)
        return self.act(x)


class TinyLambdaResNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = ConvNormAct(3, 16, kernel_size=3, stride=2)
        # stage 1: local lambda conv (r=5); stage 2: relative position lambda on a fixed 4x4 map
        self.stage1 = SelfAttnBlock(16, 16, stride=2, r=5)
        self.stage2 = SelfAttnBlock(16, 16, stride=1, feat_size=(4, 4), r=None)
        self.head = nn.Linear(16, num_classes)

    def forward(self, x):
        x = self.stem(x)
        x = self.stage1(x)
        x = self.stage2(x)
        return self.head(x.mean((2, 3)))


model = torch.compile(TinyLambdaResNet().eval())


def make():
    torch.manual_seed(0)
    return TinyLambdaResNet().eval(), [(torch.randn(2, 3, 16, 16),)]
