"""LeRobot TD-MPC `plan`: CEM over sampled trajectories, warm start from `self._prev_mean` when set, and the final pick `elite_actions[:, torch.multinomial(score, 1).item()]`.

Source: huggingface/lerobot@0110939427aa59e6b69a9e809d891c7068363bc6:lerobot/common/policies/tdmpc/modeling_tdmpc.py:129-269
Kept: TDMPCPolicy.plan and estimate_value verbatim (the Q-ensemble subset drawn with
torch.randint, the uncertainty regulariser), get_device_from_parameters from
lerobot/common/policies/utils.py.
Simplified: einops.repeat / einops.rearrange are written as the equivalent expand / view
(programs import only torch); TOLD is a stand-in with TOLD's method names and shapes
(pi, latent_dynamics, latent_dynamics_and_reward, Qs); TDMPCConfig is a small dataclass;
no normalizers or action queues.
"""
from dataclasses import dataclass, field

import torch
import torch.nn as nn
from torch import Tensor


@dataclass
class TDMPCConfig:
    horizon: int = 3
    n_gaussian_samples: int = 8
    n_pi_samples: int = 2
    n_elites: int = 4
    cem_iterations: int = 2
    max_std: float = 2.0
    min_std: float = 0.05
    elite_weighting_temperature: float = 0.5
    gaussian_mean_momentum: float = 0.1
    uncertainty_regularizer_coeff: float = 1.0
    discount: float = 0.9
    q_ensemble_size: int = 5
    latent_dim: int = 6
    output_shapes: dict = field(default_factory=lambda: {"action": [2]})


def get_device_from_parameters(module: nn.Module) -> torch.device:
    """Get a module's device by checking one of its parameters.

    Note: assumes that all parameters have the same device
    """
    return next(iter(module.parameters())).device


class TOLD(nn.Module):
    """Stand-in for TD-MPC's Task-Oriented Latent Dynamics model (same methods and shapes)."""

    def __init__(self, config: TDMPCConfig):
        super().__init__()
        self.config = config
        action_dim = config.output_shapes["action"][0]
        self._dynamics = nn.Linear(config.latent_dim + action_dim, config.latent_dim)
        self._reward = nn.Linear(config.latent_dim + action_dim, 1)
        self._pi = nn.Linear(config.latent_dim, action_dim)
        self._Qs = nn.ModuleList([nn.Linear(config.latent_dim + action_dim, 1) for _ in range(config.q_ensemble_size)])

    def latent_dynamics_and_reward(self, z: Tensor, a: Tensor) -> tuple[Tensor, Tensor]:
        x = torch.cat([z, a], dim=-1)
        return torch.tanh(self._dynamics(x)), self._reward(x).squeeze(-1)

    def latent_dynamics(self, z: Tensor, a: Tensor) -> Tensor:
        x = torch.cat([z, a], dim=-1)
        return torch.tanh(self._dynamics(x))

    def pi(self, z: Tensor, std: float = 0.0) -> Tensor:
        action = torch.tanh(self._pi(z))
        if std > 0:
            std = torch.ones_like(action) * std
            action += torch.randn_like(action) * std
        return action

    def Qs(self, z: Tensor, a: Tensor) -> Tensor:  # noqa: N802
        x = torch.cat([z, a], dim=-1)
        return torch.stack([q(x).squeeze(-1) for q in self._Qs], dim=0)


