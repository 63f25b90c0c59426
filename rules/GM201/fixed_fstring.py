"""GM201 bad: an f-string that formats `.item()`: two breaks, the print and the host sync."""
import torch


def loss_step(pred, target):
    loss = torch.nn.functional.mse_loss(pred, target)
    torch._higher_order_ops.print("loss={:.5f} on {} samples", loss, pred.shape[0])
    return loss * 0.5, pred - target


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return loss_step, [(torch.randn(5, 3), torch.randn(5, 3))]


compiled = torch.compile(loss_step)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
