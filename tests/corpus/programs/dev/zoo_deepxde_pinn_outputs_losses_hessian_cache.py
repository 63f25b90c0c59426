"""DeepXDE PINN training loss (pytorch backend): `outputs_losses` makes the inputs leaf tensors with `requires_grad_()`, runs the FNN with a hard-constraint output transform, evaluates the PDE residual through `dde.grad.hessian` (lazy Jacobian/Hessian objects cached in dicts keyed by `(ys, xs)` tensors, `torch.autograd.grad(..., create_graph=True)`), stacks the MSE losses and clears the caches.

Source: lululxvi/deepxde@99b66203:deepxde/model.py:291-361
Also: deepxde/gradients/jacobian.py (Jacobian, Jacobians), deepxde/gradients/gradients_reverse.py
(JacobianReverse, Hessian, Hessians, hessian, clear), deepxde/data/pde.py:138-196 (PDE.losses),
deepxde/nn/pytorch/nn.py, deepxde/nn/pytorch/fnn.py (FNN), deepxde/losses.py (mean_squared_error),
examples/pinn_forward/Poisson_Dirichlet_1d_exactBC.py (pde, output_transform, FNN [1]+[50]*3+[1]).
Kept: the outputs_losses closure and its train wrapper; the Jacobian/Hessian classes and PDE.losses
with their pytorch / reverse-mode branches (docstrings dropped); FNN.forward verbatim and
FNN.__init__ without its list-activation / list-dropout branches; the example's pde and
output_transform. The compile entry is `torch.compile(outputs_losses_train)` (DeepXDE itself does
not compile; the program compiles the function it calls once per training step).
Simplified: tensorflow/jax/paddle branches are dropped; activations/initializers lookups are inlined
(tanh, Glorot uniform, zeros); PDE.__init__ keeps only the attributes losses reads (num_bcs is
empty as bc_points leaves it without BCs; losses_train is the base Data's one-line delegate); no
boundary conditions (the example has none: the BC is exact), no optimizer; 16 training points,
hidden width 8.
"""
import inspect
from abc import ABC, abstractmethod

import numpy as np
import torch


class config:
    autodiff = "reverse"


backend_name = "pytorch"


# ---- deepxde/gradients/jacobian.py ----
class Jacobian(ABC):
    def __init__(self, ys, xs):
        self.ys = ys
        self.xs = xs
        if backend_name in ["tensorflow", "pytorch"]:
            if config.autodiff == "reverse":
                self.dim_y = ys.shape[-1]
            elif config.autodiff == "forward":
                self.dim_y = ys[0].shape[-1]
        self.dim_x = xs.shape[1]

        self.J = {}

    @abstractmethod
    def __call__(self, i=None, j=None):
        if i is None and j is None:
            if self.dim_x > 1 or self.dim_y > 1:
                raise ValueError("i and j cannot be both None.")
            i = 0
            j = 0
        if i is not None and not 0 <= i < self.dim_y:
            raise ValueError("i={} is not valid.".format(i))
        if j is not None and not 0 <= j < self.dim_x:
            raise ValueError("j={} is not valid.".format(j))


class Jacobians:
    def __init__(self, JacobianClass):
        self.JacobianClass = JacobianClass
        self.Js = {}

    def __call__(self, ys, xs, i=None, j=None):
        if backend_name in ["pytorch", "paddle"]:
            key = (ys, xs)
        if key not in self.Js:
            self.Js[key] = self.JacobianClass(ys, xs)
        return self.Js[key](i, j)

    def clear(self):
        """Clear cached Jacobians."""
        self.Js = {}


# ---- deepxde/gradients/gradients_reverse.py ----
class JacobianReverse(Jacobian):
    def __call__(self, i=None, j=None):
        super().__call__(i=i, j=j)
        # Compute a column is not supported in reverse mode, unless there is only one
        # output.
        if i is None:
            if self.dim_y > 1:
                raise NotImplementedError(
                    "Reverse-mode autodiff doesn't support computing a column."
                )
            i = 0
        if backend_name in ["tensorflow.compat.v1", "tensorflow", "pytorch", "paddle"]:
            ndim_y = self.ys.ndim
        if ndim_y == 3:
            raise NotImplementedError(
                "Reverse-mode autodiff doesn't support 3D output"
            )

        # Compute J[i, :]
        if i not in self.J:
            if backend_name == "pytorch":
                # TODO: retain_graph=True has memory leak?
                y = self.ys[:, i : i + 1] if self.dim_y > 1 else self.ys
                self.J[i] = torch.autograd.grad(
                    y, self.xs, grad_outputs=torch.ones_like(y), create_graph=True
                )[0]

        if j is None or self.dim_x == 1:
            return self.J[i]

        # Compute J[i, j]
        if (i, j) not in self.J:
            if backend_name in [
                "tensorflow.compat.v1",
                "tensorflow",
                "pytorch",
                "paddle",
            ]:
                self.J[i, j] = self.J[i][:, j : j + 1]
        return self.J[i, j]


