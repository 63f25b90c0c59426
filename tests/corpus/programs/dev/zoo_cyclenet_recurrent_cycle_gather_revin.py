"""CycleNet forecaster: `RecurrentCycle` gathers learned per-phase offsets with `(index.view(-1, 1) + torch.arange(length)) % cycle_len` from an integer cycle-index tensor, around a linear or MLP backbone with optional instance normalization.

Source: ACAT-SCUT/CycleNet@bba6d4318fc4c9580dc6453b18a5d2d746abda78:models/CycleNet.py:1-65
Kept: RecurrentCycle and Model verbatim (configs plumbing, model_type
assert, use_revin branches).
Simplified: configs is a small namespace; seq_len 12, pred_len 6, 3 channels,
cycle 5, MLP width 16; the compile entry mirrors exp_main's model build.
"""
import torch
import torch.nn as nn

class RecurrentCycle(torch.nn.Module):
    def __init__(self, cycle_len, channel_size):
        super(RecurrentCycle, self).__init__()
        self.cycle_len = cycle_len
        self.channel_size = channel_size
        self.data = torch.nn.Parameter(torch.zeros(cycle_len, channel_size), requires_grad=True)

    def forward(self, index, length):
        gather_index = (index.view(-1, 1) + torch.arange(length, device=index.device).view(1, -1)) % self.cycle_len
        return self.data[gather_index]


class Model(nn.Module):
    def __init__(self, configs):
        super(Model, self).__init__()

        self.seq_len = configs.seq_len
        self.pred_len = configs.pred_len
        self.enc_in = configs.enc_in
        self.cycle_len = configs.cycle
        self.model_type = configs.model_type
        self.d_model = configs.d_model
        self.use_revin = configs.use_revin

        self.cycleQueue = RecurrentCycle(cycle_len=self.cycle_len, channel_size=self.enc_in)

        assert self.model_type in ['linear', 'mlp']
        if self.model_type == 'linear':
            self.model = nn.Linear(self.seq_len, self.pred_len)
        elif self.model_type == 'mlp':
            self.model = nn.Sequential(
                nn.Linear(self.seq_len, self.d_model),
                nn.ReLU(),
                nn.Linear(self.d_model, self.pred_len)
            )

    def forward(self, x, cycle_index):
        # instance norm
        if self.use_revin:
            seq_mean = torch.mean(x, dim=1, keepdim=True)
            seq_var = torch.var(x, dim=1, keepdim=True) + 1e-5
            x = (x - seq_mean) / torch.sqrt(seq_var)

        # remove the cycle of the input data
        x = x - self.cycleQueue(cycle_index, self.seq_len)

        # forecasting with channel independence (parameters-sharing)
        y = self.model(x.permute(0, 2, 1)).permute(0, 2, 1)

        # add back the cycle of the output data
        y = y + self.cycleQueue((cycle_index + self.seq_len) % self.cycle_len, self.pred_len)

        # instance denorm
        if self.use_revin:
            y = y * torch.sqrt(seq_var) + seq_mean

        return y


class Configs:
    seq_len = 12
    pred_len = 6
    enc_in = 3
    cycle = 5
    model_type = 'mlp'
    d_model = 16
    use_revin = 1


def _build_model(args):
    model = Model(args).float()
    return torch.compile(model)


def make():
    torch.manual_seed(0)
    model = Model(Configs()).float()
    with torch.no_grad():
        model.cycleQueue.data.normal_()
    x = torch.randn(4, 12, 3)
    cycle_index = torch.tensor([0, 3, 4, 1])
    return model, [(x, cycle_index), (x[:1], cycle_index[:1])]
