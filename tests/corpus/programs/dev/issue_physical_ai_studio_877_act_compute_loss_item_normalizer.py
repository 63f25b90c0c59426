"""ACT policy training forward: feature normalizer over the batch dict, L1 + KL loss, `.item()` into a loss dict.

Source: open-edge-platform/physical-ai-studio#877 (https://github.com/open-edge-platform/physical-ai-studio/pull/877)
Code: open-edge-platform/physical-ai-studio@513d1edd:library/src/physicalai/policies/act/model.py:235-291
and library/src/physicalai/policies/utils/normalization.py:26-170 (the version
before the PR, which says every native policy calls `.item()` inside
`compute_loss()`, part of the compiled forward's call chain).
Kept: `ACT.forward` dispatching on `self._model.training` to `compute_loss` or
`predict_action_chunk`; `compute_loss` as written (input normalizer, inner model
returning `actions_hat, (mu_hat, log_sigma_x2_hat)`, masked L1 with
`~batch[EXTRA + ".action_is_pad"]`, `loss_dict` built with `.item()`, the
`use_vae` KL branch with `kl_weight`); `predict_action_chunk` with the output
denormalizer; `FeatureNormalizeTransform` (feature/batch-key loop with
`endswith`, `StrEnum` norm modes, `buffers_lookup.get(..., nn.ParameterDict())`,
the static `_apply_normalization` with its nested `check_inf` guarded by
`torch.jit.is_scripting()/is_tracing()` and `torch.compiler.is_compiling()`,
MEAN_STD / MIN_MAX / QUANTILES / IDENTITY branches); stats buffers as
`nn.ParameterDict` of `requires_grad=False` parameters filled from numpy.
Simplified: the ACT transformer/VAE (`_ACT`) is a two-Linear stand-in with the
same outputs; state dim 4, action dim 2, chunk 3; the entry is
`torch.compile(policy_model)` as the PR describes for the native policies.
"""
from dataclasses import dataclass
from enum import Enum, StrEnum

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

ACTION = "action"
EXTRA = "extra"
STATE = "state"


class FeatureType(Enum):
    STATE = "STATE"
    ACTION = "ACTION"
    VISUAL = "VISUAL"


class NormalizationType(StrEnum):
    MIN_MAX = "MIN_MAX"
    MEAN_STD = "MEAN_STD"
    QUANTILES = "QUANTILES"
    IDENTITY = "IDENTITY"


@dataclass
class Feature:
    ftype: FeatureType
    shape: tuple
    normalization_data: dict


class FeatureNormalizeTransform(nn.Module):
    def __init__(self, features, norm_map, *, inverse=False):
        super().__init__()
        self._features = features
        self._norm_map = {str(k): v for k, v in norm_map.items()}
        self._inverse = inverse

        self.buffers_lookup = {}
        buffers = self._create_stats_buffers(features, norm_map)
        for key, buffer in buffers.items():
            setattr(self, "buffer_" + key.replace(".", "_"), buffer)
            self.buffers_lookup[key] = buffer

    def forward(self, batch):
        for raw_name, ft in self._features.items():
            for batch_key in batch:
                if batch_key.endswith("." + raw_name) or batch_key == raw_name:
                    norm_mode = self._norm_map[str(ft.ftype)]
                    buffer = self.buffers_lookup.get(raw_name, nn.ParameterDict())
                    self._apply_normalization(batch, batch_key, norm_mode, buffer, inverse=self._inverse)

        return batch

    @staticmethod
    def _apply_normalization(batch, key, norm_mode, buffer, *, inverse):
        def check_inf(t, name=""):
            # Skip check during tracing/scripting/export to avoid data-dependent branching
            is_tracing = torch.jit.is_scripting() or torch.jit.is_tracing()
            # torch.compiler.is_compiling() detects torch.compile and torch.export (PyTorch 2.0+)
            is_compiling = torch.compiler.is_compiling()

            if not is_tracing and not is_compiling and torch.isinf(t).any():
                msg = (
                    f"Normalization buffer '{name}' is infinity. You should either initialize "
                    "model with correct features stats, or use a pretrained model."
                )
                raise ValueError(msg)

        # Skip normalization if the value is None (e.g., during gym rollouts where action is not available)
        if batch[key] is None:
            return

        if norm_mode == NormalizationType.MEAN_STD:
            mean = buffer["mean"]
            std = buffer["std"]
            check_inf(mean, "mean")
            check_inf(std, "std")
            if inverse:
                batch[key] = batch[key] * std + mean
            else:
                batch[key] = (batch[key] - mean) / (std + 1e-8)

        elif norm_mode == NormalizationType.MIN_MAX:
            min_ = buffer["min"]
            max_ = buffer["max"]
            check_inf(min_, "min")
            check_inf(max_, "max")
            if inverse:
                batch[key] = (batch[key] + 1) / 2
                batch[key] = batch[key] * (max_ - min_) + min_
            else:
                # normalize to [0,1]
                batch[key] = (batch[key] - min_) / (max_ - min_ + 1e-8)
                # normalize to [-1, 1]
                batch[key] = batch[key] * 2 - 1

        elif norm_mode == NormalizationType.QUANTILES:
            q01 = buffer["q01"]
            q99 = buffer["q99"]
            check_inf(q01, "q01")
            check_inf(q99, "q99")
            denom = q99 - q01
            denom = torch.where(
                denom == 0,
                torch.tensor(1e-8, device=denom.device, dtype=denom.dtype),
                denom,
            )
            if inverse:
                batch[key] = (batch[key] + 1.0) * denom / 2.0 + q01
            else:
                batch[key] = 2.0 * (batch[key] - q01) / denom - 1.0

        elif norm_mode == NormalizationType.IDENTITY:
            # No transformation for identity normalization
            pass

        else:
            raise ValueError(norm_mode)

    @staticmethod
    def _create_stats_buffers(features, norm_map):
        stats_buffers = {}
        for key, ft in features.items():
            norm_mode = norm_map.get(ft.ftype, NormalizationType.IDENTITY)
            if norm_mode is NormalizationType.IDENTITY:
                continue
            names = {"MEAN_STD": ("mean", "std"), "MIN_MAX": ("min", "max"), "QUANTILES": ("q01", "q99")}[norm_mode]
            buffer = nn.ParameterDict(
                {
                    name: nn.Parameter(torch.ones(ft.shape, dtype=torch.float32) * torch.inf, requires_grad=False)
                    for name in names
                },
            )
            for name in names:
                buffer[name].data = torch.from_numpy(ft.normalization_data[name]).to(dtype=torch.float32).view(ft.shape)
            stats_buffers[key] = buffer
        return stats_buffers


