"""torchcfm SF2M `SDE` wrapper for torchsde: drift `f(t, y)` flips time when `reverse`, concatenates t as a column either directly (`len(t.shape) == len(y.shape)`) or via `t.repeat(y.shape[0])[:, None]`, and adds the learned score; `g` is the unit diagonal diffusion.

Source: atong01/conditional-flow-matching@0c6f59ac9d68647e8b634a921720dc19d8a2221b:torchcfm/utils.py:71-95
Also: torchcfm/models/models.py:1-21 (MLP) at 2c1bbcd5.
Kept: SDE (noise_type/sde_type class attributes, reverse flag, f and g) and
MLP verbatim; drift and score nets are MLP(dim, time_varying=True) as in the
SF2M examples.
Simplified: torchsde.sdeint's calls are replaced by direct calls of a
compiled `sde.f`; dim 2, width 16, batch 8.
"""
import torch


class MLP(torch.nn.Module):
    def __init__(self, dim, out_dim=None, w=64, time_varying=False):
        super().__init__()
        self.time_varying = time_varying
        if out_dim is None:
            out_dim = dim
        self.net = torch.nn.Sequential(
            torch.nn.Linear(dim + (1 if time_varying else 0), w),
            torch.nn.SELU(),
            torch.nn.Linear(w, w),
            torch.nn.SELU(),
            torch.nn.Linear(w, w),
            torch.nn.SELU(),
            torch.nn.Linear(w, out_dim),
        )

    def forward(self, x):
        return self.net(x)


class SDE(torch.nn.Module):
    noise_type = "diagonal"
    sde_type = "ito"

    def __init__(self, ode_drift, score, reverse=False):
        super().__init__()
        self.drift = ode_drift
        self.score = score
        self.reverse = reverse

    # Drift
    def f(self, t, y):
        if self.reverse:
            t = 1 - t
        if len(t.shape) == len(y.shape):
            x = torch.cat([y, t], 1)
        else:
            x = torch.cat([y, t.repeat(y.shape[0])[:, None]], 1)
        if self.reverse:
            return -self.drift(x) + self.score(x)
        return self.drift(x) + self.score(x)

    # Diffusion
    def g(self, t, y):
        return torch.ones_like(t) * torch.ones_like(y)


def build_sde(reverse=True):
    dim = 2
    model = MLP(dim=dim, w=16, time_varying=True)
    score_model = MLP(dim=dim, w=16, time_varying=True)
    return SDE(model, score_model, reverse=reverse)


sde = build_sde()
sde.f = torch.compile(sde.f)


def make():
    torch.manual_seed(0)
    sde = build_sde()
    y = torch.randn(8, 2)
    return sde.f, [(torch.tensor(0.25), y), (torch.full((8, 1), 0.5), y)]
