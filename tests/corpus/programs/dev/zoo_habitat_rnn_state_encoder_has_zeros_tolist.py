"""Habitat's RNNStateEncoder: the rollout sequence is split where any episode restarts, found with `.nonzero().squeeze().cpu()`, then `.item()` or `.numpy().tolist()`, and each run of steps goes through the GRU.

Source: facebookresearch/habitat-lab@c3cc06948f9042137358a1aa54592a3325da8747:habitat_baselines/rl/models/rnn_state_encoder.py:1-140
Also: habitat_baselines/rl/ppo/policy.py (PointNavBaselineNet.forward calls
self.state_encoder(x, rnn_hidden_states, masks)).
Kept: RNNStateEncoder verbatim (getattr(nn, rnn_type), the pack/unpack/mask
hidden helpers, single_forward, seq_forward with the has_zeros split,
forward choosing between them by shape).
Simplified: the policy net is a linear visual encoder plus the state
encoder; sizes are tiny.
"""
import torch
import torch.nn as nn


class RNNStateEncoder(nn.Module):
    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        rnn_type: str = "GRU",
    ):
        r"""An RNN for encoding the state in RL.

        Supports masking the hidden state during various timesteps in the forward lass

        Args:
            input_size: The input size of the RNN
            hidden_size: The hidden size
            num_layers: The number of recurrent layers
            rnn_type: The RNN cell type.  Must be GRU or LSTM
        """

        super().__init__()
        self._num_recurrent_layers = num_layers
        self._rnn_type = rnn_type

        self.rnn = getattr(nn, rnn_type)(
            input_size=input_size,
            hidden_size=hidden_size,
            num_layers=num_layers,
        )

        self.layer_init()

    def layer_init(self):
        for name, param in self.rnn.named_parameters():
            if "weight" in name:
                nn.init.orthogonal_(param)
            elif "bias" in name:
                nn.init.constant_(param, 0)

    @property
    def num_recurrent_layers(self):
        return self._num_recurrent_layers * (
            2 if "LSTM" in self._rnn_type else 1
        )

    def _pack_hidden(self, hidden_states):
        if "LSTM" in self._rnn_type:
            hidden_states = torch.cat(
                [hidden_states[0], hidden_states[1]], dim=0
            )

        return hidden_states

    def _unpack_hidden(self, hidden_states):
        if "LSTM" in self._rnn_type:
            hidden_states = (
                hidden_states[0 : self._num_recurrent_layers],
                hidden_states[self._num_recurrent_layers :],
            )

        return hidden_states

    def _mask_hidden(self, hidden_states, masks):
        if isinstance(hidden_states, tuple):
            hidden_states = tuple(v * masks for v in hidden_states)
        else:
            hidden_states = masks * hidden_states

        return hidden_states

    def single_forward(self, x, hidden_states, masks):
        r"""Forward for a non-sequence input
        """
        hidden_states = self._unpack_hidden(hidden_states)
        x, hidden_states = self.rnn(
            x.unsqueeze(0),
            self._mask_hidden(hidden_states, masks.unsqueeze(0)),
        )
        x = x.squeeze(0)
        hidden_states = self._pack_hidden(hidden_states)
        return x, hidden_states

    def seq_forward(self, x, hidden_states, masks):
        r"""Forward for a sequence of length T

        Args:
            x: (T, N, -1) Tensor that has been flattened to (T * N, -1)
            hidden_states: The starting hidden state.
            masks: The masks to be applied to hidden state at every timestep.
                A (T, N) tensor flatten to (T * N)
        """
        # x is a (T, N, -1) tensor flattened to (T * N, -1)
        n = hidden_states.size(1)
        t = int(x.size(0) / n)

        # unflatten
        x = x.view(t, n, x.size(1))
        masks = masks.view(t, n)

        # steps in sequence which have zero for any agent. Assume t=0 has
        # a zero in it.
        has_zeros = (masks[1:] == 0.0).any(dim=-1).nonzero().squeeze().cpu()

        # +1 to correct the masks[1:]
        if has_zeros.dim() == 0:
            has_zeros = [has_zeros.item() + 1]  # handle scalar
        else:
            has_zeros = (has_zeros + 1).numpy().tolist()

        # add t=0 and t=T to the list
        has_zeros = [0] + has_zeros + [t]

        hidden_states = self._unpack_hidden(hidden_states)
        outputs = []
        for i in range(len(has_zeros) - 1):
            # process steps that don't have any zeros in masks together
            start_idx = has_zeros[i]
            end_idx = has_zeros[i + 1]

            rnn_scores, hidden_states = self.rnn(
                x[start_idx:end_idx],
                self._mask_hidden(
                    hidden_states, masks[start_idx].view(1, -1, 1)
                ),
            )

            outputs.append(rnn_scores)

        # x is a (T, N, -1) tensor
        x = torch.cat(outputs, dim=0)
        x = x.view(t * n, -1)  # flatten

        hidden_states = self._pack_hidden(hidden_states)
        return x, hidden_states

    def forward(self, x, hidden_states, masks):
        if x.size(0) == hidden_states.size(1):
            return self.single_forward(x, hidden_states, masks)
        else:
            return self.seq_forward(x, hidden_states, masks)


class PointNavBaselineNet(nn.Module):
    def __init__(self, observation_size: int, hidden_size: int):
        super().__init__()
        self._hidden_size = hidden_size
        self.visual_encoder = nn.Sequential(
            nn.Linear(observation_size, hidden_size), nn.ReLU(True)
        )
        self.state_encoder = RNNStateEncoder(hidden_size, self._hidden_size)

    @property
    def is_blind(self):
        return False

    def forward(self, observations, rnn_hidden_states, prev_actions, masks):
        x = []
        if not self.is_blind:
            perception_embed = self.visual_encoder(observations)
            x = [perception_embed] + x

        x = torch.cat(x, dim=1)
        x, rnn_hidden_states = self.state_encoder(x, rnn_hidden_states, masks)

        return x, rnn_hidden_states


net = PointNavBaselineNet(observation_size=6, hidden_size=8)
compiled_net = torch.compile(net)


def make():
    torch.manual_seed(0)
    model = PointNavBaselineNet(observation_size=6, hidden_size=8)
    n_envs, t = 2, 4
    hidden = torch.zeros(1, n_envs, 8)
    prev_actions = torch.zeros(n_envs, 1, dtype=torch.long)

    step_obs = torch.randn(n_envs, 6)
    step_masks = torch.tensor([[1.0], [0.0]])

    seq_obs = torch.randn(t * n_envs, 6)
    one_restart = torch.ones(t, n_envs)
    one_restart[2, 1] = 0.0
    two_restarts = torch.ones(t, n_envs)
    two_restarts[1, 0] = 0.0
    two_restarts[3, 1] = 0.0
    no_restart = torch.ones(t, n_envs)
    no_restart[0] = 0.0
    return model, [
        (step_obs, hidden, prev_actions, step_masks),
        (seq_obs, hidden, prev_actions, one_restart.view(-1, 1)),
        (seq_obs, hidden, prev_actions, two_restarts.view(-1, 1)),
        (seq_obs, hidden, prev_actions, no_restart.view(-1, 1)),
    ]
