"""rl_games A2C network with a GRU: `RnnWithDones` steps the nn.GRU one time step at a time, zeroing the hidden state with `1.0 - dones` and detaching it every `bptt_len` steps.

Source: Denys88/rl_games@005ec1745359de50f958d4fe42847ed20a9e00a7:rl_games/algos_torch/network_builder.py:190-480
Also: rl_games/common/layers/recurrent.py@09f6fc42a9cfac8da769bbfe3f14ad812a123193:1-44 (repackage_hidden,
multiply_hidden, RnnWithDones, GRUWithDones, LSTMWithDones).
Kept: A2CBuilder.Network.load's params dict plumbing, _build_rnn/_build_sequential_mlp,
the non-separate forward branch verbatim (obs_dict.get for rnn_states/dones/
bptt_len/seq_length, reshape to (num_seqs, seq_length), `if len(states) == 1`,
`type(states) is not tuple`), get_default_rnn_state, the discrete head.
Simplified: no CNN (mlp input only), no activation/initializer factories (a dict
of constructors), no d2rl, no continuous/multi-discrete heads, no build-time prints.
"""
import torch
import torch.nn as nn


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""

    if isinstance(h, torch.Tensor):
        return h.detach()
    else:
        return tuple(repackage_hidden(v) for v in h)


def multiply_hidden(h, mask):
    if isinstance(h, torch.Tensor):
        return h * mask
    else:
        return tuple(multiply_hidden(v, mask) for v in h)


class RnnWithDones(nn.Module):
    def __init__(self, rnn_layer):
        nn.Module.__init__(self)
        self.rnn = rnn_layer

    def forward(self, input, states, done_masks=None, bptt_len=0):
        max_steps = input.size()[0]
        batch_size = input.size()[1]
        out_batch = []

        for i in range(max_steps):
            if done_masks is not None:
                dones = done_masks[i].float().unsqueeze(0)
                states = multiply_hidden(states, 1.0 - dones)
            if (bptt_len > 0) and (i % bptt_len == 0):
                states = repackage_hidden(states)
            out, states = self.rnn(input[i].unsqueeze(0), states)
            out_batch.append(out)
        return torch.cat(out_batch, dim=0), states


class LSTMWithDones(RnnWithDones):
    def __init__(self, *args, **kwargs):
        lstm = torch.nn.LSTM(*args, **kwargs)
        RnnWithDones.__init__(self, lstm)


class GRUWithDones(RnnWithDones):
    def __init__(self, *args, **kwargs):
        gru = torch.nn.GRU(*args, **kwargs)
        RnnWithDones.__init__(self, gru)


ACTIVATIONS = {'relu': nn.ReLU, 'elu': nn.ELU, 'None': nn.Identity}


