"""LSTNet: a Conv2d front end feeding an nn.GRU, a skip-GRU over periodic slices, and a linear highway (autoregressive) term.

Source: laiguokun/LSTNet@001bec3916352c02a773a5570691288c0e52b4f9:models/LSTNet.py:1-75
Kept: Model(args, data) with its attribute plumbing (P, m, hidR, hidC, hidS,
Ck, skip, pt, hw), the `skip > 0` / `hw > 0` / output_fun construction
switches, forward's CNN -> GRU1 -> skip-GRU -> linear1 -> highway -> output
sequence and the semicolon style of the original.
Simplified: `self.pt` is computed with `int(...)` (the original's `/` is a
Python 2 integer division; under Python 3 the `.view` would get a float);
args/data are small namespace stand-ins; window 12, 3 series, tiny sizes.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Args:
    cuda = False
    window = 12
    hidRNN = 6
    hidCNN = 5
    hidSkip = 3
    CNN_kernel = 4
    skip = 4
    highway_window = 3
    dropout = 0.2
    output_fun = 'sigmoid'


class Data:
    m = 3


class Model(nn.Module):
    def __init__(self, args, data):
        super(Model, self).__init__()
        self.use_cuda = args.cuda
        self.P = args.window;
        self.m = data.m
        self.hidR = args.hidRNN;
        self.hidC = args.hidCNN;
        self.hidS = args.hidSkip;
        self.Ck = args.CNN_kernel;
        self.skip = args.skip;
        self.pt = int((self.P - self.Ck)/self.skip)
        self.hw = args.highway_window
        self.conv1 = nn.Conv2d(1, self.hidC, kernel_size = (self.Ck, self.m));
        self.GRU1 = nn.GRU(self.hidC, self.hidR);
        self.dropout = nn.Dropout(p = args.dropout);
        if (self.skip > 0):
            self.GRUskip = nn.GRU(self.hidC, self.hidS);
            self.linear1 = nn.Linear(self.hidR + self.skip * self.hidS, self.m);
        else:
            self.linear1 = nn.Linear(self.hidR, self.m);
        if (self.hw > 0):
            self.highway = nn.Linear(self.hw, 1);
        self.output = None;
        if (args.output_fun == 'sigmoid'):
            self.output = F.sigmoid;
        if (args.output_fun == 'tanh'):
            self.output = F.tanh;

    def forward(self, x):
        batch_size = x.size(0);

        #CNN
        c = x.view(-1, 1, self.P, self.m);
        c = F.relu(self.conv1(c));
        c = self.dropout(c);
        c = torch.squeeze(c, 3);

        # RNN
        r = c.permute(2, 0, 1).contiguous();
        _, r = self.GRU1(r);
        r = self.dropout(torch.squeeze(r,0));


        #skip-rnn

        if (self.skip > 0):
            s = c[:,:, int(-self.pt * self.skip):].contiguous();
            s = s.view(batch_size, self.hidC, self.pt, self.skip);
            s = s.permute(2,0,3,1).contiguous();
            s = s.view(self.pt, batch_size * self.skip, self.hidC);
            _, s = self.GRUskip(s);
            s = s.view(batch_size, self.skip * self.hidS);
            s = self.dropout(s);
            r = torch.cat((r,s),1);

        res = self.linear1(r);

        #highway
        if (self.hw > 0):
            z = x[:, -self.hw:, :];
            z = z.permute(0,2,1).contiguous().view(-1, self.hw);
            z = self.highway(z);
            z = z.view(-1,self.m);
            res = res + z;

        if (self.output):
            res = self.output(res);
        return res;


def main():
    args, data = Args(), Data()
    model = Model(args, data)
    model = torch.compile(model)
    return model


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 12, 3)
    return Model(Args(), Data()), [(x,), (x[:1],)]
