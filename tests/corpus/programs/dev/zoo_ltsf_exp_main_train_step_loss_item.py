"""LTSF-Linear training step: the per-batch body of `Exp_Main.train` (decoder input built from `batch_y`, `'Linear' in self.args.model` dispatch, `f_dim` slicing, MSE loss, `train_loss.append(loss.item())`, a progress print every 100 iterations, backward and optimizer step) compiled as one method.

Source: cure-lab/LTSF-Linear@0c113668a3b88c4c4ee586b8c5ec3e539c4de5a6:exp/exp_main.py:99-185
Also: models/NLinear.py:6-38 (the model it trains), exp/exp_main.py:26-51
(_build_model, _select_optimizer, _select_criterion).
Kept: the loop body verbatim (both use_amp branches, the output_attention
branches), the args namespace plumbing.
Simplified: the loop body is a method taking the batch and the iteration
counters (optimizer, criterion, train_loss list and the
GradScaler that train() creates are attributes); the speed/left-time print (wall-clock text) is dropped; no data
loader, early stopping or checkpointing; NLinear with seq_len 16, pred_len 4,
label_len 8, 2 channels, features 'MS'.
"""
import argparse

import numpy as np
import torch
import torch.nn as nn
from torch import optim


class NLinear(nn.Module):
    """
    Normalization-Linear
    """
    def __init__(self, configs):
        super(NLinear, self).__init__()
        self.seq_len = configs.seq_len
        self.pred_len = configs.pred_len
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


class Exp_Main(object):
    def __init__(self, args):
        self.args = args
        self.device = torch.device('cpu')
        self.model = self._build_model().to(self.device)
        self.model_optim = self._select_optimizer()
        self.criterion = self._select_criterion()
        self.train_loss = []
        self.scaler = torch.cuda.amp.GradScaler() if self.args.use_amp else None

    def _build_model(self):
        model_dict = {
            'NLinear': NLinear,
        }
        model = model_dict[self.args.model](self.args).float()
        return model

    def _select_optimizer(self):
        model_optim = optim.Adam(self.model.parameters(), lr=self.args.learning_rate)
        return model_optim

    def _select_criterion(self):
        criterion = nn.MSELoss()
        return criterion

    def train_batch(self, i, epoch, batch_x, batch_y, batch_x_mark, batch_y_mark):
        model_optim = self.model_optim
        criterion = self.criterion
        train_loss = self.train_loss
        scaler = self.scaler

        model_optim.zero_grad()
        batch_x = batch_x.float().to(self.device)

        batch_y = batch_y.float().to(self.device)
        batch_x_mark = batch_x_mark.float().to(self.device)
        batch_y_mark = batch_y_mark.float().to(self.device)

        # decoder input
        dec_inp = torch.zeros_like(batch_y[:, -self.args.pred_len:, :]).float()
        dec_inp = torch.cat([batch_y[:, :self.args.label_len, :], dec_inp], dim=1).float().to(self.device)

        # encoder - decoder
        if self.args.use_amp:
            with torch.cuda.amp.autocast():
                if 'Linear' in self.args.model:
                    outputs = self.model(batch_x)
                else:
                    if self.args.output_attention:
                        outputs = self.model(batch_x, batch_x_mark, dec_inp, batch_y_mark)[0]
                    else:
                        outputs = self.model(batch_x, batch_x_mark, dec_inp, batch_y_mark)

                f_dim = -1 if self.args.features == 'MS' else 0
                outputs = outputs[:, -self.args.pred_len:, f_dim:]
                batch_y = batch_y[:, -self.args.pred_len:, f_dim:].to(self.device)
                loss = criterion(outputs, batch_y)
                train_loss.append(loss.item())
        else:
            if 'Linear' in self.args.model:
                    outputs = self.model(batch_x)
            else:
                if self.args.output_attention:
                    outputs = self.model(batch_x, batch_x_mark, dec_inp, batch_y_mark)[0]

                else:
                    outputs = self.model(batch_x, batch_x_mark, dec_inp, batch_y_mark, batch_y)
            # print(outputs.shape,batch_y.shape)
            f_dim = -1 if self.args.features == 'MS' else 0
            outputs = outputs[:, -self.args.pred_len:, f_dim:]
            batch_y = batch_y[:, -self.args.pred_len:, f_dim:].to(self.device)
            loss = criterion(outputs, batch_y)
            train_loss.append(loss.item())

        if (i + 1) % 100 == 0:
            print("\titers: {0}, epoch: {1} | loss: {2:.7f}".format(i + 1, epoch + 1, loss.item()))

        if self.args.use_amp:
            scaler.scale(loss).backward()
            scaler.step(model_optim)
            scaler.update()
        else:
            loss.backward()
            model_optim.step()
        return loss


ARGS = argparse.Namespace(
    model='NLinear', seq_len=16, label_len=8, pred_len=4, enc_in=2, individual=False,
    features='MS', use_amp=False, output_attention=False, learning_rate=0.005,
)


def train(args, batches):
    exp = Exp_Main(args)
    step = torch.compile(exp.train_batch)
    for i, batch in enumerate(batches):
        step(i, 0, *batch)
    return exp


def make():
    torch.manual_seed(0)
    exp = Exp_Main(ARGS)
    batch_x = torch.randn(2, ARGS.seq_len, ARGS.enc_in, dtype=torch.float64)
    batch_y = torch.randn(2, ARGS.label_len + ARGS.pred_len, ARGS.enc_in, dtype=torch.float64)
    batch_x_mark = torch.randn(2, ARGS.seq_len, 4, dtype=torch.float64)
    batch_y_mark = torch.randn(2, ARGS.label_len + ARGS.pred_len, 4, dtype=torch.float64)
    batch = (batch_x, batch_y, batch_x_mark, batch_y_mark)
    return exp.train_batch, [(0, 0) + batch, (99, 0) + batch]
