"""Restormer training step with Mixing_Augment: `lam = self.dist.rsample((1,1)).item()` from a Beta distribution, `torch.randperm` pairing and a `random.randint` choice of augment, ahead of the MDTA/GDFN network and an L1 loss.

Source: swz30/Restormer@df766d5521afd21cce56e24159f300b30ebf3fb0:basicsr/models/image_restoration_model.py:22-48,141-160; basicsr/models/archs/restormer_arch.py:16-170
Kept: Mixing_Augment verbatim (mixup, __call__ with use_identity), the
mixing_flag -> mixing_augmentation -> net_g -> `if not isinstance(preds, list)` flow of
ImageCleanModel.feed_train_data/optimize_parameters, Restormer's LayerNorm, FeedForward,
Attention and TransformerBlock.
Simplified: einops rearrange written as reshape/transpose with the same axis orders; the
BaseModel/optimizer plumbing is a small module whose forward returns the pixel loss;
net_g is patch embed + 2 TransformerBlocks at dim 8.
"""
import numbers
import random

import torch
import torch.nn as nn
import torch.nn.functional as F


class Mixing_Augment:
    def __init__(self, mixup_beta, use_identity, device):
        self.dist = torch.distributions.beta.Beta(torch.tensor([mixup_beta]), torch.tensor([mixup_beta]))
        self.device = device

        self.use_identity = use_identity

        self.augments = [self.mixup]

    def mixup(self, target, input_):
        lam = self.dist.rsample((1,1)).item()

        r_index = torch.randperm(target.size(0)).to(self.device)

        target = lam * target + (1-lam) * target[r_index, :]
        input_ = lam * input_ + (1-lam) * input_[r_index, :]

        return target, input_

    def __call__(self, target, input_):
        if self.use_identity:
            augment = random.randint(0, len(self.augments))
            if augment < len(self.augments):
                target, input_ = self.augments[augment](target, input_)
        else:
            augment = random.randint(0, len(self.augments)-1)
            target, input_ = self.augments[augment](target, input_)
        return target, input_


def to_3d(x):
    # rearrange(x, 'b c h w -> b (h w) c')
    b, c, h, w = x.shape
    return x.reshape(b, c, h * w).transpose(1, 2)


def to_4d(x,h,w):
    # rearrange(x, 'b (h w) c -> b c h w',h=h,w=w)
    b, hw, c = x.shape
    return x.transpose(1, 2).reshape(b, c, h, w)


class BiasFree_LayerNorm(nn.Module):
    def __init__(self, normalized_shape):
        super(BiasFree_LayerNorm, self).__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        normalized_shape = torch.Size(normalized_shape)

        assert len(normalized_shape) == 1

        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.normalized_shape = normalized_shape

    def forward(self, x):
        sigma = x.var(-1, keepdim=True, unbiased=False)
        return x / torch.sqrt(sigma+1e-5) * self.weight


class WithBias_LayerNorm(nn.Module):
    def __init__(self, normalized_shape):
        super(WithBias_LayerNorm, self).__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        normalized_shape = torch.Size(normalized_shape)

        assert len(normalized_shape) == 1

        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape))
        self.normalized_shape = normalized_shape

    def forward(self, x):
        mu = x.mean(-1, keepdim=True)
        sigma = x.var(-1, keepdim=True, unbiased=False)
        return (x - mu) / torch.sqrt(sigma+1e-5) * self.weight + self.bias


class LayerNorm(nn.Module):
    def __init__(self, dim, LayerNorm_type):
        super(LayerNorm, self).__init__()
        if LayerNorm_type =='BiasFree':
            self.body = BiasFree_LayerNorm(dim)
        else:
            self.body = WithBias_LayerNorm(dim)

    def forward(self, x):
        h, w = x.shape[-2:]
        return to_4d(self.body(to_3d(x)), h, w)


class FeedForward(nn.Module):
    def __init__(self, dim, ffn_expansion_factor, bias):
        super(FeedForward, self).__init__()

        hidden_features = int(dim*ffn_expansion_factor)

        self.project_in = nn.Conv2d(dim, hidden_features*2, kernel_size=1, bias=bias)

        self.dwconv = nn.Conv2d(hidden_features*2, hidden_features*2, kernel_size=3, stride=1, padding=1, groups=hidden_features*2, bias=bias)

        self.project_out = nn.Conv2d(hidden_features, dim, kernel_size=1, bias=bias)

    def forward(self, x):
        x = self.project_in(x)
        x1, x2 = self.dwconv(x).chunk(2, dim=1)
        x = F.gelu(x1) * x2
        x = self.project_out(x)
        return x


