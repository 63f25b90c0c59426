"""GM401 bad: a classification loss one-hot encodes its labels without `num_classes`.

`F.one_hot(labels)` makes the width `labels.max() + 1`, read from the data:
Dynamo breaks there (GB0246), with or without `capture_dynamic_output_shape_ops`.
The fix is advice: pass `num_classes=` (the model knows it).
"""
import torch
import torch.nn.functional as F


def soft_target_loss(logits: torch.Tensor, labels: torch.Tensor, smoothing: float = 0.1) -> torch.Tensor:
    log_probs = logits.log_softmax(-1)
    target = F.one_hot(labels).to(log_probs.dtype)
    target = target * (1 - smoothing) + smoothing / target.shape[-1]
    return -(target * log_probs).sum(-1).mean()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return soft_target_loss, [(torch.randn(4, 3), torch.tensor([0, 2, 1, 2]))]


compiled = torch.compile(soft_target_loss)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