class Network(nn.Module):
    def __init__(self, params, **kwargs):
        actions_num = kwargs.pop('actions_num')
        input_shape = kwargs.pop('input_shape')
        self.value_size = kwargs.pop('value_size', 1)
        self.num_seqs = kwargs.pop('num_seqs', 1)
        nn.Module.__init__(self)
        self.load(params)

        mlp_input_size = input_shape[0]
        if len(self.units) == 0:
            out_size = mlp_input_size
        else:
            out_size = self.units[-1]

        if self.has_rnn:
            if not self.is_rnn_before_mlp:
                rnn_in_size = out_size
                out_size = self.rnn_units
            else:
                rnn_in_size = mlp_input_size
                mlp_input_size = self.rnn_units
            self.rnn = self._build_rnn(self.rnn_name, rnn_in_size, self.rnn_units, self.rnn_layers)
            if self.rnn_ln:
                self.layer_norm = torch.nn.LayerNorm(self.rnn_units)

        self.actor_mlp = self._build_sequential_mlp(mlp_input_size, self.units, self.activation, torch.nn.Linear)
        self.value = torch.nn.Linear(out_size, self.value_size)
        self.value_act = ACTIVATIONS[self.value_activation]()
        if self.is_discrete:
            self.logits = torch.nn.Linear(out_size, actions_num)

    def _build_rnn(self, name, input, units, layers):
        if name == 'lstm':
            return LSTMWithDones(input_size=input, hidden_size=units, num_layers=layers)
        if name == 'gru':
            return GRUWithDones(input_size=input, hidden_size=units, num_layers=layers)

    def _build_sequential_mlp(self, input_size, units, activation, dense_func):
        in_size = input_size
        layers = []
        for unit in units:
            layers.append(dense_func(in_size, unit))
            layers.append(ACTIVATIONS[activation]())
            in_size = unit
        return nn.Sequential(*layers)

    def forward(self, obs_dict):
        obs = obs_dict['obs']
        states = obs_dict.get('rnn_states', None)
        dones = obs_dict.get('dones', None)
        bptt_len = obs_dict.get('bptt_len', 0)

        out = obs
        out = out.flatten(1)

        if self.has_rnn:
            seq_length = obs_dict.get('seq_length', 1)

            cnn_out = out
            if not self.is_rnn_before_mlp:
                out = self.actor_mlp(out)

            batch_size = out.size()[0]
            num_seqs = batch_size // seq_length
            out = out.reshape(num_seqs, seq_length, -1)

            if len(states) == 1:
                states = states[0]

            out = out.transpose(0, 1)
            if dones is not None:
                dones = dones.reshape(num_seqs, seq_length, -1)
                dones = dones.transpose(0, 1)
            out, states = self.rnn(out, states, dones, bptt_len)
            out = out.transpose(0, 1)
            out = out.contiguous().reshape(out.size()[0] * out.size()[1], -1)

            if self.rnn_ln:
                out = self.layer_norm(out)
            if self.is_rnn_before_mlp:
                out = self.actor_mlp(out)
            if type(states) is not tuple:
                states = (states,)
        else:
            out = self.actor_mlp(out)
        value = self.value_act(self.value(out))

        if self.central_value:
            return value, states

        if self.is_discrete:
            logits = self.logits(out)
            return logits, value, states

    def get_default_rnn_state(self):
        if not self.has_rnn:
            return None
        num_layers = self.rnn_layers
        rnn_units = self.rnn_units
        if self.rnn_name == 'lstm':
            return (torch.zeros((num_layers, self.num_seqs, rnn_units)),
                    torch.zeros((num_layers, self.num_seqs, rnn_units)))
        else:
            return (torch.zeros((num_layers, self.num_seqs, rnn_units)),)

    def load(self, params):
        self.units = params['mlp']['units']
        self.activation = params['mlp']['activation']
        self.value_activation = params.get('value_activation', 'None')
        self.has_rnn = 'rnn' in params
        self.central_value = params.get('central_value', False)
        self.is_discrete = 'discrete' in params['space']
        if self.has_rnn:
            self.rnn_units = params['rnn']['units']
            self.rnn_layers = params['rnn']['layers']
            self.rnn_name = params['rnn']['name']
            self.rnn_ln = params['rnn'].get('layer_norm', False)
            self.is_rnn_before_mlp = params['rnn'].get('before_mlp', False)


PARAMS = {
    'mlp': {'units': [16, 8], 'activation': 'elu'},
    'rnn': {'name': 'gru', 'units': 8, 'layers': 1, 'layer_norm': True},
    'space': {'discrete': {}},
}


def build_network():
    return Network(PARAMS, actions_num=3, input_shape=(6,), num_seqs=2)


def main():
    net = build_network()
    compiled = torch.compile(net)
    return compiled


def make():
    torch.manual_seed(0)
    net = build_network()
    states = net.get_default_rnn_state()
    obs = torch.randn(8, 6)  # 2 sequences of 4 steps
    dones = torch.tensor([0, 0, 1, 0, 0, 1, 0, 0], dtype=torch.uint8)
    return net, [
        ({'obs': obs, 'rnn_states': states, 'seq_length': 4},),
        ({'obs': obs, 'rnn_states': states, 'dones': dones, 'seq_length': 4, 'bptt_len': 2},),
    ]
