"""RWKV-4 RNN-mode inference (RWKV_RNN.run): weights in nested SimpleNamespace/dicts, per-layer recurrent state in Python dicts keyed by f-strings and created on first use, and the logits leave as `x.cpu().numpy().tolist()`.

Source: BlinkDL/RWKV-LM@524481d5099b38d9bc8ef1e89209161b86c8011b:RWKV-v4/src/model_run.py:12-15,240-392
Kept: RWKV_HEAD_QK_DIM / DEBUG_TIME, RWKV_RNN's constructor key parsing into
SimpleNamespace / dict trees (float(), squeeze of time_ params, -exp(time_decay)),
clear/save/load with copy.deepcopy, LN, FF, SA (the log-space WKV recurrence)
and run verbatim, including the head_qk branch.
Simplified: torch.load of a .pth is replaced by a seeded state dict with the
same keys; the CUDA kernel section and the import-time print are dropped;
2 layers, n_embd 8, vocab 16.
"""
import types
import copy
import torch
import math, os
from torch.nn import functional as F
import torch.nn as nn

RWKV_HEAD_QK_DIM = 0

DEBUG_TIME = False   # True False - show trained time-coeffs


def random_checkpoint(n_layer, n_embd, vocab):
    """Seeded stand-in for torch.load(MODEL_NAME + '.pth'): RWKV-4 parameter names and shapes."""
    g = torch.Generator().manual_seed(0)
    r = lambda *s: torch.randn(*s, generator=g) * 0.3
    w = {'emb.weight': r(vocab, n_embd), 'ln_out.weight': torch.ones(n_embd), 'ln_out.bias': torch.zeros(n_embd),
         'head.weight': r(vocab, n_embd), 'blocks.0.ln0.weight': torch.ones(n_embd), 'blocks.0.ln0.bias': torch.zeros(n_embd)}
    for i in range(n_layer):
        p = f'blocks.{i}.'
        for ln in ('ln1', 'ln2'):
            w[p + ln + '.weight'] = torch.ones(n_embd)
            w[p + ln + '.bias'] = torch.zeros(n_embd)
        w[p + 'att.time_decay'] = r(n_embd)
        w[p + 'att.time_first'] = r(n_embd)
        for m in ('k', 'v', 'r'):
            w[p + f'att.time_mix_{m}'] = torch.rand(1, 1, n_embd, generator=g)
        for m in ('key', 'value', 'receptance', 'output'):
            w[p + f'att.{m}.weight'] = r(n_embd, n_embd)
        for m in ('k', 'r'):
            w[p + f'ffn.time_mix_{m}'] = torch.rand(1, 1, n_embd, generator=g)
        w[p + 'ffn.key.weight'] = r(4 * n_embd, n_embd)
        w[p + 'ffn.receptance.weight'] = r(n_embd, n_embd)
        w[p + 'ffn.value.weight'] = r(n_embd, 4 * n_embd)
    return w


