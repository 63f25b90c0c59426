"""timm memory-efficient activation: get_act_layer('hard_mish') picks HardMishMe, a custom torch.autograd.Function, inside an Mlp.

Source: huggingface/pytorch-image-models@v1.0.31:timm/layers/activations_me.py:169-199; timm/layers/create_act.py:46-141; timm/layers/config.py:24-64; timm/layers/mlp.py:14-54
Kept: hard_mish_fwd/hard_mish_bwd, HardMishAutoFn (ctx.save_for_backward,
saved_tensors in backward), HardMishMe, the _ACT_LAYER_ME/_ACT_LAYER_DEFAULT
tables and get_act_layer's exportable/scriptable check that prefers the
memory-efficient layer, and Mlp (to_2tuple bias/drop, act_layer(), dropouts,
norm Identity).
Simplified: the tables keep the swish/mish/hard_mish/gelu entries (with native
F.silu/F.mish, timm now picks an ME variant only for hard_mish); 8 -> 16 -> 8
features.
"""
import collections.abc
from functools import partial
from itertools import repeat

import torch
import torch.nn.functional as F
from torch import nn

_EXPORTABLE = False
_SCRIPTABLE = False


def is_exportable():
    return _EXPORTABLE


def is_scriptable():
    return _SCRIPTABLE


def _ntuple(n):
    def parse(x):
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))
    return parse


to_2tuple = _ntuple(2)


def hard_mish_fwd(x):
    return 0.5 * x * (x + 2).clamp(min=0, max=2)


def hard_mish_bwd(x, grad_output):
    m = torch.ones_like(x) * (x >= -2.)
    m = torch.where((x >= -2.) & (x <= 0.), x + 1., m)
    return grad_output * m


class HardMishAutoFn(torch.autograd.Function):
    """ A memory efficient variant of Hard Mish
    Experimental, based on notes by Mish author Diganta Misra at
      https://github.com/digantamisra98/H-Mish/blob/0da20d4bc58e696b6803f2523c58d3c8a82782d0/README.md
    """
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return hard_mish_fwd(x)

    @staticmethod
    def backward(ctx, grad_output):
        x = ctx.saved_tensors[0]
        return hard_mish_bwd(x, grad_output)


class HardMishMe(nn.Module):
    def __init__(self, inplace: bool = False):
        super().__init__()

    def forward(self, x):
        return HardMishAutoFn.apply(x)


_has_silu = 'silu' in dir(torch.nn.functional)
_has_mish = 'mish' in dir(torch.nn.functional)

_ACT_LAYER_DEFAULT = dict(
    silu=nn.SiLU,
    swish=nn.SiLU,
    mish=nn.Mish,
    gelu=nn.GELU,
    identity=nn.Identity,
)

_ACT_LAYER_ME = dict(
    silu=nn.SiLU if _has_silu else None,
    swish=nn.SiLU if _has_silu else None,
    mish=nn.Mish if _has_mish else None,
    hard_mish=HardMishMe,
)


def get_act_layer(name='relu'):
    """ Activation Layer Factory
    Fetching activation layers by name with this function allows export or torch script friendly
    functions to be returned dynamically based on current config.
    """
    if name is None:
        return None
    if not isinstance(name, str):
        # callable, module, etc
        return name
    if not name:
        return None
    name = name.lower()
    if not (is_exportable() or is_scriptable()):
        if name in _ACT_LAYER_ME:
            return _ACT_LAYER_ME[name]
    return _ACT_LAYER_DEFAULT[name]


class Mlp(nn.Module):
    """ MLP as used in Vision Transformer, MLP-Mixer and related networks
    """
    def __init__(
            self,
            in_features,
            hidden_features=None,
            out_features=None,
            act_layer=nn.GELU,
            norm_layer=None,
            bias=True,
            drop=0.,
            use_conv=False,
    ):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        bias = to_2tuple(bias)
        drop_probs = to_2tuple(drop)
        linear_layer = partial(nn.Conv2d, kernel_size=1) if use_conv else nn.Linear

        self.fc1 = linear_layer(in_features, hidden_features, bias=bias[0])
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop_probs[0])
        self.norm = norm_layer(hidden_features) if norm_layer is not None else nn.Identity()
        self.fc2 = linear_layer(hidden_features, out_features, bias=bias[1])
        self.drop2 = nn.Dropout(drop_probs[1])

    def forward(self, x):
        x = self.fc1(x)
        x = self.act(x)
        x = self.drop1(x)
        x = self.norm(x)
        x = self.fc2(x)
        x = self.drop2(x)
        return x


def build_mlp(act_layer='hard_mish'):
    return Mlp(8, hidden_features=16, act_layer=get_act_layer(act_layer) or nn.GELU, drop=0.1)


mlp = torch.compile(build_mlp().eval())


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 8, requires_grad=True)
    return build_mlp().eval(), [(x,), (torch.randn(1, 3, 8),)]
