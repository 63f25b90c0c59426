"""flow_matching discrete training step: MixtureDiscreteProbPath.sample + MixturePathGeneralizedKL (jump_coefficient shape guard).

Source: facebookresearch/flow_matching@13ad9a7046:flow_matching/loss/generalized_loss.py:16-99
Kept: MixturePathGeneralizedKL (a torch _Loss) verbatim: the
`jump_coefficient is not None and jump_coefficient.shape != x_1_shape[:1]`
ValueError, gather of log_softmax/exp at x_1 and x_t, the scheduler-derived
jump coefficient with its `[(...,) + (None,) * (x_1.dim() - 1)]` index and
repeat, and the reduction switch; MixtureDiscreteProbPath.sample
(path/mixture.py) with ProbPath.assert_sample_shape, expand_tensor_like and
PolynomialConvexScheduler; the examples' training step (x_0 uniform noise,
t ~ U[0, 1 - eps), path.sample, model, loss).
Simplified: the denoiser is an embedding + time linear + head over a vocabulary
of 6; no optimizer step inside the compiled function.
"""
from dataclasses import dataclass, field
from typing import Optional, Union

import torch
from torch import Tensor, nn
from torch.nn.modules.loss import _Loss


@dataclass
class SchedulerOutput:
    alpha_t: Tensor = field(metadata={"help": "alpha_t"})
    sigma_t: Tensor = field(metadata={"help": "sigma_t"})
    d_alpha_t: Tensor = field(metadata={"help": "Derivative of alpha_t."})
    d_sigma_t: Tensor = field(metadata={"help": "Derivative of sigma_t."})


class ConvexScheduler:
    pass


class PolynomialConvexScheduler(ConvexScheduler):
    def __init__(self, n: Union[float, int]) -> None:
        assert isinstance(n, (float, int)), f"`n` must be a float or int. Got {type(n)=}."
        assert n > 0, f"`n` must be positive. Got {n=}."
        self.n = n

    def __call__(self, t: Tensor) -> SchedulerOutput:
        return SchedulerOutput(
            alpha_t=t**self.n,
            sigma_t=1 - t**self.n,
            d_alpha_t=self.n * (t ** (self.n - 1)),
            d_sigma_t=-self.n * (t ** (self.n - 1)),
        )


def expand_tensor_like(input_tensor: Tensor, expand_to: Tensor) -> Tensor:
    assert input_tensor.ndim == 1, "Input tensor must be a 1d vector."
    assert input_tensor.shape[0] == expand_to.shape[0], f"The first (batch_size) dimension must match. Got shape {input_tensor.shape} and {expand_to.shape}."

    dim_diff = expand_to.ndim - input_tensor.ndim

    t_expanded = input_tensor.clone()
    t_expanded = t_expanded.reshape(-1, *([1] * dim_diff))

    return t_expanded.expand_as(expand_to)


@dataclass
class DiscretePathSample:
    x_1: Tensor = field(metadata={"help": "target samples X_1 (batch_size, ...)."})
    x_0: Tensor = field(metadata={"help": "source samples X_0 (batch_size, ...)."})
    t: Tensor = field(metadata={"help": "time samples t (batch_size, ...)."})
    x_t: Tensor = field(metadata={"help": "samples X_t ~ p_t(X_t), shape (batch_size, ...)."})


class ProbPath:
    def assert_sample_shape(self, x_0: Tensor, x_1: Tensor, t: Tensor):
        assert (
            t.ndim == 1
        ), f"The time vector t must have shape [batch_size]. Got {t.shape}."
        assert (
            t.shape[0] == x_0.shape[0] == x_1.shape[0]
        ), f"Time t dimension must match the batch size [{x_1.shape[0]}]. Got {t.shape}"