class RWKV_RNN(): # this is running in FP32 at this moment
    def __init__(self, MODEL_NAME, RUN_DEVICE, model_type, n_layer, n_embd, ctx_len):
        self.RUN_DEVICE = RUN_DEVICE
        self.model_type = model_type
        self.n_layer = n_layer
        self.n_embd = n_embd
        self.ctx_len = ctx_len

        self.w = types.SimpleNamespace()

        w = random_checkpoint(n_layer, n_embd, 16)
        for x in w.keys():
            w[x] = w[x].float()
            if '.time_' in x:
                w[x] = w[x].squeeze()
            if '.time_decay' in x:
                w[x] = -torch.exp(w[x])
            if DEBUG_TIME and '.time_' in x:
                print(x, w[x].squeeze().cpu().numpy())

            xx = x.split('.')
            here = self.w
            for i in range(len(xx)):
                if xx[i].isdigit():
                    ii = int(xx[i])
                    if ii not in here:
                        here[ii] = types.SimpleNamespace()
                    here = here[ii]
                else:
                    if i == len(xx) - 1:
                        setattr(here, xx[i], w[x])
                    elif not hasattr(here, xx[i]):
                        if xx[i+1].isdigit():
                            setattr(here, xx[i], {})
                        else:
                            setattr(here, xx[i], types.SimpleNamespace())
                    here = getattr(here, xx[i])

        self.clear()

    def clear(self):
        self.xx = {}
        self.aa = {}
        self.bb = {}
        self.pp = {}
        self.hk = None

    def save(self, target):
        target.xx = copy.deepcopy(self.xx)
        target.aa = copy.deepcopy(self.aa)
        target.bb = copy.deepcopy(self.bb)
        target.pp = copy.deepcopy(self.pp)
        target.hk = copy.deepcopy(self.hk)

    def load(self, target):
        self.xx = copy.deepcopy(target.xx)
        self.aa = copy.deepcopy(target.aa)
        self.bb = copy.deepcopy(target.bb)
        self.pp = copy.deepcopy(target.pp)
        self.hk = copy.deepcopy(target.hk)

    def LN(self, xx, w):
        return F.layer_norm(xx, (self.n_embd,), weight=w.weight, bias=w.bias)

    def FF(self, xx, w, name):
        if name not in self.xx:
            self.xx[name] = torch.zeros(self.n_embd, device=self.RUN_DEVICE)
        xk = xx * w.time_mix_k + self.xx[name] * (1 - w.time_mix_k)
        xr = xx * w.time_mix_r + self.xx[name] * (1 - w.time_mix_r)
        self.xx[name] = xx

        r = torch.sigmoid(w.receptance.weight @ xr)
        k = torch.square(torch.relu(w.key.weight @ xk))
        kv = w.value.weight @ k

        return r * kv

    def SA(self, xx, w, name):
        if name not in self.xx:
            self.xx[name] = torch.zeros(self.n_embd, device=self.RUN_DEVICE)
            self.aa[name] = torch.zeros(self.n_embd, device=self.RUN_DEVICE)
            self.bb[name] = torch.zeros(self.n_embd, device=self.RUN_DEVICE)
            self.pp[name] = torch.zeros(self.n_embd, device=self.RUN_DEVICE) - 1e30

        xk = xx * w.time_mix_k + self.xx[name] * (1 - w.time_mix_k)
        xv = xx * w.time_mix_v + self.xx[name] * (1 - w.time_mix_v)
        xr = xx * w.time_mix_r + self.xx[name] * (1 - w.time_mix_r)
        self.xx[name] = xx

        r = torch.sigmoid(w.receptance.weight @ xr)

        k = w.key.weight @ xk
        v = w.value.weight @ xv

        pp = self.pp[name]
        aa = self.aa[name]
        bb = self.bb[name]
        ww = w.time_first + k
        p = torch.maximum(pp, ww)
        e1 = torch.exp(pp - p)
        e2 = torch.exp(ww - p)
        a = e1 * aa + e2 * v
        b = e1 * bb + e2
        ww = pp + w.time_decay
        p = torch.maximum(ww, k)
        e1 = torch.exp(ww - p)
        e2 = torch.exp(k - p)
        self.aa[name] = e1 * aa + e2 * v
        self.bb[name] = e1 * bb + e2
        self.pp[name] = p

        rwkv = r * a / b

        return w.output.weight @ rwkv

    def run(self, ctx):
        w = self.w
        x = w.emb.weight[ctx[-1]]

        for i in range(self.n_layer):
            if i == 0:
                x = self.LN(x, w.blocks[i].ln0)
            if i == 0 and self.model_type == 'RWKV-ffnPre':
                x = x + self.FF(self.LN(x, w.blocks[i].ln1), w.blocks[i].ffnPre, f'ffnPre.{i}')
            else:
                x = x + self.SA(self.LN(x, w.blocks[i].ln1), w.blocks[i].att, f'att.{i}')
            x = x + self.FF(self.LN(x, w.blocks[i].ln2), w.blocks[i].ffn, f'ffn.{i}')

        x = self.LN(x, w.ln_out)

        if RWKV_HEAD_QK_DIM > 0:
            if self.hk == None:
                self.hk = (w.head_k.weight @ x).unsqueeze(0)
            else:
                self.hk = torch.cat(
                    [self.hk, (w.head_k.weight @ x).unsqueeze(0)], dim=0)
            if self.hk.shape[0] > self.ctx_len:
                self.hk = self.hk[-self.ctx_len:, :]

            q = w.head_q.weight @ x

            x = w.head.weight @ x
            x = x.cpu().numpy().tolist()

            c = (self.hk @ q) / RWKV_HEAD_QK_DIM
            for i in range(len(c)):
                x[ctx[i]] += c[i]
        else:
            x = w.head.weight @ x
            x = x.cpu().numpy().tolist()

        return x


def load_model():
    model = RWKV_RNN('RWKV-4-tiny', 'cpu', 'RWKV', 2, 8, 32)
    model.run = torch.compile(model.run)
    return model


def make():
    torch.manual_seed(0)
    model = RWKV_RNN('RWKV-4-tiny', 'cpu', 'RWKV', 2, 8, 32)
    return model.run, [([1, 5, 3],), ([1, 5, 3, 7],), ([2],)]
