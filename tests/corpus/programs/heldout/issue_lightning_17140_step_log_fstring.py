"""A LightningModule's shared `__step` logging `f"loss/{split}"` from a compiled training_step.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/17140
The reporter's steps: training/validation/test_step all call a private `__step`
that runs `self(input_data)` and `self.log(f"loss/{split}", out["loss"], on_step=True,
on_epoch=True)`; Lightning 2.0 compiles the step methods of a `torch.compile`d module.
Kept: the three step methods and `__step` as posted; a local LightningModule.log with
the shape of lightning 2.0's (fabric check, apply_to_collection validity checks,
trainer/results lookups, hand-off to the result collection).
Simplified: the reporter's network is not shown, so `forward` is a small regressor that
returns {"loss": ...}; Trainer/_ResultCollection/apply_to_collection are minimal local
stand-ins; the compiled step is called directly instead of through trainer.fit.
"""
import numbers
import warnings

import torch
from torch import Tensor, nn
from torch.nn import functional as F


def apply_to_collection(data, dtype, function, *args, wrong_dtype=None, **kwargs):
    if isinstance(data, dtype) and (wrong_dtype is None or not isinstance(data, wrong_dtype)):
        return function(data, *args, **kwargs)
    if isinstance(data, dict):
        return {k: apply_to_collection(v, dtype, function, *args, wrong_dtype=wrong_dtype, **kwargs)
                for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(apply_to_collection(d, dtype, function, *args, wrong_dtype=wrong_dtype, **kwargs)
                          for d in data)
    return data


def rank_zero_warn(message):
    warnings.warn(message)


class _ResultCollection(dict):
    def log(self, fx, name, value, prog_bar=False, logger=True, on_step=False, on_epoch=True, reduce_fx="mean"):
        key = f"{fx}.{name}"
        if isinstance(value, Tensor):
            value = value.detach()
        self[key] = {"value": value, "on_step": on_step, "on_epoch": on_epoch, "reduce_fx": reduce_fx}


class _Trainer:
    def __init__(self):
        self.barebones = False
        self._results = _ResultCollection()


class LightningModule(nn.Module):
    def __init__(self):
        super().__init__()
        self._fabric = None
        self._trainer = None
        self._current_fx_name = None

    def log(self, name, value, prog_bar=False, logger=None, on_step=None, on_epoch=None, reduce_fx="mean"):
        if self._fabric is not None:
            self._fabric.log_dict({name: value})
            return

        # check for invalid values
        apply_to_collection(value, dict, self.__check_not_nested, name)
        apply_to_collection(
            value, object, self.__check_allowed, name, value, wrong_dtype=(numbers.Number, Tensor)
        )

        trainer = self._trainer
        if trainer is None:
            # not an error to support testing the `*_step` methods without a `Trainer` reference
            rank_zero_warn(
                "You are trying to `self.log()` but the `self.trainer` reference is not registered on the model yet."
                " This is most likely because the model hasn't been passed to the `Trainer`"
            )
            return
        if trainer.barebones:
            rank_zero_warn(
                "You are trying to `self.log()` but `Trainer(barebones=True)` is configured."
            )
            return
        results = trainer._results
        if results is None:
            raise RuntimeError("You are trying to `self.log()` but the loop's result collection is not registered yet.")
        if self._current_fx_name is None:
            raise RuntimeError("You are trying to `self.log()` but it is not managed by the `Trainer` control flow")

        on_step = False if on_step is None else on_step
        on_epoch = True if on_epoch is None else on_epoch
        if isinstance(value, Tensor) and value.numel() != 1:
            raise ValueError(f"`self.log({name}, {value})` was called, but the tensor must have a single element.")
        results.log(self._current_fx_name, name, value, prog_bar=prog_bar, logger=True,
                    on_step=on_step, on_epoch=on_epoch, reduce_fx=reduce_fx)

    @staticmethod
    def __check_not_nested(value, name):
        if isinstance(value, dict) and any(isinstance(v, dict) for v in value.values()):
            raise ValueError(f"`self.log({name}, {value})` was called, but nested dictionaries cannot be logged")
        return value

    @staticmethod
    def __check_allowed(v, name, value):
        raise ValueError(f"`self.log({name}, {value})` was called, but `{type(v).__name__}` values cannot be logged")


class Model(LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, input_data):
        x, y = input_data
        pred = self.net(x).squeeze(-1)
        return {"loss": F.mse_loss(pred, y), "pred": pred}

    def __step(self, input_data, split='train', dataloader_idx=0):
        out = self(input_data)

        self.log(f"loss/{split}", out["loss"], on_step=True, on_epoch=True)
        return {
            "loss": out["loss"]
        }

    def training_step(self, batch, batch_idx, dataloader_idx=0):
        return self.__step(batch, 'train', dataloader_idx=dataloader_idx)

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        return self.__step(batch, 'val', dataloader_idx=dataloader_idx)

    def test_step(self, batch, batch_idx, dataloader_idx=0):
        return self.__step(batch, 'test', dataloader_idx=dataloader_idx)


def main():
    model = Model()
    model._trainer = _Trainer()
    model._current_fx_name = "training_step"
    model = torch.compile(model)
    return model


def make():
    torch.manual_seed(0)
    model = Model()
    model._trainer = _Trainer()
    model._current_fx_name = "training_step"
    batch = (torch.randn(4, 6), torch.randn(4))
    return model.training_step, [(batch, 0)]
