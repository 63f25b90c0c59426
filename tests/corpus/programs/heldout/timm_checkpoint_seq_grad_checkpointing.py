"""timm checkpoint_seq under `set_grad_checkpointing()`: torch.utils.checkpoint over chunks of nn.Sequential stages in forward_features.

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/models/_manipulate.py:213-286; timm/models/resnet.py:forward_features
Kept: checkpoint_seq verbatim (use_reentrant default, the run_function closure
factory, Sequential children, the every/skip_last chunking loop calling
torch.utils.checkpoint.checkpoint) and the model's
`if self.grad_checkpointing and not torch.jit.is_scripting()` switch.
Simplified: use_reentrant_ckpt() returns False (timm's default); 3 conv stages.
"""
from itertools import chain
from typing import Optional

import torch
import torch.utils.checkpoint
from torch import nn


def use_reentrant_ckpt():
    return False


def checkpoint_seq(functions, x, every: int=1, flatten: bool=False, skip_last: bool=False, use_reentrant: Optional[bool]=None):
    if use_reentrant is None:
        use_reentrant = use_reentrant_ckpt()

    def run_function(start, end, functions):

        def forward(_x):
            for j in range(start, end + 1):
                _x = functions[j](_x)
            return _x
        return forward
    if isinstance(functions, torch.nn.Sequential):
        functions = functions.children()
    if flatten:
        functions = chain.from_iterable(functions)
    if not isinstance(functions, (tuple, list)):
        functions = tuple(functions)
    num_checkpointed = len(functions)
    if skip_last:
        num_checkpointed -= 1
    end = -1
    for start in range(0, num_checkpointed, every):
        end = min(start + every - 1, num_checkpointed - 1)
        x = torch.utils.checkpoint.checkpoint(run_function(start, end, functions), x, use_reentrant=use_reentrant)
    if skip_last:
        return run_function(end + 1, len(functions) - 1, functions)(x)
    return x



class ResNetLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, padding=1)
        self.stages = nn.Sequential(*[nn.Sequential(nn.Conv2d(4, 4, 3, padding=1), nn.ReLU()) for _ in range(3)])
        self.grad_checkpointing = False

    def set_grad_checkpointing(self, enable=True):
        self.grad_checkpointing = enable

    def forward_features(self, x):
        x = self.stem(x)
        if self.grad_checkpointing and not torch.jit.is_scripting():
            x = checkpoint_seq(self.stages, x, flatten=False)
        else:
            x = self.stages(x)
        return x

    def forward(self, x):
        return self.forward_features(x).mean((2, 3))


def create_model():
    model = ResNetLike()
    model.set_grad_checkpointing()
    return model.train()


model = torch.compile(create_model())


def make():
    torch.manual_seed(0)
    return create_model(), [(torch.randn(2, 3, 5, 5),)]
