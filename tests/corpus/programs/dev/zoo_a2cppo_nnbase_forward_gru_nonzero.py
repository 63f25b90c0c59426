"""PPO recurrent policy base: `NNBase._forward_gru` splits the rollout at steps where any mask is zero (`nonzero`, `.item()`, `.numpy().tolist()`) and runs the GRU per segment.

Source: ikostrikov/pytorch-a2c-ppo-acktr-gail@0be5d6e5fa9edc7ed0834afde8c6159cde2cf4b6:a2c_ppo_acktr/model.py:171-326
Kept: the `init` helper from a2c_ppo_acktr/utils.py, NNBase (GRU init loop, the
`is_recurrent` / `recurrent_hidden_state_size` / `output_size` properties,
`_forward_gru` verbatim) and MLPBase (actor/critic towers, critic_linear).
Simplified: obs size 6, hidden size 8, no Policy/distribution wrapper, no CNNBase.
"""
import numpy as np
import torch
import torch.nn as nn


def init(module, weight_init, bias_init, gain=1):
    weight_init(module.weight.data, gain=gain)
    bias_init(module.bias.data)
    return module


class NNBase(nn.Module):

    def __init__(self, recurrent, recurrent_input_size, hidden_size):
        super(NNBase, self).__init__()

        self._hidden_size = hidden_size
        self._recurrent = recurrent

        if recurrent:
            self.gru = nn.GRU(recurrent_input_size, hidden_size)
            for name, param in self.gru.named_parameters():
                if 'bias' in name:
                    nn.init.constant_(param, 0)
                elif 'weight' in name:
                    nn.init.orthogonal_(param)

    @property
    def is_recurrent(self):
        return self._recurrent

    @property
    def recurrent_hidden_state_size(self):
        if self._recurrent:
            return self._hidden_size
        return 1

    @property
    def output_size(self):
        return self._hidden_size

    def _forward_gru(self, x, hxs, masks):
        if x.size(0) == hxs.size(0):
            x, hxs = self.gru(x.unsqueeze(0), (hxs * masks).unsqueeze(0))
            x = x.squeeze(0)
            hxs = hxs.squeeze(0)
        else:
            # x is a (T, N, -1) tensor that has been flatten to (T * N, -1)
            N = hxs.size(0)
            T = int(x.size(0) / N)

            # unflatten
            x = x.view(T, N, x.size(1))

            # Same deal with masks
            masks = masks.view(T, N)

            # Let's figure out which steps in the sequence have a zero for any agent
            # We will always assume t=0 has a zero in it as that makes the logic cleaner
            has_zeros = ((masks[1:] == 0.0) \
                            .any(dim=-1)
                            .nonzero()
                            .squeeze()
                            .cpu())

            # +1 to correct the masks[1:]
            if has_zeros.dim() == 0:
                # Deal with scalar
                has_zeros = [has_zeros.item() + 1]
            else:
                has_zeros = (has_zeros + 1).numpy().tolist()

            # add t=0 and t=T to the list
            has_zeros = [0] + has_zeros + [T]

            hxs = hxs.unsqueeze(0)
            outputs = []
            for i in range(len(has_zeros) - 1):
                # We can now process steps that don't have any zeros in masks together!
                # This is much faster
                start_idx = has_zeros[i]
                end_idx = has_zeros[i + 1]

                rnn_scores, hxs = self.gru(
                    x[start_idx:end_idx], hxs * masks[start_idx].view(1, -1, 1))

                outputs.append(rnn_scores)

            # assert len(outputs) == T
            # x is a (T, N, -1) tensor
            x = torch.cat(outputs, dim=0)
            # flatten
            x = x.view(T * N, -1)
            hxs = hxs.squeeze(0)

        return x, hxs


class MLPBase(NNBase):

    def __init__(self, num_inputs, recurrent=False, hidden_size=64):
        super(MLPBase, self).__init__(recurrent, num_inputs, hidden_size)

        if recurrent:
            num_inputs = hidden_size

        init_ = lambda m: init(m, nn.init.orthogonal_, lambda x: nn.init.
                               constant_(x, 0), np.sqrt(2))

        self.actor = nn.Sequential(
            init_(nn.Linear(num_inputs, hidden_size)), nn.Tanh(),
            init_(nn.Linear(hidden_size, hidden_size)), nn.Tanh())

        self.critic = nn.Sequential(
            init_(nn.Linear(num_inputs, hidden_size)), nn.Tanh(),
            init_(nn.Linear(hidden_size, hidden_size)), nn.Tanh())

        self.critic_linear = init_(nn.Linear(hidden_size, 1))

        self.train()

    def forward(self, inputs, rnn_hxs, masks):
        x = inputs

        if self.is_recurrent:
            x, rnn_hxs = self._forward_gru(x, rnn_hxs, masks)

        hidden_critic = self.critic(x)
        hidden_actor = self.actor(x)

        return self.critic_linear(hidden_critic), hidden_actor, rnn_hxs


def build_base(obs_dim, hidden_size):
    base = MLPBase(obs_dim, recurrent=True, hidden_size=hidden_size)
    return torch.compile(base)


def make():
    torch.manual_seed(0)
    n_proc, steps, obs_dim, hidden = 2, 4, 6, 8
    hxs = torch.randn(n_proc, hidden)
    # acting: one step for every process
    step_obs = torch.randn(n_proc, obs_dim)
    step_masks = torch.tensor([[1.0], [0.0]])
    # evaluating a rollout of T steps flattened to (T * N, obs)
    roll_obs = torch.randn(steps * n_proc, obs_dim)
    one_done = torch.ones(steps * n_proc, 1)
    one_done[2 * n_proc + 1] = 0.0
    two_done = torch.ones(steps * n_proc, 1)
    two_done[1 * n_proc] = 0.0
    two_done[3 * n_proc + 1] = 0.0
    return MLPBase(obs_dim, recurrent=True, hidden_size=hidden), [
        (step_obs, hxs, step_masks),
        (roll_obs, hxs, one_done),
        (roll_obs, hxs, two_done),
    ]