class MixtureDiscreteProbPath(ProbPath):
    def __init__(self, scheduler: ConvexScheduler):
        assert isinstance(
            scheduler, ConvexScheduler
        ), "Scheduler for ConvexProbPath must be a ConvexScheduler."

        self.scheduler = scheduler

    def sample(self, x_0: Tensor, x_1: Tensor, t: Tensor) -> DiscretePathSample:
        self.assert_sample_shape(x_0=x_0, x_1=x_1, t=t)

        sigma_t = self.scheduler(t).sigma_t

        sigma_t = expand_tensor_like(input_tensor=sigma_t, expand_to=x_1)

        source_indices = torch.rand(size=x_1.shape, device=x_1.device) < sigma_t
        x_t = torch.where(condition=source_indices, input=x_0, other=x_1)

        return DiscretePathSample(x_t=x_t, x_1=x_1, x_0=x_0, t=t)


class MixturePathGeneralizedKL(_Loss):
    def __init__(self, path: MixtureDiscreteProbPath, reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        self.path = path

    def forward(
        self,
        logits: Tensor,
        x_1: Tensor,
        x_t: Tensor,
        t: Tensor,
        jump_coefficient: Optional[Tensor] = None,
    ) -> Tensor:
        x_1_shape = x_1.shape

        if jump_coefficient is not None and jump_coefficient.shape != x_1_shape[:1]:
            raise ValueError("jump_coefficient must be a vector of shape (batch,)")

        log_p_1t = torch.log_softmax(logits, dim=-1)
        log_p_1t_x1 = torch.gather(log_p_1t, dim=-1, index=x_1.unsqueeze(-1))
        log_p_1t_x1 = log_p_1t_x1.view(*x_1_shape)

        p_1t = torch.exp(log_p_1t)
        p_1t_xt = torch.gather(p_1t, dim=-1, index=x_t.unsqueeze(-1))
        p_1t_xt = p_1t_xt.view(*x_1_shape)

        scheduler_output = self.path.scheduler(t)

        jump_coefficient = (
            jump_coefficient
            if jump_coefficient is not None
            else scheduler_output.d_alpha_t / (1 - scheduler_output.alpha_t)
        )[(...,) + (None,) * (x_1.dim() - 1)]
        jump_coefficient = jump_coefficient.repeat(1, *x_1_shape[1:])
        delta_x1_xt = (x_t == x_1).to(log_p_1t.dtype)

        loss = -jump_coefficient * (
            p_1t_xt - delta_x1_xt + (1 - delta_x1_xt) * log_p_1t_x1
        )

        if self.reduction == "mean":
            return torch.mean(loss)
        elif self.reduction == "sum":
            return torch.sum(loss)
        elif self.reduction == "none":
            return loss
        else:
            raise ValueError(f"{self.reduction} is not a valid value for reduction")


class Denoiser(nn.Module):
    def __init__(self, vocab=6, hidden=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.time = nn.Linear(1, hidden)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, x, t):
        h = self.emb(x) + self.time(t[:, None])[:, None, :]
        return self.out(torch.tanh(h))


class TrainStep(nn.Module):
    def __init__(self, vocab=6, epsilon=1e-3):
        super().__init__()
        self.vocab_size = vocab
        self.epsilon = epsilon
        self.probability_denoiser = Denoiser(vocab)
        self.path = MixtureDiscreteProbPath(scheduler=PolynomialConvexScheduler(n=2.0))
        self.loss_fn = MixturePathGeneralizedKL(path=self.path)

    def forward(self, x_1, jump_coefficient=None):
        x_0 = torch.randint_like(x_1, high=self.vocab_size)
        t = torch.rand(x_1.shape[0], device=x_1.device) * (1 - self.epsilon)
        path_sample = self.path.sample(t=t, x_0=x_0, x_1=x_1)
        logits = self.probability_denoiser(path_sample.x_t, path_sample.t)
        loss = self.loss_fn(logits=logits, x_1=x_1, x_t=path_sample.x_t, t=path_sample.t,
                            jump_coefficient=jump_coefficient)
        return loss


def train():
    step = TrainStep()
    return torch.compile(step)


RAISING_INPUTS = {2: "ValueError"}


def make():
    torch.manual_seed(0)
    x_1 = torch.randint(0, 6, (3, 4))
    return TrainStep(), [
        (x_1,),
        (x_1, torch.full((3,), 0.5)),
        (x_1, torch.full((2,), 0.5)),
    ]
