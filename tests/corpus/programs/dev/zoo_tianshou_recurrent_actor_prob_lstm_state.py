"""Tianshou's RecurrentActorProb: observations go through torch.as_tensor (numpy or tensor), an nn.LSTM with flatten_parameters() and an optional (hidden, cell) state dict, then a tanh-bounded mean and a conditioned or parameter sigma.

Source: thu-ml/tianshou@f2402056b03acafeedf2518a5088db55add004ab:tianshou/utils/net/continuous.py:241-322
Also: tianshou/utils/torch_utils.py:80-88 (torch_device), continuous.py:21-22 (SIGMA_MIN/MAX).
Kept: the constructor (unbounded/max_action warning, LSTM sizes from np.prod of
the shapes, conditioned_sigma switch) and forward verbatim (info default,
torch_device, as_tensor, the 2D->3D unsqueeze, the state None / state dict
branches with transposes, the sigma switch, the detached state dict return).
Simplified: nothing else of the library; 1 layer, hidden 8, state dim 3, action dim 2.
"""
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

SIGMA_MIN = -20
SIGMA_MAX = 2


def torch_device(module: torch.nn.Module) -> torch.device:
    """Gets the device of a torch module by retrieving the device of the parameters.

    If parameters are empty, it returns the CPU device as a fallback.
    """
    try:
        return next(module.parameters()).device
    except StopIteration:
        return torch.device("cpu")


class RecurrentActorProb(nn.Module):
    """Recurrent version of ActorProb."""

    def __init__(
        self,
        *,
        layer_num: int,
        state_shape: Sequence[int],
        action_shape: Sequence[int],
        hidden_layer_size: int = 128,
        max_action: float = 1.0,
        unbounded: bool = False,
        conditioned_sigma: bool = False,
    ) -> None:
        super().__init__()
        if unbounded and not np.isclose(max_action, 1.0):
            warnings.warn("Note that max_action input will be discarded when unbounded is True.")
            max_action = 1.0
        self.nn = nn.LSTM(
            input_size=int(np.prod(state_shape)),
            hidden_size=hidden_layer_size,
            num_layers=layer_num,
            batch_first=True,
        )
        output_dim = int(np.prod(action_shape))
        self.mu = nn.Linear(hidden_layer_size, output_dim)
        self._c_sigma = conditioned_sigma
        if conditioned_sigma:
            self.sigma = nn.Linear(hidden_layer_size, output_dim)
        else:
            self.sigma_param = nn.Parameter(torch.zeros(output_dim, 1))
        self.max_action = max_action
        self._unbounded = unbounded

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        state: dict[str, torch.Tensor] | None = None,
        info: dict[str, Any] | None = None,
    ) -> tuple[tuple[torch.Tensor, torch.Tensor], dict[str, torch.Tensor]]:
        """Almost the same as :class:`~tianshou.utils.net.common.Recurrent`."""
        if info is None:
            info = {}
        device = torch_device(self)
        obs = torch.as_tensor(
            obs,
            device=device,
            dtype=torch.float32,
        )
        # obs [bsz, len, dim] (training) or [bsz, dim] (evaluation)
        # In short, the tensor's shape in training phase is longer than which
        # in evaluation phase.
        if len(obs.shape) == 2:
            obs = obs.unsqueeze(-2)
        self.nn.flatten_parameters()
        if state is None:
            obs, (hidden, cell) = self.nn(obs)
        else:
            # we store the stack data in [bsz, len, ...] format
            # but pytorch rnn needs [len, bsz, ...]
            obs, (hidden, cell) = self.nn(
                obs,
                (
                    state["hidden"].transpose(0, 1).contiguous(),
                    state["cell"].transpose(0, 1).contiguous(),
                ),
            )
        logits = obs[:, -1]
        mu = self.mu(logits)
        if not self._unbounded:
            mu = self.max_action * torch.tanh(mu)
        if self._c_sigma:
            sigma = torch.clamp(self.sigma(logits), min=SIGMA_MIN, max=SIGMA_MAX).exp()
        else:
            shape = [1] * len(mu.shape)
            shape[1] = -1
            sigma = (self.sigma_param.view(shape) + torch.zeros_like(mu)).exp()
        # please ensure the first dim is batch size: [bsz, len, ...]
        return (mu, sigma), {
            "hidden": hidden.transpose(0, 1).detach(),
            "cell": cell.transpose(0, 1).detach(),
        }


def make_actor(conditioned_sigma=False):
    return RecurrentActorProb(
        layer_num=1, state_shape=(3,), action_shape=(2,), hidden_layer_size=8,
        max_action=2.0, unbounded=False, conditioned_sigma=conditioned_sigma,
    )


actor = torch.compile(make_actor())


def make():
    torch.manual_seed(0)
    obs_eval = torch.randn(4, 3)
    obs_train = torch.randn(4, 5, 3)
    state = {"hidden": torch.randn(4, 1, 8), "cell": torch.randn(4, 1, 8)}
    obs_np = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3)
    return make_actor(), [(obs_eval,), (obs_train, state), (obs_np, None, {"env_id": 0})]