class ACTConfig:
    use_vae = True
    kl_weight = 10.0
    chunk_size = 3
    latent_dim = 4
    normalization_mapping = {
        FeatureType.STATE: NormalizationType.MEAN_STD,
        FeatureType.ACTION: NormalizationType.MIN_MAX,
    }


class _ACT(nn.Module):
    def __init__(self, config, state_dim=4, action_dim=2):
        super().__init__()
        self.config = config
        self.encoder = nn.Linear(state_dim, 2 * config.latent_dim)
        self.action_head = nn.Linear(state_dim + config.latent_dim, config.chunk_size * action_dim)
        self.action_dim = action_dim

    def forward(self, batch):
        latent = self.encoder(batch[STATE])
        mu, log_sigma_x2 = latent.chunk(2, dim=-1)
        actions = self.action_head(torch.cat([batch[STATE], mu], dim=-1))
        return actions.view(-1, self.config.chunk_size, self.action_dim), (mu, log_sigma_x2)


class ACT(nn.Module):
    def __init__(self, input_features, output_features, config=None):
        super().__init__()
        self._config = config or ACTConfig()
        self._input_normalizer = FeatureNormalizeTransform(
            features=input_features,
            norm_map=self._config.normalization_mapping,
        )
        self._output_denormalizer = FeatureNormalizeTransform(
            output_features,
            self._config.normalization_mapping,
            inverse=True,
        )
        self._model = _ACT(self._config)

    def forward(self, batch):
        if self._model.training:
            return self.compute_loss(batch)
        return self.predict_action_chunk(batch)

    def compute_loss(self, batch):
        batch = self._input_normalizer(batch)

        actions_hat, (mu_hat, log_sigma_x2_hat) = self._model(batch)

        l1_loss = (
            F.l1_loss(batch[ACTION], actions_hat, reduction="none") * ~batch[EXTRA + ".action_is_pad"].unsqueeze(-1)
        ).mean()

        loss_dict = {"l1_loss": l1_loss.item()}
        if self._config.use_vae:
            # Calculate Dkl(latent_pdf || standard_normal), summed over the latent dimension, mean over the batch.
            mean_kld = (-0.5 * (1 + log_sigma_x2_hat - mu_hat.pow(2) - (log_sigma_x2_hat).exp())).sum(-1).mean()
            loss_dict["kld_loss"] = mean_kld.item()
            loss = l1_loss + mean_kld * self._config.kl_weight
        else:
            loss = l1_loss

        loss_dict["loss"] = loss.item()
        return loss, loss_dict

    @torch.no_grad()
    def predict_action_chunk(self, batch):
        batch = self._input_normalizer(batch)
        actions = self._model(batch)[0]  # only select the actions, ignore the latent params

        return self._output_denormalizer({ACTION: actions})[ACTION]


def _features():
    state = Feature(FeatureType.STATE, (4,), {"mean": np.zeros(4), "std": np.ones(4)})
    action = Feature(FeatureType.ACTION, (2,), {"min": -np.ones(2), "max": np.ones(2)})
    return {STATE: state, ACTION: action}, {ACTION: action}


def build():
    input_features, output_features = _features()
    return torch.compile(ACT(input_features, output_features))


def make():
    torch.manual_seed(0)
    input_features, output_features = _features()
    model = ACT(input_features, output_features)
    batch = {
        STATE: torch.randn(2, 4),
        ACTION: torch.rand(2, 3, 2),
        EXTRA + ".action_is_pad": torch.tensor([[False, False, True], [False, False, False]]),
    }
    return model, [(batch,)]
