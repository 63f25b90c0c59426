"""timm training step compiled whole: the _forward/_backward closures of train_one_epoch with NativeScaler (GradScaler scale/backward/unscale_/step/update) or a plain `.backward()`.

Source: huggingface/pytorch-image-models@v1.0.31:timm/utils/cuda.py:45-78; timm/utils/clip_grad.py:6-22; train.py:train_one_epoch (the `_forward`/`_backward` closures, main branch)
Kept: NativeScaler (torch.amp.GradScaler with the AttributeError/TypeError
fallback, __call__: scale(loss).backward(create_graph=...), the need_update and
clip_grad branches with unscale_ and dispatch_clip_grad, step and update),
dispatch_clip_grad's 'norm'/'value' modes, and the closures as train.py writes
them (amp_autocast context, `loss /= accum_steps`, loss_scaler or plain backward
and optimizer.step()).
Simplified: one batch per call; the loop, metering, EMA and logging stay
outside; a 2-layer MLP with SGD; model_parameters(model) is model.parameters();
args is a SimpleNamespace; CPU autocast is disabled (contextlib.suppress).
"""
from contextlib import suppress
from types import SimpleNamespace

import torch
from torch import nn


def dispatch_clip_grad(parameters, value: float, mode: str = 'norm', norm_type: float = 2.0):
    if mode == 'norm':
        torch.nn.utils.clip_grad_norm_(parameters, value, norm_type=norm_type)
    elif mode == 'value':
        torch.nn.utils.clip_grad_value_(parameters, value)
    else:
        assert False, f"Unknown clip mode ({mode})."


class NativeScaler:
    state_dict_key = "amp_scaler"

    def __init__(self, device='cuda'):
        try:
            self._scaler = torch.amp.GradScaler(device=device)
        except (AttributeError, TypeError) as e:
            self._scaler = torch.cuda.amp.GradScaler()

    def __call__(
            self,
            loss,
            optimizer,
            clip_grad=None,
            clip_mode='norm',
            parameters=None,
            create_graph=False,
            need_update=True,
    ):
        self._scaler.scale(loss).backward(create_graph=create_graph)
        if need_update:
            if clip_grad is not None:
                assert parameters is not None
                self._scaler.unscale_(optimizer)  # unscale the gradients of optimizer's assigned params in-place
                dispatch_clip_grad(parameters, clip_grad, mode=clip_mode)
            self._scaler.step(optimizer)
            self._scaler.update()

    def state_dict(self):
        return self._scaler.state_dict()


def train_one_step(model, input, target, loss_fn, optimizer, args, need_update,
                   amp_autocast=suppress, loss_scaler=None):
    accum_steps = args.grad_accum_steps
    second_order = hasattr(optimizer, 'is_second_order') and optimizer.is_second_order

    def _forward():
        with amp_autocast():
            output = model(input)
            loss = loss_fn(output, target)
        if accum_steps > 1:
            loss /= accum_steps
        return loss

    def _backward(_loss):
        if loss_scaler is not None:
            loss_scaler(
                _loss,
                optimizer,
                clip_grad=args.clip_grad,
                clip_mode=args.clip_mode,
                parameters=model.parameters(),
                create_graph=second_order,
                need_update=need_update,
            )
        else:
            _loss.backward(create_graph=second_order)
            if need_update:
                if args.clip_grad is not None:
                    dispatch_clip_grad(
                        model.parameters(),
                        value=args.clip_grad,
                        mode=args.clip_mode,
                    )
                optimizer.step()

    loss = _forward()
    _backward(loss)
    return loss.detach(), [p.detach().clone() for p in model.parameters()]


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_scaler = NativeScaler(device='cpu')
    args = SimpleNamespace(grad_accum_steps=2, clip_grad=1.0, clip_mode='norm')
    step = torch.compile(train_one_step)
    for batch_idx in range(2):
        need_update = (batch_idx + 1) % args.grad_accum_steps == 0
        step(model, torch.randn(4, 6), torch.tensor([0, 1, 2, 0]), nn.CrossEntropyLoss(), optimizer, args,
             need_update, loss_scaler=loss_scaler)


def make():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(4, 6), torch.tensor([0, 1, 2, 0])
    clip_norm = SimpleNamespace(grad_accum_steps=2, clip_grad=1.0, clip_mode='norm')
    no_clip = SimpleNamespace(grad_accum_steps=1, clip_grad=None, clip_mode='norm')
    clip_value = SimpleNamespace(grad_accum_steps=1, clip_grad=0.5, clip_mode='value')
    loss_fn = nn.CrossEntropyLoss()
    return train_one_step, [
        (model, x, y, loss_fn, optimizer, clip_norm, True, suppress, NativeScaler(device='cpu')),
        (model, x, y, loss_fn, optimizer, clip_norm, False, suppress, NativeScaler(device='cpu')),
        (model, x, y, loss_fn, optimizer, no_clip, True, suppress, NativeScaler(device='cpu')),
        (model, x, y, loss_fn, optimizer, clip_value, True),
        (model, x, y, loss_fn, optimizer, no_clip, True),
    ]