def jacobian(ys, xs, i=None, j=None):
    return jacobian._Jacobians(ys, xs, i=i, j=j)


jacobian._Jacobians = Jacobians(JacobianReverse)


class Hessian:
    def __init__(self, ys, xs, component=0):
        if backend_name in ["tensorflow.compat.v1", "tensorflow", "pytorch", "paddle"]:
            dim_y = ys.shape[1]

        if component >= dim_y:
            raise ValueError(
                "The component of ys={} cannot be larger than the dimension={}.".format(
                    component, dim_y
                )
            )

        # There is no duplicate computation of grad_y.
        grad_y = jacobian(ys, xs, i=component, j=None)
        self.H = JacobianReverse(grad_y, xs)

    def __call__(self, i=0, j=0):
        """Returns H[`i`, `j`]."""
        return self.H(j, i)


class Hessians:
    def __init__(self):
        self.Hs = {}

    def __call__(self, ys, xs, component=0, i=0, j=0):
        if backend_name in ["pytorch", "paddle"]:
            key = (ys, xs, component)
        if key not in self.Hs:
            self.Hs[key] = Hessian(ys, xs, component=component)
        return self.Hs[key](i, j)

    def clear(self):
        """Clear cached Hessians."""
        self.Hs = {}


def hessian(ys, xs, component=0, i=0, j=0):
    return hessian._Hessians(ys, xs, component=component, i=i, j=j)


hessian._Hessians = Hessians()


def clear():
    """Clear cached Jacobians and Hessians."""
    jacobian._Jacobians.clear()
    hessian._Hessians.clear()


class grad:
    """Stand-in for the `deepxde.grad` namespace."""
    jacobian = staticmethod(jacobian)
    hessian = staticmethod(hessian)
    clear = staticmethod(clear)


# ---- deepxde/losses.py ----
def mean_squared_error(y_true, y_pred):
    return torch.mean(torch.square(y_true - y_pred))


# ---- deepxde/utils/internal.py ----
def get_num_args(func):
    params = inspect.signature(func).parameters
    return len(params) - ("self" in params)


# ---- deepxde/data/pde.py ----
class PDE:
    def __init__(self, pde, bcs):
        self.pde = pde
        self.bcs = bcs
        self.num_bcs = [0 for _ in bcs]
        self.auxiliary_var_fn = None

    def losses(self, targets, outputs, loss_fn, inputs, model, aux=None):
        if backend_name in ["tensorflow", "pytorch"]:
            if config.autodiff == "reverse":
                outputs_pde = outputs
            elif config.autodiff == "forward":
                # forward-mode AD requires functions
                outputs_pde = (outputs, aux[0])

        f = []
        if self.pde is not None:
            if get_num_args(self.pde) == 2:
                f = self.pde(inputs, outputs_pde)
            elif get_num_args(self.pde) == 3:
                if self.auxiliary_var_fn is not None:
                    f = self.pde(inputs, outputs_pde, model.net.auxiliary_vars)
                else:
                    raise ValueError("Auxiliary variable function not defined.")
            if not isinstance(f, (list, tuple)):
                f = [f]

        if not isinstance(loss_fn, (list, tuple)):
            loss_fn = [loss_fn] * (len(f) + len(self.bcs))
        elif len(loss_fn) != len(f) + len(self.bcs):
            raise ValueError(
                "There are {} errors, but only {} losses.".format(
                    len(f) + len(self.bcs), len(loss_fn)
                )
            )

        bcs_start = np.cumsum([0] + self.num_bcs)
        bcs_start = list(map(int, bcs_start))
        error_f = [fi[bcs_start[-1] :] for fi in f]
        losses = [
            loss_fn[i](torch.zeros_like(error), error) for i, error in enumerate(error_f)
        ]
        return losses

    def losses_train(self, targets, outputs, loss_fn, inputs, model, aux=None):
        return self.losses(targets, outputs, loss_fn, inputs, model, aux=aux)


# ---- deepxde/nn/pytorch/nn.py, fnn.py ----
class NN(torch.nn.Module):
    """Base class for all neural network modules."""

    def __init__(self):
        super().__init__()
        self.regularizer = None
        self._auxiliary_vars = None
        self._input_transform = None
        self._output_transform = None

    @property
    def auxiliary_vars(self):
        """Tensors: Any additional variables needed."""
        return self._auxiliary_vars

    @auxiliary_vars.setter
    def auxiliary_vars(self, value):
        self._auxiliary_vars = value

    def apply_output_transform(self, transform):
        self._output_transform = transform


