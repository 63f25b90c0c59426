"""GM404 negative: the steps of a loop over a 2-d tensor are rows, 1-d tensors, which gather.

Each `t` of `for t in schedule` (three rows of two timesteps, one per sample of the batch) is a
1-d integer tensor: `alphas[t]` is advanced indexing, traced. Nothing may be flagged, and Dynamo
must not break.
"""
import torch


class Sampler:
    def __init__(self) -> None:
        self.alphas = torch.linspace(0.9, 0.1, 10)
        self.schedule = torch.arange(6).view(3, 2).flip(0)

    def step(self, x, timestep):
        return x * self.alphas[timestep].view(-1, 1)

    def run(self, x: torch.Tensor) -> torch.Tensor:
        for t in self.schedule:
            x = self.step(x, t)
        return x


sampler = Sampler()
run = torch.compile(sampler.run)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Sampler().run, [(torch.randn(2, 3),)]


if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
