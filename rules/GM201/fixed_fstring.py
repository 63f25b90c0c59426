"""GM201 bad: an f-string that formats `.item()`: two breaks, the print and the host sync."""
import torch


def loss_step(pred, target):
    loss = torch.nn.functional.mse_loss(pred, target)
    _gm_ret = loss * 0.5, pred - target
    print(f"loss={loss.item():.5f} on {pred.shape[0]} samples")
    return _gm_ret


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return loss_step, [(torch.randn(5, 3), torch.randn(5, 3))]


compiled = torch.compile(loss_step)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
