"""minDiffusion superminddpm DDPM training forward: random timesteps, buffer gathers, MSE criterion module.

Source: cloneofsimo/minDiffusion@8f530f4b77a7dbc08704e658a0acacd8cd884ad2:superminddpm.py:17-118
Kept: ddpm_schedules (assert on betas, dict of schedules), DummyEpsModel
(conv + BatchNorm stack that ignores t), DDPM registering every schedule as
a buffer in a loop over `self.vars.items()`, and DDPM.forward as written:
`torch.randint(...).to(x.device)`, `randn_like`, `self.sqrtab[_ts, None,
None, None]` gathers, `_ts / self.n_T` and the stored `nn.MSELoss()`.
Simplified: channels 128/64/16 -> 8/8/4, kernel 7 kept, 8x8 single-channel
images, n_T 50; MNIST/tqdm/optimizer loop left out. Compiled as a whole
training module (`torch.compile(ddpm)`), in training mode.
"""
from typing import Dict, Tuple

import torch
import torch.nn as nn


def ddpm_schedules(beta1: float, beta2: float, T: int) -> Dict[str, torch.Tensor]:
    """
    Returns pre-computed schedules for DDPM sampling, training process.
    """
    assert beta1 < beta2 < 1.0, "beta1 and beta2 must be in (0, 1)"

    beta_t = (beta2 - beta1) * torch.arange(0, T + 1, dtype=torch.float32) / T + beta1
    sqrt_beta_t = torch.sqrt(beta_t)
    alpha_t = 1 - beta_t
    log_alpha_t = torch.log(alpha_t)
    alphabar_t = torch.cumsum(log_alpha_t, dim=0).exp()

    sqrtab = torch.sqrt(alphabar_t)
    oneover_sqrta = 1 / torch.sqrt(alpha_t)

    sqrtmab = torch.sqrt(1 - alphabar_t)
    mab_over_sqrtmab_inv = (1 - alpha_t) / sqrtmab

    return {
        "alpha_t": alpha_t,
        "oneover_sqrta": oneover_sqrta,
        "sqrt_beta_t": sqrt_beta_t,
        "alphabar_t": alphabar_t,
        "sqrtab": sqrtab,
        "sqrtmab": sqrtmab,
        "mab_over_sqrtmab": mab_over_sqrtmab_inv,
    }


class DummyEpsModel(nn.Module):
    """
    This should be unet-like, but let's don't think about the model too much :P
    """

    def __init__(self, n_channel: int) -> None:
        super(DummyEpsModel, self).__init__()
        self.conv = nn.Sequential(  # with batchnorm
            nn.Conv2d(n_channel, 8, 7, padding=3),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.Conv2d(8, 8, 7, padding=3),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.Conv2d(8, 4, 7, padding=3),
            nn.BatchNorm2d(4),
            nn.ReLU(),
            nn.Conv2d(4, n_channel, 3, padding=1),
        )

    def forward(self, x, t) -> torch.Tensor:
        # Lets think about using t later
        return self.conv(x)


class DDPM(nn.Module):
    def __init__(
        self,
        eps_model: nn.Module,
        betas: Tuple[float, float],
        n_T: int,
        criterion: nn.Module = nn.MSELoss(),
    ) -> None:
        super(DDPM, self).__init__()
        self.eps_model = eps_model
        self.vars = ddpm_schedules(betas[0], betas[1], n_T)
        # register
        for k, v in self.vars.items():
            self.register_buffer(k, v)

        self.n_T = n_T
        self.criterion = criterion

    def forward(self, x: torch.Tensor) -> torch.Tensor:

        _ts = torch.randint(0, self.n_T - 1, (x.shape[0],)).to(
            x.device
        )  # t ~ Uniform(0, n_T)
        eps = torch.randn_like(x)  # eps ~ N(0, 1)

        x_t = (
            self.sqrtab[_ts, None, None, None] * x
            + self.sqrtmab[_ts, None, None, None] * eps
        )

        return self.criterion(eps, self.eps_model(x_t, _ts / self.n_T))


def train_step_model():
    ddpm = DDPM(eps_model=DummyEpsModel(1), betas=(1e-4, 0.02), n_T=50)
    ddpm.train()
    return torch.compile(ddpm)


def make():
    torch.manual_seed(0)
    ddpm = DDPM(eps_model=DummyEpsModel(1), betas=(1e-4, 0.02), n_T=50)
    ddpm.train()
    return ddpm, [(torch.randn(4, 1, 8, 8),), (torch.randn(2, 1, 8, 8),)]
