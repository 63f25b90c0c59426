"""snntorch NoisyLeaky neuron in a compiled decoder: `_SpikeTensor` state, `zeros_like(..., requires_grad=True)`, a branch on the `reset_mechanism_val` buffer, and a nested autograd.Function firing with `torch.bernoulli` every step.

Source: https://github.com/pytorch/pytorch/issues/160757
(RAVE's nsnn.py decoder compiled with `torch.compile(self.decoder, backend='eager')`
loops `noisy_step, mem = self.noisy_leaky(x[:, t, :], mem)`; the reported graph
breaks name snntorch/_neurons/noisyleaky.py `fire` -> `self.spike_grad(...)`).
The neuron follows jeshraghian/snntorch@03f5c87fdf:snntorch/_neurons/noisyleaky.py
(forward, fire, _base_state_function, _build_state_function) and
snntorch/_neurons/neurons.py (SpikingNeuron buffers and reset mechanism,
NoisyLIF's `spike_grad = self.Gaussian.apply`, mem_reset, init_leaky,
the `@staticmethod class Gaussian(torch.autograd.Function)`, _SpikeTensor,
_SpikeTorchConv).
Simplified: only the gaussian noise type; no init_hidden / inhibition /
state_quant paths; the decoder around the neuron is two linears.
"""
import math

import torch
import torch.nn as nn


class SpikingNeuron(nn.Module):
    reset_dict = {
        "subtract": 0,
        "zero": 1,
        "none": 2,
    }

    def __init__(self, threshold=1.0, reset_mechanism="subtract", graded_spikes_factor=1.0):
        super().__init__()
        self.init_hidden = False
        self.inhibition = False
        self.state_quant = False
        self.surrogate_disable = False
        self.register_buffer("threshold", torch.as_tensor(threshold))
        self.register_buffer("graded_spikes_factor", torch.as_tensor(graded_spikes_factor))
        self.register_buffer("reset_mechanism_val", torch.as_tensor(SpikingNeuron.reset_dict[reset_mechanism]))
        self._reset_mechanism = reset_mechanism


class _SpikeTensor(torch.Tensor):
    """Inherits from torch.Tensor with additional attributes.
    ``init_flag`` is set at the time of initialization.
    When called in the forward function of any neuron, they are parsed and
    replaced with a torch.Tensor variable.
    """

    @staticmethod
    def __new__(cls, *args, init_flag=False, **kwargs):
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, *args, init_flag=True):
        self.init_flag = init_flag


def _SpikeTorchConv(*args, input_):
    """Convert SpikeTensor to torch.Tensor of the same size as ``input_``."""

    states = []
    if len(args) == 1 and type(args) is not tuple:  # if only one hidden state, make it iterable
        args = (args,)
    for arg in args:
        arg = arg.to("cpu")
        arg = torch.Tensor(arg)  # wash away the SpikeTensor class
        arg = torch.zeros_like(input_, requires_grad=True)
        states.append(arg)
    if len(states) == 1:  # otherwise, list isn't unpacked
        return states[0]

    return states


class NoisyLIF(SpikingNeuron):
    def __init__(self, beta, threshold=1.0, noise_type="gaussian", noise_scale=0.3, reset_mechanism="subtract"):
        super().__init__(threshold, reset_mechanism)
        self.register_buffer("beta", torch.as_tensor(beta))
        self._noise_scale = noise_scale

        if noise_type == "gaussian":
            self.spike_grad = self.Gaussian.apply
        else:
            raise ValueError("Invalid noise type. Valid options: gaussian")

    @staticmethod
    def init_leaky():
        mem = _SpikeTensor(init_flag=False)

        return mem

    def mem_reset(self, mem):
        """Generates detached reset signal if mem > threshold.
        Returns reset."""
        mem_shift = mem - self.threshold
        reset = self.spike_grad(mem_shift, 0, self._noise_scale).clone().detach()

        return reset

    @staticmethod
    class Gaussian(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input_, mu, sigma):
            ctx.save_for_backward(input_)
            ctx.mu = mu
            ctx.sigma = sigma
            p_spike = 1 / 2 * (1 + torch.erf((input_ - mu) / (sigma * math.sqrt(2))))
            return torch.bernoulli(p_spike)

        @staticmethod
        def backward(ctx, grad_output):
            (input_,) = ctx.saved_tensors
            grad_input = grad_output.clone()

            temp = (1 / (math.sqrt(2 * math.pi) * ctx.sigma)) * torch.exp(
                -0.5 * ((input_ - ctx.mu) / ctx.sigma).pow_(2)
            )
            return grad_input * temp, None, None


class NoisyLeaky(NoisyLIF):
    def forward(self, input_, mem=False):
        if hasattr(mem, "init_flag"):  # only triggered on first-pass
            mem = _SpikeTorchConv(mem, input_=input_)

        if not self.init_hidden:
            self.reset = self.mem_reset(mem)
            mem = self._build_state_function(input_, mem)

            spk = self.fire(mem)

            return spk, mem

    def fire(self, mem):
        mem_shift = mem - self.threshold
        # the spike_grad function for noisy lif is called using (mem_shift, mean=0, noise_scale)
        spk = self.spike_grad(mem_shift, 0, self._noise_scale)
        spk = spk * self.graded_spikes_factor

        return spk

    def _base_state_function(self, input_, mem):
        base_fn = self.beta.clamp(0, 1) * mem + input_
        return base_fn

    def _build_state_function(self, input_, mem):
        if self.reset_mechanism_val == 0:  # reset by subtraction
            state_fn = self._base_state_function(input_, mem - self.reset * self.threshold)
        elif self.reset_mechanism_val == 1:  # reset to zero
            state_fn = self._base_state_function(input_, mem) - self.reset * self._base_state_function(input_, mem)
        elif self.reset_mechanism_val == 2:  # no reset, pure integration
            state_fn = self._base_state_function(input_, mem)
        return state_fn


class NoisySpikingDecoder(nn.Module):
    def __init__(self, dim=6, reset_mechanism="subtract"):
        super().__init__()
        self.proj_in = nn.Linear(dim, dim)
        self.noisy_leaky = NoisyLeaky(beta=0.9, reset_mechanism=reset_mechanism)
        self.proj_out = nn.Linear(dim, dim)

    def forward(self, x):
        x = self.proj_in(x)
        mem = self.noisy_leaky.init_leaky()
        spikes = []
        for t in range(x.shape[1]):
            noisy_step, mem = self.noisy_leaky(x[:, t, :], mem)
            spikes.append(noisy_step)
        return self.proj_out(torch.stack(spikes, dim=1))


class RAVE(nn.Module):
    def __init__(self):
        super().__init__()
        self.decoder = NoisySpikingDecoder()
        self.decoder = torch.compile(self.decoder, backend="eager")


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 4, 6)
    return NoisySpikingDecoder(), [(x,)]
