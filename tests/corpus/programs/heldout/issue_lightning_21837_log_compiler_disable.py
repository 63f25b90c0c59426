"""A compiled LightningModule's training_step calls `self.log()`, which Lightning now wraps in `@torch.compiler.disable`.

Source: https://github.com/Lightning-AI/pytorch-lightning/pull/21837 (fixes issue #21836: on torch 2.12/2.13
Dynamo traced into `inspect.getfullargspec(self.training_step)` inside `self.log` and crashed; the fix
disables compilation at the `LightningModule.log` boundary, as `_ResultCollection.log` already was)
Kept: the failing test's shape (BoringModel-style training_step that computes a loss and calls
`self.log("loss", loss)`), LightningModule.log's checks from lightning 2.6.6
(src/lightning/pytorch/core/module.py: trainer/results checks, the
`is_param_in_hook_signature(self.training_step, "dataloader_iter", explicit=True)` check,
the Number-to-tensor conversion, `results.log(...)`), signature_utils.is_param_in_hook_signature
and utilities/compile.py's from_compiled rebinding `training_step` through `dynamo_ctx`.
Simplified: the Trainer and the result collection are small stand-ins holding what log() reads;
no fabric, metrics, sync or logger connector.
"""
import inspect
import numbers
import warnings
from typing import Callable, Optional

import torch
from torch import Tensor, nn
from torch.nn import functional as F


class MisconfigurationException(Exception):
    """Exception used to inform users of misuse with PyTorch Lightning."""


def is_param_in_hook_signature(
    hook_fx: Callable, param: str, explicit: bool = False, min_args: Optional[int] = None
) -> bool:
    """
    Args:
        hook_fx: the hook callable
        param: the name of the parameter to check
        explicit: whether the parameter has to be explicitly declared
        min_args: whether the `signature` has at least `min_args` parameters
    """
    if hasattr(hook_fx, "__wrapped__"):
        # in case the hook has a decorator
        hook_fx = hook_fx.__wrapped__
    parameters = inspect.getfullargspec(hook_fx)
    args = parameters.args[1:]  # ignore `self`
    return (
        param in args
        or (not explicit and (parameters.varargs is not None))
        or (isinstance(min_args, int) and len(args) >= min_args)
    )


class _ResultCollection(dict):
    @torch.compiler.disable
    def log(self, fx: str, name: str, value: Tensor, prog_bar: bool = False, logger: bool = True,
            on_step: bool = False, on_epoch: bool = True, batch_size: Optional[int] = None) -> None:
        key = f"{fx}.{name}"
        self[key] = value.detach().clone()


class _Trainer:
    def __init__(self):
        self.training = True
        self.barebones = False
        self._results = _ResultCollection()


class LightningModule(nn.Module):
    def __init__(self):
        super().__init__()
        self._trainer = None
        self._current_fx_name = None

    def __to_tensor(self, value, name):
        value = value.clone().detach() if isinstance(value, Tensor) else torch.tensor(value)
        if not torch.numel(value) == 1:
            raise ValueError(
                f"`self.log({name}, {value})` was called, but the tensor must have a single element."
                f" You can try doing `self.log({name}, {value}.mean())`"
            )
        value = value.squeeze()
        return value

    @torch.compiler.disable
    def log(
        self,
        name: str,
        value,
        prog_bar: bool = False,
        logger: Optional[bool] = None,
        on_step: Optional[bool] = None,
        on_epoch: Optional[bool] = None,
        batch_size: Optional[int] = None,
    ) -> None:
        trainer = self._trainer
        if trainer is None:
            # not an error to support testing the `*_step` methods without a `Trainer` reference
            warnings.warn(
                "You are trying to `self.log()` but the `self.trainer` reference is not registered on the model yet."
                " This is most likely because the model hasn't been passed to the `Trainer`"
            )
            return
        results = trainer._results
        if results is None:
            raise MisconfigurationException(
                "You are trying to `self.log()` but the loop's result collection is not registered"
                " yet. This is most likely because you are trying to log in a `predict` hook,"
                " but it doesn't support logging"
            )
        if self._current_fx_name is None:
            raise MisconfigurationException(
                "You are trying to `self.log()` but it is not managed by the `Trainer` control flow"
            )
        on_step = True if on_step is None else on_step
        on_epoch = False if on_epoch is None else on_epoch
        if isinstance(value, (Tensor, numbers.Number)):
            value = self.__to_tensor(value, name)
        if (
            trainer.training
            and is_param_in_hook_signature(self.training_step, "dataloader_iter", explicit=True)
            and batch_size is None
        ):
            raise MisconfigurationException(
                "With `def training_step(self, dataloader_iter)`, `self.log(..., batch_size=...)` should be provided."
            )
        if logger is None:
            logger = True
        results.log(
            self._current_fx_name,
            name,
            value,
            prog_bar=prog_bar,
            logger=logger,
            on_step=on_step,
            on_epoch=on_epoch,
            batch_size=batch_size,
        )


class BoringModel(LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(32, 2)

    def forward(self, x):
        return self.layer(x)

    def step(self, batch):
        output = self(batch)
        return F.mse_loss(output, torch.ones_like(output))

    def training_step(self, batch, batch_idx):
        loss = self.step(batch)
        self.log("loss", loss)
        return loss


def from_compiled(model):
    """Returns an instance LightningModule from the output of ``torch.compile``."""
    orig_module = model._orig_mod
    orig_module._compiler_ctx = {
        "compiler": "dynamo",
        "dynamo_ctx": model.dynamo_ctx,
        "original_forward": orig_module.forward,
        "original_training_step": orig_module.training_step,
    }
    orig_module.forward = model.dynamo_ctx(orig_module.forward)
    orig_module.training_step = model.dynamo_ctx(orig_module.training_step)
    return orig_module


def test_trainer_compiled_model_that_logs():
    model = BoringModel()
    compiled_model = from_compiled(torch.compile(model))
    compiled_model._trainer = _Trainer()
    compiled_model._current_fx_name = "training_step"
    return compiled_model.training_step(torch.randn(4, 32), 0)


def make():
    torch.manual_seed(0)
    model = BoringModel()
    model._trainer = _Trainer()
    model._current_fx_name = "training_step"
    return model.training_step, [(torch.randn(4, 32), 0), (torch.randn(2, 32), 1)]
