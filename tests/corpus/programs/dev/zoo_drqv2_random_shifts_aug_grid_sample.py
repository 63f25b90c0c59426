"""DrQ-v2 random-shift image augmentation: replicate pad, a linspace base grid built with repeat/cat/transpose, integer shifts from `torch.randint(..., dtype=x.dtype)` and `F.grid_sample`, followed by the conv encoder (the augment+encode head of DrQV2Agent.update).

Source: facebookresearch/drqv2@421dfdef24d2928853ae27730cfbebc0b4dfe5c4:drqv2.py:14-67,224-234
Source: facebookresearch/drqv2@421dfdef24d2928853ae27730cfbebc0b4dfe5c4:utils.py:116-131
Kept: RandomShiftsAug and Encoder verbatim, weight_init, the update's
`obs = self.aug(obs.float()); obs = self.encoder(obs)` order.
Simplified: a wrapper module holds aug + encoder; only weight_init from utils; batch 2,
3x84x84 uint8 frames.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def weight_init(m):
    if isinstance(m, nn.Linear):
        nn.init.orthogonal_(m.weight.data)
        if hasattr(m.bias, 'data'):
            m.bias.data.fill_(0.0)
    elif isinstance(m, nn.Conv2d) or isinstance(m, nn.ConvTranspose2d):
        gain = nn.init.calculate_gain('relu')
        nn.init.orthogonal_(m.weight.data, gain)
        if hasattr(m.bias, 'data'):
            m.bias.data.fill_(0.0)


class _Utils:
    """Stands in for  (drqv2's utils.py)."""
    weight_init = staticmethod(weight_init)


utils = _Utils

# ---- drqv2.py
class RandomShiftsAug(nn.Module):
    def __init__(self, pad):
        super().__init__()
        self.pad = pad

    def forward(self, x):
        n, c, h, w = x.size()
        assert h == w
        padding = tuple([self.pad] * 4)
        x = F.pad(x, padding, 'replicate')
        eps = 1.0 / (h + 2 * self.pad)
        arange = torch.linspace(-1.0 + eps,
                                1.0 - eps,
                                h + 2 * self.pad,
                                device=x.device,
                                dtype=x.dtype)[:h]
        arange = arange.unsqueeze(0).repeat(h, 1).unsqueeze(2)
        base_grid = torch.cat([arange, arange.transpose(1, 0)], dim=2)
        base_grid = base_grid.unsqueeze(0).repeat(n, 1, 1, 1)

        shift = torch.randint(0,
                              2 * self.pad + 1,
                              size=(n, 1, 1, 2),
                              device=x.device,
                              dtype=x.dtype)
        shift *= 2.0 / (h + 2 * self.pad)

        grid = base_grid + shift
        return F.grid_sample(x,
                             grid,
                             padding_mode='zeros',
                             align_corners=False)


class Encoder(nn.Module):
    def __init__(self, obs_shape):
        super().__init__()

        assert len(obs_shape) == 3
        self.repr_dim = 32 * 35 * 35

        self.convnet = nn.Sequential(nn.Conv2d(obs_shape[0], 32, 3, stride=2),
                                     nn.ReLU(), nn.Conv2d(32, 32, 3, stride=1),
                                     nn.ReLU(), nn.Conv2d(32, 32, 3, stride=1),
                                     nn.ReLU(), nn.Conv2d(32, 32, 3, stride=1),
                                     nn.ReLU())

        self.apply(utils.weight_init)

    def forward(self, obs):
        obs = obs / 255.0 - 0.5
        h = self.convnet(obs)
        h = h.view(h.shape[0], -1)
        return h


class AugEncode(nn.Module):
    def __init__(self, obs_shape):
        super().__init__()
        self.aug = RandomShiftsAug(pad=4)
        self.encoder = Encoder(obs_shape)

    def forward(self, obs):
        # augment
        obs = self.aug(obs.float())
        # encode
        obs = self.encoder(obs)
        return obs


model = torch.compile(AugEncode((3, 84, 84)))


def make():
    torch.manual_seed(0)
    obs = torch.from_numpy(np.random.RandomState(0).randint(0, 256, size=(2, 3, 84, 84)).astype(np.uint8))
    return AugEncode((3, 84, 84)), [(obs,)]
