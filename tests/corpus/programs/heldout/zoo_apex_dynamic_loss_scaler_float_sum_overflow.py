"""apex FP16_Optimizer step with a DynamicLossScaler: `_has_inf_or_nan` forces `float(x.float().sum())` inside a try/except, compares the Python float, and `update_scale` / `step` branch on the result.

Source: NVIDIA/apex@2fa4dbafaae39a2eb1413c5d87e33252cd8e3b2c:apex/fp16_utils/loss_scaler.py:48-120
Also: apex/fp16_utils/fp16_optimizer.py (FP16_Optimizer._check_overflow,
_update_scale, step: skip the step on overflow, otherwise unscale the grads).
Kept: DynamicLossScaler verbatim (has_overflow, _has_inf_or_nan with its
RuntimeError handling, update_scale, loss_scale property); the optimizer's
overflow check, scale update and "skip on overflow" step.
Simplified: fp32 master weights are the params themselves (no fp16 copies),
an SGD update instead of a wrapped torch optimizer, the overflow message
is returned instead of printed.
"""
import torch


class DynamicLossScaler:
    def __init__(self,
                 init_scale=2**32,
                 scale_factor=2.,
                 scale_window=1000):
        self.cur_scale = init_scale
        self.cur_iter = 0
        self.last_overflow_iter = -1
        self.scale_factor = scale_factor
        self.scale_window = scale_window

    # `params` is a list / generator of torch.Variable
    def has_overflow(self, params):
        for p in params:
            if p.grad is not None and DynamicLossScaler._has_inf_or_nan(p.grad.data):
                return True

        return False

    # `x` is a torch.Tensor
    def _has_inf_or_nan(x):
        try:
            # Stopgap until upstream fixes sum() on HalfTensors
            cpu_sum = float(x.float().sum())
            # cpu_sum = float(x.sum())
            # print(cpu_sum)
        except RuntimeError as instance:
            # We want to check if inst is actually an overflow exception.
            # RuntimeError could come from a different error.
            # If so, we still want the exception to propagate.
            if "value cannot be converted" not in instance.args[0]:
                raise
            return True
        else:
            if cpu_sum == float('inf') or cpu_sum == -float('inf') or cpu_sum != cpu_sum:
                return True
            return False

    # `overflow` is boolean indicating whether we overflowed in gradient
    def update_scale(self, overflow):
        if overflow:
            # self.cur_scale /= self.scale_factor
            self.cur_scale = max(self.cur_scale/self.scale_factor, 1)
            self.last_overflow_iter = self.cur_iter
        else:
            if (self.cur_iter - self.last_overflow_iter) % self.scale_window == 0:
                self.cur_scale *= self.scale_factor
        self.cur_iter += 1

    @property
    def loss_scale(self):
        return self.cur_scale


class FP16_Optimizer(object):
    def __init__(self, params, lr=0.1, dynamic_loss_scale=True, dynamic_loss_args=None):
        self.fp32_from_fp16_groups = [list(params)]
        self.lr = lr
        if dynamic_loss_scale:
            self.dynamic_loss_scale = True
            if dynamic_loss_args is not None:
                self.loss_scaler = DynamicLossScaler(**dynamic_loss_args)
            else:
                self.loss_scaler = DynamicLossScaler()
        self.overflow = False

    def _check_overflow(self):
        params = []
        for group in self.fp32_from_fp16_groups:
            for param in group:
                params.append(param)
        self.overflow = self.loss_scaler.has_overflow(params)

    def _update_scale(self, has_overflow=False):
        self.loss_scaler.update_scale(has_overflow)

    def _downscale_master(self):
        if self.loss_scale != 1.0:
            for group in self.fp32_from_fp16_groups:
                for param in group:
                    if param.grad is not None:
                        param.grad.data.mul_(1. / self.loss_scale)

    @property
    def loss_scale(self):
        return self.loss_scaler.loss_scale

    @torch.no_grad()
    def step(self):
        self._check_overflow()
        scale = self.loss_scaler.loss_scale
        self._update_scale(self.overflow)
        if self.overflow:
            return "OVERFLOW! Skipping step. Attempted loss scale: {}, reducing to {}".format(
                scale, self.loss_scale)

        self._downscale_master()
        for group in self.fp32_from_fp16_groups:
            for param in group:
                param.add_(param.grad, alpha=-self.lr)
        return None


def build_optimizer(grads):
    params = []
    for g in grads:
        p = torch.nn.Parameter(torch.ones_like(g))
        p.grad = g.clone()
        params.append(p)
    return FP16_Optimizer(params, dynamic_loss_args={"init_scale": 2**8, "scale_window": 1})


def fp16_step(optimizer):
    return optimizer.step()


compiled_step = torch.compile(fp16_step)


def make():
    torch.manual_seed(0)
    finite = [torch.randn(4, 3) * 256, torch.randn(3) * 256]
    overflow = [torch.randn(4, 3), torch.tensor([1.0, float('inf'), 2.0])]
    return fp16_step, [(build_optimizer(finite),), (build_optimizer(overflow),)]