class Attention(nn.Module):
    def __init__(self, dim, num_heads, bias):
        super(Attention, self).__init__()
        self.num_heads = num_heads
        self.temperature = nn.Parameter(torch.ones(num_heads, 1, 1))

        self.qkv = nn.Conv2d(dim, dim*3, kernel_size=1, bias=bias)
        self.qkv_dwconv = nn.Conv2d(dim*3, dim*3, kernel_size=3, stride=1, padding=1, groups=dim*3, bias=bias)
        self.project_out = nn.Conv2d(dim, dim, kernel_size=1, bias=bias)

    def forward(self, x):
        b,c,h,w = x.shape

        qkv = self.qkv_dwconv(self.qkv(x))
        q,k,v = qkv.chunk(3, dim=1)

        # rearrange(q, 'b (head c) h w -> b head c (h w)', head=self.num_heads)
        q = q.reshape(b, self.num_heads, c // self.num_heads, h * w)
        k = k.reshape(b, self.num_heads, c // self.num_heads, h * w)
        v = v.reshape(b, self.num_heads, c // self.num_heads, h * w)

        q = torch.nn.functional.normalize(q, dim=-1)
        k = torch.nn.functional.normalize(k, dim=-1)

        attn = (q @ k.transpose(-2, -1)) * self.temperature
        attn = attn.softmax(dim=-1)

        out = (attn @ v)

        # rearrange(out, 'b head c (h w) -> b (head c) h w', head=self.num_heads, h=h, w=w)
        out = out.reshape(b, c, h, w)

        out = self.project_out(out)
        return out


class TransformerBlock(nn.Module):
    def __init__(self, dim, num_heads, ffn_expansion_factor, bias, LayerNorm_type):
        super(TransformerBlock, self).__init__()

        self.norm1 = LayerNorm(dim, LayerNorm_type)
        self.attn = Attention(dim, num_heads, bias)
        self.norm2 = LayerNorm(dim, LayerNorm_type)
        self.ffn = FeedForward(dim, ffn_expansion_factor, bias)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        x = x + self.ffn(self.norm2(x))

        return x


class SmallRestormer(nn.Module):
    def __init__(self, inp_channels=3, out_channels=3, dim=8, num_blocks=2, heads=2,
                 ffn_expansion_factor=2.66, bias=False, LayerNorm_type='WithBias'):
        super().__init__()
        self.patch_embed = nn.Conv2d(inp_channels, dim, kernel_size=3, stride=1, padding=1, bias=bias)
        self.encoder_level1 = nn.Sequential(*[TransformerBlock(dim=dim, num_heads=heads, ffn_expansion_factor=ffn_expansion_factor, bias=bias, LayerNorm_type=LayerNorm_type) for i in range(num_blocks)])
        self.output = nn.Conv2d(dim, out_channels, kernel_size=3, stride=1, padding=1, bias=bias)

    def forward(self, inp_img):
        out = self.encoder_level1(self.patch_embed(inp_img))
        return self.output(out) + inp_img


class ImageCleanTrainStep(nn.Module):
    def __init__(self, opt):
        super().__init__()
        self.opt = opt
        self.device = torch.device('cpu')
        self.mixing_flag = self.opt['train']['mixing_augs'].get('mixup', False)
        if self.mixing_flag:
            mixup_beta       = self.opt['train']['mixing_augs'].get('mixup_beta', 1.2)
            use_identity     = self.opt['train']['mixing_augs'].get('use_identity', False)
            self.mixing_augmentation = Mixing_Augment(mixup_beta, use_identity, self.device)
        self.net_g = SmallRestormer(**opt['network_g'])
        self.cri_pix = nn.L1Loss()

    def forward(self, lq, gt):
        if self.mixing_flag:
            gt, lq = self.mixing_augmentation(gt, lq)
        preds = self.net_g(lq)
        if not isinstance(preds, list):
            preds = [preds]
        l_pix = 0.
        for pred in preds:
            l_pix += self.cri_pix(pred, gt)
        return l_pix


OPT = {'train': {'mixing_augs': {'mixup': True, 'mixup_beta': 1.2, 'use_identity': False}},
       'network_g': {'dim': 8, 'num_blocks': 2, 'heads': 2}}


def train(lq, gt):
    step = torch.compile(ImageCleanTrainStep(OPT).train())
    loss = step(lq, gt)
    loss.backward()
    return loss


def make():
    torch.manual_seed(0)
    lq = torch.rand(2, 3, 8, 8)
    gt = torch.rand(2, 3, 8, 8)
    return ImageCleanTrainStep(OPT).train(), [(lq, gt), (lq[:, :, :4], gt[:, :, :4])]
