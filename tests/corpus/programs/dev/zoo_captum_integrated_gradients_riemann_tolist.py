"""Captum's IntegratedGradients._attribute: alphas from `torch.linspace(0, 1, n).tolist()` (or numpy's leggauss for Gauss-Legendre), `torch.cat` over a Python list comprehension of scaled inputs, `_run_forward` with `inspect.signature`, `_select_targets` that calls `target.item()`, `torch.autograd.grad` over `torch.unbind(outputs)`, and `torch.tensor(step_sizes)`.

Source: pytorch/captum@faac08773131888714b15709b28494ebeea7f6eb:captum/attr/_core/integrated_gradients.py (_attribute)
Also: captum/attr/_utils/approximation_methods.py (approximation_parameters, riemann_builders,
gauss_legendre_builders), captum/_utils/gradient.py (compute_gradients), captum/_utils/common.py
(_run_forward, _select_targets, _verify_select_column, _expand_target, _format_inputs,
_format_additional_forward_args), captum/attr/_utils/common.py (_reshape_and_sum), same commit.
Kept: those functions verbatim for the paths reached (int, scalar-tensor and
per-example tensor targets; Riemann and Gauss-Legendre rules).
Simplified: the public attribute() wrapper keeps only input/baseline tuple
formatting and the call to _attribute; futures, list/tuple targets and
internal batching are dropped.
"""
from enum import Enum
from inspect import signature
from typing import Callable, List, Tuple

import numpy as np
import torch
from torch import Tensor, nn


class Riemann(Enum):
    left = 1
    right = 2
    middle = 3
    trapezoid = 4


SUPPORTED_RIEMANN_METHODS = [
    "riemann_left",
    "riemann_right",
    "riemann_middle",
    "riemann_trapezoid",
]


def approximation_parameters(method: str):
    if method in SUPPORTED_RIEMANN_METHODS:
        return riemann_builders(method=Riemann[method.split("_")[-1]])
    if method == "gausslegendre":
        return gauss_legendre_builders()
    raise ValueError("Invalid integral approximation method name: {}".format(method))


def riemann_builders(method: Riemann = Riemann.trapezoid):
    def step_sizes(n: int) -> List[float]:
        assert n > 1, "The number of steps has to be larger than one"
        deltas = [1 / n] * n
        if method == Riemann.trapezoid:
            deltas[0] /= 2
            deltas[-1] /= 2
        return deltas

    def alphas(n: int) -> List[float]:
        assert n > 1, "The number of steps has to be larger than one"
        if method == Riemann.trapezoid:
            return torch.linspace(0, 1, n).tolist()
        elif method == Riemann.left:
            return torch.linspace(0, 1 - 1 / n, n).tolist()
        elif method == Riemann.middle:
            return torch.linspace(1 / (2 * n), 1 - 1 / (2 * n), n).tolist()
        elif method == Riemann.right:
            return torch.linspace(1 / n, 1, n).tolist()
        else:
            raise AssertionError("Provided Reimann approximation method is not valid.")

    return step_sizes, alphas


def gauss_legendre_builders():
    def step_sizes(n: int) -> List[float]:
        assert n > 0, "The number of steps has to be larger than zero"
        return (0.5 * np.polynomial.legendre.leggauss(n)[1]).tolist()

    def alphas(n: int) -> List[float]:
        assert n > 0, "The number of steps has to be larger than zero"
        return (0.5 * (1 + np.polynomial.legendre.leggauss(n)[0])).tolist()

    return step_sizes, alphas


def _format_inputs(inputs, unpack_inputs: bool = True):
    return (
        inputs
        if (isinstance(inputs, tuple) or isinstance(inputs, list)) and unpack_inputs
        else (inputs,)
    )


def _format_additional_forward_args(additional_forward_args):
    if additional_forward_args is not None and not isinstance(
        additional_forward_args, tuple
    ):
        additional_forward_args = (additional_forward_args,)
    return additional_forward_args


def _verify_select_column(output: Tensor, target) -> Tensor:
    target = (target,) if isinstance(target, int) else target
    assert (
        len(target) <= len(output.shape) - 1
    ), "Cannot choose target column with output shape %r." % (output.shape,)
    return output[(slice(None), *target)]


def _select_targets(output: Tensor, target) -> Tensor:
    if target is None:
        return output

    num_examples = output.shape[0]
    dims = len(output.shape)
    if isinstance(target, (int, tuple)):
        return _verify_select_column(output, target)
    elif isinstance(target, torch.Tensor):
        if torch.numel(target) == 1 and isinstance(target.item(), int):
            return _verify_select_column(output, target.item())
        elif len(target.shape) == 1 and torch.numel(target) == num_examples:
            assert dims == 2, "Output must be 2D to select tensor of targets."
            return torch.gather(output, 1, target.reshape(len(output), 1)).squeeze(-1)
        else:
            raise AssertionError(
                "Tensor target dimension %r is not valid. %r"
                % (target.shape, output.shape)
            )
    else:
        raise AssertionError(f"Target type {type(target)} is not valid.")


