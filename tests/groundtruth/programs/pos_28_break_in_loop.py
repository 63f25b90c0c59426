"""GM101 positive: a tensor-valued `if` inside a `for` loop; Dynamo logs the break, then skips the whole frame (explain shows no graph)."""
import torch


def decay_steps(x):
    y = x * 1.0
    for _ in range(3):
        if y.mean() > 1.0:  # expect: GM101
            y = y * 0.5
        y = y + 0.1
    return y


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return decay_steps, [(torch.full((4, 8), 4.0),), (torch.zeros(4, 8),)]


compiled = torch.compile(decay_steps)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
