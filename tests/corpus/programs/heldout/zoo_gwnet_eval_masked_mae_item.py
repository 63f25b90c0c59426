"""Graph WaveNet trainer.eval step: pad, forward, transpose, numpy-scalar StandardScaler inverse, masked MAE/MAPE/RMSE with `np.isnan(null_val)` dispatch and `.item()` on each metric.

Source: nnzhan/Graph-WaveNet@fd411389b633e692fe5cb51ee7f9f2b4f8324169:engine.py:4-47
Source: nnzhan/Graph-WaveNet@fd411389b633e692fe5cb51ee7f9f2b4f8324169:util.py:43-56,155-205
Kept: trainer.__init__ plumbing (self.loss = util.masked_mae, scaler, clip),
trainer.eval verbatim, StandardScaler, masked_mse/masked_rmse/masked_mae/masked_mape
verbatim; the scaler's mean/std are numpy float64 scalars as load_dataset makes them
(`data['x_train'][..., 0].mean()`).
Simplified: the gwnet model is replaced by a two-layer Conv2d stand-in with the same
(B, in_dim, nodes, T) -> (B, out_dim, nodes, 1) contract; no optimizer use in eval.
"""
import numpy as np
import torch
import torch.nn as nn


class StandardScaler():
    """
    Standard the input
    """

    def __init__(self, mean, std):
        self.mean = mean
        self.std = std

    def transform(self, data):
        return (data - self.mean) / self.std

    def inverse_transform(self, data):
        return (data * self.std) + self.mean


def masked_mse(preds, labels, null_val=np.nan):
    if np.isnan(null_val):
        mask = ~torch.isnan(labels)
    else:
        mask = (labels!=null_val)
    mask = mask.float()
    mask /= torch.mean((mask))
    mask = torch.where(torch.isnan(mask), torch.zeros_like(mask), mask)
    loss = (preds-labels)**2
    loss = loss * mask
    loss = torch.where(torch.isnan(loss), torch.zeros_like(loss), loss)
    return torch.mean(loss)

def masked_rmse(preds, labels, null_val=np.nan):
    return torch.sqrt(masked_mse(preds=preds, labels=labels, null_val=null_val))


def masked_mae(preds, labels, null_val=np.nan):
    if np.isnan(null_val):
        mask = ~torch.isnan(labels)
    else:
        mask = (labels!=null_val)
    mask = mask.float()
    mask /=  torch.mean((mask))
    mask = torch.where(torch.isnan(mask), torch.zeros_like(mask), mask)
    loss = torch.abs(preds-labels)
    loss = loss * mask
    loss = torch.where(torch.isnan(loss), torch.zeros_like(loss), loss)
    return torch.mean(loss)


def masked_mape(preds, labels, null_val=np.nan):
    if np.isnan(null_val):
        mask = ~torch.isnan(labels)
    else:
        mask = (labels!=null_val)
    mask = mask.float()
    mask /=  torch.mean((mask))
    mask = torch.where(torch.isnan(mask), torch.zeros_like(mask), mask)
    loss = torch.abs(preds-labels)/labels
    loss = loss * mask
    loss = torch.where(torch.isnan(loss), torch.zeros_like(loss), loss)
    return torch.mean(loss)


class TinyGWNet(nn.Module):
    """Stand-in for gwnet: (B, in_dim, N, T) -> (B, out_dim, N, 1)."""

    def __init__(self, in_dim, out_dim, nhid, seq_in):
        super().__init__()
        self.start_conv = nn.Conv2d(in_dim, nhid, kernel_size=(1, 1))
        self.end_conv = nn.Conv2d(nhid, out_dim, kernel_size=(1, seq_in))

    def forward(self, input):
        return self.end_conv(torch.relu(self.start_conv(input)))


class trainer():
    def __init__(self, scaler, in_dim, seq_length, num_nodes, nhid, dropout, lrate, wdecay, device):
        self.model = TinyGWNet(in_dim, seq_length, nhid, seq_in=seq_length + 1)
        self.model.to(device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lrate, weight_decay=wdecay)
        self.loss = masked_mae
        self.scaler = scaler
        self.clip = 5

    def eval(self, input, real_val):
        self.model.eval()
        input = nn.functional.pad(input,(1,0,0,0))
        output = self.model(input)
        output = output.transpose(1,3)
        #output = [batch_size,12,num_nodes,1]
        real = torch.unsqueeze(real_val,dim=1)
        predict = self.scaler.inverse_transform(output)
        loss = self.loss(predict, real, 0.0)
        mape = masked_mape(predict,real,0.0).item()
        rmse = masked_rmse(predict,real,0.0).item()
        return loss.item(),mape,rmse


def build_engine():
    x_train = np.random.RandomState(0).rand(16, 4, 5, 2) * 60.0
    scaler = StandardScaler(mean=x_train[..., 0].mean(), std=x_train[..., 0].std())
    return trainer(scaler, in_dim=2, seq_length=4, num_nodes=5, nhid=8, dropout=0.3,
                   lrate=0.001, wdecay=0.0001, device="cpu")


def main():
    engine = build_engine()
    eval_step = torch.compile(engine.eval)
    return engine, eval_step


def make():
    torch.manual_seed(0)
    engine = build_engine()
    testx = torch.randn(3, 2, 5, 4)
    testy = torch.rand(3, 5, 4) * 60.0
    testy[0, 1, 2] = 0.0   # a missing reading (null_val 0.0) masked out
    return engine.eval, [(testx, testy)]
