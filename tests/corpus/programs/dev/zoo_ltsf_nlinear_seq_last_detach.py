"""NLinear forecaster: subtracts the detached last value of the window, applies one shared Linear over time (`individual=False`), adds the last value back.

Source: cure-lab/LTSF-Linear@0c113668a3b88c4c4ee586b8c5ec3e539c4de5a6:models/NLinear.py:6-38
Kept: Model verbatim (both `individual` branches, `configs.*` plumbing).
Simplified: configs is a small namespace (seq_len 24, pred_len 6, 4 channels,
individual False as in the paper's default scripts).
"""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    """
    Normalization-Linear
    """
    def __init__(self, configs):
        super(Model, self).__init__()
        self.seq_len = configs.seq_len
        self.pred_len = configs.pred_len

        # Use this line if you want to visualize the weights
        # self.Linear.weight = nn.Parameter((1/self.seq_len)*torch.ones([self.pred_len,self.seq_len]))
        self.channels = configs.enc_in
        self.individual = configs.individual
        if self.individual:
            self.Linear = nn.ModuleList()
            for i in range(self.channels):
                self.Linear.append(nn.Linear(self.seq_len,self.pred_len))
        else:
            self.Linear = nn.Linear(self.seq_len, self.pred_len)

    def forward(self, x):
        # x: [Batch, Input length, Channel]
        seq_last = x[:,-1:,:].detach()
        x = x - seq_last
        if self.individual:
            output = torch.zeros([x.size(0),self.pred_len,x.size(2)],dtype=x.dtype).to(x.device)
            for i in range(self.channels):
                output[:,:,i] = self.Linear[i](x[:,:,i])
            x = output
        else:
            x = self.Linear(x.permute(0,2,1)).permute(0,2,1)
        x = x + seq_last
        return x # [Batch, Output length, Channel]


ARGS = argparse.Namespace(seq_len=24, pred_len=6, enc_in=4, individual=False)

model = torch.compile(Model(ARGS).float(), backend="inductor")


def make():
    torch.manual_seed(0)
    batch_x = torch.randn(3, ARGS.seq_len, ARGS.enc_in)
    return Model(ARGS).float(), [(batch_x,)]
