"""Signature introspection (`inspect.getfullargspec`) of a bound step method inside a compiled forward.

Source: pytorch/pytorch#190171 (https://github.com/pytorch/pytorch/issues/190171)
Kept: the reporter's `takes_param(fn, name)` helper (unwrap `__wrapped__` if
present, then `name in inspect.getfullargspec(fn).args`), the Model whose
`step` introspects `self.step` for a `dataloader_iter` parameter mid-trace and
returns `x * 2`, `forward` delegating to `self.step`, and `torch.compile(model)`.
This mirrors Lightning's `is_param_in_hook_signature` check run by `self.log()`
(Lightning-AI/pytorch-lightning#21836).
Simplified: make() measures the model without the reporter's extra rebinding
`model.step = compiled.dynamo_ctx(model.step)` (that rebinding would make the
"eager" call run compiled code), so `takes_param` sees the plain bound method;
main() keeps the rebinding as reported.
"""
import inspect

import torch


def takes_param(fn, name):
    if hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__          # dynamo ctx -> original bound method
    return name in inspect.getfullargspec(fn).args


class Model(torch.nn.Module):
    def step(self, x):
        takes_param(self.step, "dataloader_iter")   # introspect a bound method mid-trace
        return x * 2

    def forward(self, x):
        return self.step(x)


def main():
    model = Model()
    compiled = torch.compile(model)
    model.step = compiled.dynamo_ctx(model.step)
    return compiled(torch.randn(4))


def make():
    torch.manual_seed(0)
    return Model(), [(torch.randn(4),)]
