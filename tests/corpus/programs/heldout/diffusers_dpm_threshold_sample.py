"""diffusers DPMSolverMultistepScheduler._threshold_sample (dynamic thresholding): dtype upcast, np.prod of dims, quantile clamp (no break expected).

Source: huggingface/diffusers@58eb52c080:src/diffusers/schedulers/scheduling_dpmsolver_multistep.py:500-541,749-845
Kept: _threshold_sample verbatim (the dtype check and float upcast, the
reshape with `channels * np.prod(remaining_dims)`, torch.quantile,
clamp(min=1, max=sample_max_value), divide, reshape, cast back) and
convert_model_output's thresholding switch for the dpmsolver++ epsilon case.
Simplified: alpha_t/sigma_t given directly; 2x2x3x3 samples.
"""
import numpy as np
import torch


class Config:
    dynamic_thresholding_ratio = 0.9
    sample_max_value = 1.5
    thresholding = True
    algorithm_type = "dpmsolver++"
    prediction_type = "epsilon"


class DPMSolverMultistepScheduler:
    def __init__(self):
        self.config = Config()

    def _threshold_sample(self, sample):
        dtype = sample.dtype
        batch_size, channels, *remaining_dims = sample.shape
        if dtype not in (torch.float32, torch.float64):
            sample = sample.float()
        sample = sample.reshape(batch_size, channels * np.prod(remaining_dims))
        abs_sample = sample.abs()
        s = torch.quantile(abs_sample, self.config.dynamic_thresholding_ratio, dim=1)
        s = torch.clamp(s, min=1, max=self.config.sample_max_value)
        s = s.unsqueeze(1)
        sample = torch.clamp(sample, -s, s) / s
        sample = sample.reshape(batch_size, channels, *remaining_dims)
        sample = sample.to(dtype)
        return sample

    def convert_model_output(self, model_output, sample, alpha_t, sigma_t):
        if self.config.algorithm_type in ["dpmsolver++", "sde-dpmsolver++"]:
            if self.config.prediction_type == "epsilon":
                x0_pred = (sample - sigma_t * model_output) / alpha_t
            elif self.config.prediction_type == "sample":
                x0_pred = model_output
            else:
                raise ValueError(f"prediction_type given as {self.config.prediction_type} must be one of `epsilon`, `sample`")
            if self.config.thresholding:
                x0_pred = self._threshold_sample(x0_pred)
            return x0_pred
        raise NotImplementedError


scheduler = DPMSolverMultistepScheduler()


@torch.compile(fullgraph=False)
def convert(model_output, sample):
    return scheduler.convert_model_output(model_output, sample, alpha_t=0.8, sigma_t=0.6)


def make():
    torch.manual_seed(0)
    return convert._torchdynamo_orig_callable, [(torch.randn(2, 2, 3, 3), torch.randn(2, 2, 3, 3) * 3)]
