"""GM523: a Dice loss unsqueezes the caller's mask in place (GB0148).

kornia's `dice_loss` runs `target_mask.unsqueeze_(1)` on the mask it is given, to broadcast it over classes.
"""
import torch


def dice_loss(pred: torch.Tensor, target_one_hot: torch.Tensor, target_mask: torch.Tensor) -> torch.Tensor:
    target_mask.unsqueeze_(1)
    pred_soft = pred.softmax(dim=1) * target_mask
    target_one_hot = target_one_hot * target_mask
    intersection = (pred_soft * target_one_hot).sum((2, 3))
    cardinality = (pred_soft + target_one_hot).sum((2, 3))
    return (1.0 - 2.0 * intersection / (cardinality + 1e-8)).mean()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    pred = torch.randn(2, 3, 4, 4)
    target = torch.nn.functional.one_hot(torch.randint(0, 3, (2, 4, 4)), 3).permute(0, 3, 1, 2).float()
    return dice_loss, [(pred, target, torch.rand(2, 4, 4) > 0.2)]


compiled = torch.compile(dice_loss)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
