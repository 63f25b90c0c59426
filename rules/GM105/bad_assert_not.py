"""GM105 bad: latent_ode's masked GRU update checks its summed mask with `assert(not torch.isnan(summed_mask).any())` -- the `not` asks for the tensor's truth on the host."""
import torch


def masked_update(hidden, prev_hidden, mask_i):
    summed_mask = torch.sum(mask_i, -1, keepdim=True).clamp(max=1.0)
    assert(not torch.isnan(summed_mask).any())  # expect: GM105
    return summed_mask * hidden + (1 - summed_mask) * prev_hidden


#: The second input set carries a NaN into the mask, so the assert fails.
RAISING_INPUTS = {1: "AssertionError"}


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    hidden, prev = torch.randn(3, 4), torch.randn(3, 4)
    mask = torch.tensor([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0]])
    nan_mask = torch.tensor([[1.0, float("nan")], [0.0, 0.0], [1.0, 1.0]])
    return masked_update, [(hidden, prev, mask), (hidden, prev, nan_mask)]


compiled = torch.compile(masked_update)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