class TDMPCPolicy(nn.Module):
    name = "tdmpc"

    def __init__(self, cfg: TDMPCConfig | None = None):
        super().__init__()
        if cfg is None:
            cfg = TDMPCConfig()
        self.cfg = cfg
        self.model = TOLD(cfg)
        self.reset()

    def reset(self):
        # Previous mean obtained from the cross-entropy method (CEM) used during MPC. It is used to warm start
        # CEM for the next step.
        self._prev_mean: torch.Tensor | None = None

    @torch.no_grad()
    def plan(self, z: Tensor) -> Tensor:
        """Plan next action using TD-MPC inference.

        Args:
            z: (latent_dim,) tensor for the initial state.
        Returns:
            (action_dim,) tensor for the next action.
        """
        device = get_device_from_parameters(self)

        # Sample Nπ trajectories from the policy.
        pi_actions = torch.empty(
            self.cfg.horizon, self.cfg.n_pi_samples, self.cfg.output_shapes["action"][0], device=device
        )
        if self.cfg.n_pi_samples > 0:
            _z = z.unsqueeze(0).expand(self.cfg.n_pi_samples, -1)  # einops.repeat(z, "d -> n d")
            for t in range(self.cfg.horizon):
                # Note: Adding a small amount of noise here doesn't hurt during inference and may even be
                # helpful for CEM.
                pi_actions[t] = self.model.pi(_z, self.cfg.min_std)
                _z = self.model.latent_dynamics(_z, pi_actions[t])

        # In the CEM loop we will need this for a call to estimate_value with the gaussian sampled
        # trajectories.
        z = z.unsqueeze(0).expand(self.cfg.n_gaussian_samples + self.cfg.n_pi_samples, -1)

        # The initial mean and standard deviation for the cross-entropy method (CEM).
        mean = torch.zeros(self.cfg.horizon, self.cfg.output_shapes["action"][0], device=device)
        # Maybe warm start CEM with the mean from the previous step.
        if self._prev_mean is not None:
            mean[:-1] = self._prev_mean[1:]
        std = self.cfg.max_std * torch.ones_like(mean)

        for _ in range(self.cfg.cem_iterations):
            # Randomly sample action trajectories for the gaussian distribution.
            gaussian_actions = torch.clamp(
                mean.unsqueeze(1)
                + std.unsqueeze(1)
                * torch.randn(
                    self.cfg.horizon,
                    self.cfg.n_gaussian_samples,
                    self.cfg.output_shapes["action"][0],
                    device=std.device,
                ),
                -1,
                1,
            )

            # Compute elite actions.
            actions = torch.cat([gaussian_actions, pi_actions], dim=1)
            value = self.estimate_value(z, actions).nan_to_num_(0)
            elite_idxs = torch.topk(value, self.cfg.n_elites, dim=0).indices
            elite_value, elite_actions = value[elite_idxs], actions[:, elite_idxs]

            # Update guassian PDF parameters to be the (weighted) mean and standard deviation of the elites.
            max_value = elite_value.max(0)[0]
            score = torch.exp(self.cfg.elite_weighting_temperature * (elite_value - max_value))
            score /= score.sum()
            _mean = torch.sum(score.view(-1, 1) * elite_actions, dim=1)
            _std = torch.sqrt(
                torch.sum(
                    score.view(-1, 1)
                    * (elite_actions - _mean.unsqueeze(1)) ** 2,
                    dim=1,
                )
            )
            # Update mean with an exponential moving average, and std with a direct replacement.
            mean = self.cfg.gaussian_mean_momentum * mean + (1 - self.cfg.gaussian_mean_momentum) * _mean
            std = _std.clamp_(self.cfg.min_std, self.cfg.max_std)

        # Keep track of the mean for warm-starting subsequent steps.
        self._prev_mean = mean

        # Randomly select one of the elite actions from the last iteration of MPPI/CEM using the softmax
        # scores from the last iteration.
        actions = elite_actions[:, torch.multinomial(score, 1).item()]

        # Select only the first action
        action = actions[0]
        return action

    @torch.no_grad()
    def estimate_value(self, z: Tensor, actions: Tensor):
        """Estimates the value of a trajectory as per eqn 4 of the FOWM paper."""
        # Initialize return and running discount factor.
        G, running_discount = 0, 1
        for t in range(actions.shape[0]):
            if self.cfg.uncertainty_regularizer_coeff > 0:
                regularization = -(
                    self.cfg.uncertainty_regularizer_coeff * self.model.Qs(z, actions[t]).std(0)
                )
            else:
                regularization = 0
            # Estimate the next state (latent) and reward.
            z, reward = self.model.latent_dynamics_and_reward(z, actions[t])
            # Update the return and running discount.
            G += running_discount * (reward + regularization)
            running_discount *= self.cfg.discount
        next_action = self.model.pi(z, self.cfg.min_std)  # (batch, action_dim)
        terminal_values = self.model.Qs(z, next_action)  # (ensemble, batch)
        # Randomly choose 2 of the Qs for terminal value estimation (as in App C. of the FOWM paper).
        if self.cfg.q_ensemble_size > 2:
            G += (
                running_discount
                * torch.min(terminal_values[torch.randint(0, self.cfg.q_ensemble_size, size=(2,))], dim=0)[0]
            )
        else:
            G += running_discount * torch.min(terminal_values, dim=0)[0]
        # Finally, also regularize the terminal value.
        if self.cfg.uncertainty_regularizer_coeff > 0:
            G -= running_discount * self.cfg.uncertainty_regularizer_coeff * terminal_values.std(0)
        return G


plan = torch.compile(TDMPCPolicy.plan)


def make():
    torch.manual_seed(0)
    fresh = TDMPCPolicy()
    warm = TDMPCPolicy()
    warm.load_state_dict(fresh.state_dict())
    warm._prev_mean = torch.full((3, 2), 0.25)
    z = torch.randn(6)
    return TDMPCPolicy.plan, [(fresh, z), (warm, z)]