class FNN(NN):
    """Fully-connected neural network."""

    def __init__(self, layer_sizes, activation, kernel_initializer, regularization=None, dropout_rate=0):
        super().__init__()
        self.activation = {"tanh": torch.tanh}[activation]
        self.dropout_rate = [dropout_rate] * (len(layer_sizes) - 1)
        self.regularizer = regularization

        self.linears = torch.nn.ModuleList()
        for i in range(1, len(layer_sizes)):
            self.linears.append(
                torch.nn.Linear(
                    layer_sizes[i - 1], layer_sizes[i], dtype=torch.float32
                )
            )
            torch.nn.init.xavier_uniform_(self.linears[-1].weight)
            torch.nn.init.zeros_(self.linears[-1].bias)

    def forward(self, inputs):
        x = inputs
        if self._input_transform is not None:
            x = self._input_transform(x)
        for j, linear in enumerate(self.linears[:-1]):
            x = (
                self.activation[j](linear(x))
                if isinstance(self.activation, list)
                else self.activation(linear(x))
            )
            if self.dropout_rate[j] > 0:
                x = torch.nn.functional.dropout(
                    x, p=self.dropout_rate[j], training=self.training
                )
        x = self.linears[-1](x)
        if self._output_transform is not None:
            x = self._output_transform(inputs, x)
        return x


# ---- deepxde/model.py (pytorch part of Model.compile) ----
class Model:
    def __init__(self, data, net):
        self.data = data
        self.net = net
        self.loss_weights = None

    def _compile_pytorch(self, lr, loss_fn, decay):
        """pytorch"""

        l1_factor, l2_factor = 0, 0
        if self.net.regularizer is not None:
            if self.net.regularizer[0] == "l1":
                l1_factor = self.net.regularizer[1]
            elif self.net.regularizer[0] == "l2":
                l2_factor = self.net.regularizer[1]

        def outputs_losses(training, inputs, targets, auxiliary_vars, losses_fn):
            self.net.auxiliary_vars = None
            if auxiliary_vars is not None:
                self.net.auxiliary_vars = torch.as_tensor(auxiliary_vars)
            self.net.train(mode=training)
            if isinstance(inputs, tuple):
                inputs = tuple(
                    map(lambda x: torch.as_tensor(x).requires_grad_(), inputs)
                )
            else:
                inputs = torch.as_tensor(inputs)
                inputs.requires_grad_()
            outputs_ = self.net(inputs)
            # Data losses
            if targets is not None:
                targets = torch.as_tensor(targets)
            # if forward-mode AD is used, then a forward call needs to be passed
            aux = [self.net] if config.autodiff == "forward" else None
            losses = losses_fn(targets, outputs_, loss_fn, inputs, self, aux=aux)
            if not isinstance(losses, list):
                losses = [losses]
            losses = torch.stack(losses)
            # Weighted losses
            if self.loss_weights is not None:
                losses *= torch.as_tensor(self.loss_weights)
            if l1_factor > 0:
                l1_loss = l1_factor * torch.sum(
                    torch.stack([torch.sum(p.abs()) for p in self.net.parameters()])
                )
                losses = torch.cat([losses, l1_loss.unsqueeze(0)])
            # Clear cached Jacobians and Hessians.
            grad.clear()
            return outputs_, losses

        def outputs_losses_train(inputs, targets, auxiliary_vars):
            return outputs_losses(
                True, inputs, targets, auxiliary_vars, self.data.losses_train
            )

        self.outputs_losses_train = outputs_losses_train


# ---- examples/pinn_forward/Poisson_Dirichlet_1d_exactBC.py ----
sin = torch.sin


def pde(x, y):
    # Most backends
    dy_xx = grad.hessian(y, x)
    summation = sum([i * sin(i * x) for i in range(1, 5)])
    return -dy_xx - summation - 8 * sin(8 * x)


def output_transform(x, y):
    return x * (np.pi - x) * y + x


def build_model():
    data = PDE(pde, [])
    layer_size = [1] + [8] * 3 + [1]
    net = FNN(layer_size, "tanh", "Glorot uniform")
    net.apply_output_transform(output_transform)
    model = Model(data, net)
    model._compile_pytorch(lr=1e-4, loss_fn=mean_squared_error, decay=None)
    return model


def train_step(model, train_x):
    step = torch.compile(model.outputs_losses_train)
    return step(train_x, None, None)


def make():
    torch.manual_seed(0)
    model = build_model()
    train_x = np.linspace(0, np.pi, 16, dtype=np.float32).reshape(-1, 1)
    return model.outputs_losses_train, [(train_x, None, None)]