def _run_forward(forward_func: Callable, inputs, target=None, additional_forward_args=None):
    forward_func_args = signature(forward_func).parameters
    if len(forward_func_args) == 0:
        output = forward_func()
        return output if target is None else _select_targets(output, target)

    inputs = _format_inputs(inputs)
    additional_forward_args = _format_additional_forward_args(additional_forward_args)

    output = forward_func(
        *(
            (*inputs, *additional_forward_args)
            if additional_forward_args is not None
            else inputs
        )
    )
    return _select_targets(output, target)


def compute_gradients(forward_fn, inputs, target_ind=None, additional_forward_args=None):
    with torch.autograd.set_grad_enabled(True):
        # runs forward pass
        outputs = _run_forward(forward_fn, inputs, target_ind, additional_forward_args)
        assert outputs[0].numel() == 1, (
            "Target not provided when necessary, cannot"
            " take gradient with respect to multiple outputs."
        )
        # torch.unbind(forward_out) is a list of scalar tensor tuples and
        # contains batch_size * #steps elements
        grads = torch.autograd.grad(torch.unbind(outputs), inputs)
    return grads


def _expand_target(target, n_steps: int):
    if isinstance(target, list):
        return target * n_steps
    elif isinstance(target, torch.Tensor) and torch.numel(target) > 1:
        return torch.cat([target] * n_steps, dim=0)
    return target


def _reshape_and_sum(
    tensor_input: Tensor, num_steps: int, num_examples: int, layer_size: Tuple[int, ...]
) -> Tensor:
    return torch.sum(
        tensor_input.reshape((num_steps, num_examples) + layer_size), dim=0
    )


class IntegratedGradients:
    def __init__(self, forward_func: Callable, multiply_by_inputs: bool = True) -> None:
        self.forward_func = forward_func
        self.gradient_func = compute_gradients
        self._multiply_by_inputs = multiply_by_inputs

    @property
    def multiplies_by_inputs(self) -> bool:
        return self._multiply_by_inputs

    def attribute(self, inputs, baselines, target=None, additional_forward_args=None,
                  n_steps: int = 50, method: str = "gausslegendre"):
        inputs = _format_inputs(inputs)
        baselines = _format_inputs(baselines)
        return self._attribute(
            inputs=inputs,
            baselines=baselines,
            target=target,
            additional_forward_args=additional_forward_args,
            n_steps=n_steps,
            method=method,
        )

    def _attribute(
        self,
        inputs,
        baselines,
        target=None,
        additional_forward_args=None,
        n_steps: int = 50,
        method: str = "gausslegendre",
        step_sizes_and_alphas=None,
    ):
        if step_sizes_and_alphas is None:
            # retrieve step size and scaling factor for specified
            # approximation method
            step_sizes_func, alphas_func = approximation_parameters(method)
            step_sizes, alphas = step_sizes_func(n_steps), alphas_func(n_steps)
        else:
            step_sizes, alphas = step_sizes_and_alphas

        scaled_features_tpl = tuple(
            torch.cat(
                [baseline + alpha * (input - baseline) for alpha in alphas], dim=0
            ).requires_grad_()
            for input, baseline in zip(inputs, baselines)
        )

        additional_forward_args = _format_additional_forward_args(
            additional_forward_args
        )
        input_additional_args = None
        expanded_target = _expand_target(target, n_steps)

        grads = self.gradient_func(
            forward_fn=self.forward_func,
            inputs=scaled_features_tpl,
            target_ind=expanded_target,
            additional_forward_args=input_additional_args,
        )

        scaled_grads = [
            grad.contiguous().view(n_steps, -1)
            * torch.tensor(step_sizes).float().view(n_steps, 1).to(grad.device)
            for grad in grads
        ]

        total_grads = tuple(
            _reshape_and_sum(
                scaled_grad, n_steps, grad.shape[0] // n_steps, grad.shape[1:]
            )
            for (scaled_grad, grad) in zip(scaled_grads, grads)
        )

        if not self.multiplies_by_inputs:
            attributions = total_grads
        else:
            attributions = tuple(
                total_grad * (input - baseline)
                for total_grad, input, baseline in zip(total_grads, inputs, baselines)
            )
        return attributions


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))

    def forward(self, x):
        return self.net(x)


def make():
    torch.manual_seed(0)
    ig = IntegratedGradients(Classifier().eval())
    x = torch.randn(2, 4)
    baseline = torch.zeros(2, 4)
    return ig.attribute, [
        (x, baseline, 1, None, 4, "riemann_trapezoid"),
        (x, baseline, torch.tensor([0, 2]), None, 3, "gausslegendre"),
        (x, baseline, torch.tensor(2), None, 3, "riemann_middle"),
    ]


attribute = torch.compile(IntegratedGradients(Classifier().eval()).attribute)
