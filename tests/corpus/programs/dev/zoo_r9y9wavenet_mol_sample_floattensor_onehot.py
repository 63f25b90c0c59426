"""WaveNet vocoder sampling: draw from a discretized mixture of logistics with `.data.new(...).uniform_`, a legacy `torch.FloatTensor(size).zero_()` one-hot and an `is_cuda` check.

Source: r9y9/wavenet_vocoder@4ae0a5047742de55e395d78ffe6761cb7824f50e:wavenet_vocoder/mixture.py:103-148
Kept: to_one_hot and sample_from_discretized_mix_logistic verbatim.
Simplified: compiled as the per-step sampler of incremental_forward (there it is
called with `x.view(B, -1, 1)`); 3 mixtures, batch 2, one time step or a few.
"""
import torch


def to_one_hot(tensor, n, fill_with=1.):
    # we perform one hot encore with respect to the last axis
    one_hot = torch.FloatTensor(tensor.size() + (n,)).zero_()
    if tensor.is_cuda:
        one_hot = one_hot.cuda()
    one_hot.scatter_(len(tensor.size()), tensor.unsqueeze(-1), fill_with)
    return one_hot


def sample_from_discretized_mix_logistic(y, log_scale_min=-7.0):
    """
    Sample from discretized mixture of logistic distributions

    Args:
        y (Tensor): B x C x T
        log_scale_min (float): Log scale minimum value

    Returns:
        Tensor: sample in range of [-1, 1].
    """
    assert y.size(1) % 3 == 0
    nr_mix = y.size(1) // 3

    # B x T x C
    y = y.transpose(1, 2)
    logit_probs = y[:, :, :nr_mix]

    # sample mixture indicator from softmax
    temp = logit_probs.data.new(logit_probs.size()).uniform_(1e-5, 1.0 - 1e-5)
    temp = logit_probs.data - torch.log(- torch.log(temp))
    _, argmax = temp.max(dim=-1)

    # (B, T) -> (B, T, nr_mix)
    one_hot = to_one_hot(argmax, nr_mix)
    # select logistic parameters
    means = torch.sum(y[:, :, nr_mix:2 * nr_mix] * one_hot, dim=-1)
    log_scales = torch.clamp(torch.sum(
        y[:, :, 2 * nr_mix:3 * nr_mix] * one_hot, dim=-1), min=log_scale_min)
    # sample from logistic & clip to interval
    # we don't actually round to the nearest 8bit value when sampling
    u = means.data.new(means.size()).uniform_(1e-5, 1.0 - 1e-5)
    x = means + torch.exp(log_scales) * (torch.log(u) - torch.log(1. - u))

    x = torch.clamp(torch.clamp(x, min=-1.), max=1.)

    return x


sample = torch.compile(sample_from_discretized_mix_logistic)


def make():
    torch.manual_seed(0)
    B = 2
    step = torch.randn(B, 9).view(B, -1, 1)
    block = torch.randn(B, 9, 6)
    return sample_from_discretized_mix_logistic, [(step,), (block, -5.0)]
