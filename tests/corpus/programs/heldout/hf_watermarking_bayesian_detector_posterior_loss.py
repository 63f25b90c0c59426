"""SynthID Bayesian watermark detector: tournament likelihood model, masked log-odds posterior, BCE + delta-L2 loss.

Source: huggingface/transformers@v4.52.4:src/transformers/generation/watermarking.py:290-349,352-479
Kept: BayesianDetectorWatermarkedLikelihood (repeat_interleave of g-values, tril
diagonal=-1 masking, batched matmul + squeeze + beta, sigmoid latents, the 0.5 * (...)
likelihood), BayesianDetectorModel._compute_posterior (clamps, logs, einsum("i...->i"),
prior log-odds, sigmoid) and forward (unwatermarked 0.5 likelihoods, optional
BCELoss on the clamped posterior plus the delta**2 penalty scaled by
loss_batch_weight, tuple output when return_dict is False).
Simplified: PreTrainedModel/BayesianDetectorConfig reduced to a plain config;
watermarking_depth 4, sequences of 6 g-value steps.
"""
import torch
from torch import nn
from torch.nn import BCELoss


class BayesianDetectorConfig:
    watermarking_depth = 4
    base_rate = 0.5


class BayesianDetectorWatermarkedLikelihood(nn.Module):
    def __init__(self, watermarking_depth: int):
        super().__init__()
        self.watermarking_depth = watermarking_depth
        self.beta = torch.nn.Parameter(-2.5 + 0.001 * torch.randn(1, 1, watermarking_depth))
        self.delta = torch.nn.Parameter(0.001 * torch.randn(1, 1, self.watermarking_depth, watermarking_depth))

    def _compute_latents(self, g_values):
        x = torch.repeat_interleave(torch.unsqueeze(g_values, dim=-2), self.watermarking_depth, axis=-2)

        x = torch.tril(x, diagonal=-1)

        logits = (self.delta[..., None, :] @ x.type(self.delta.dtype)[..., None]).squeeze() + self.beta

        p_two_unique_tokens = torch.sigmoid(logits)
        p_one_unique_token = 1 - p_two_unique_tokens
        return p_one_unique_token, p_two_unique_tokens

    def forward(self, g_values):
        p_one_unique_token, p_two_unique_tokens = self._compute_latents(g_values)

        return 0.5 * ((g_values + 0.5) * p_two_unique_tokens + p_one_unique_token)


class BayesianDetectorModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.watermarking_depth = config.watermarking_depth
        self.base_rate = config.base_rate
        self.likelihood_model_watermarked = BayesianDetectorWatermarkedLikelihood(
            watermarking_depth=self.watermarking_depth
        )
        self.prior = torch.nn.Parameter(torch.tensor([self.base_rate]))

    def _compute_posterior(self, likelihoods_watermarked, likelihoods_unwatermarked, mask, prior):
        mask = torch.unsqueeze(mask, dim=-1)
        prior = torch.clamp(prior, min=1e-5, max=1 - 1e-5)
        log_likelihoods_watermarked = torch.log(torch.clamp(likelihoods_watermarked, min=1e-30, max=float("inf")))
        log_likelihoods_unwatermarked = torch.log(torch.clamp(likelihoods_unwatermarked, min=1e-30, max=float("inf")))
        log_odds = log_likelihoods_watermarked - log_likelihoods_unwatermarked

        relative_surprisal_likelihood = torch.einsum("i...->i", log_odds * mask)

        relative_surprisal_prior = torch.log(prior) - torch.log(1 - prior)

        relative_surprisal = relative_surprisal_prior + relative_surprisal_likelihood

        return torch.sigmoid(relative_surprisal)

    def forward(self, g_values, mask, labels=None, loss_batch_weight=1, return_dict=False):
        likelihoods_watermarked = self.likelihood_model_watermarked(g_values)
        likelihoods_unwatermarked = 0.5 * torch.ones_like(g_values)
        out = self._compute_posterior(
            likelihoods_watermarked=likelihoods_watermarked,
            likelihoods_unwatermarked=likelihoods_unwatermarked,
            mask=mask,
            prior=self.prior,
        )

        loss = None
        if labels is not None:
            loss_fct = BCELoss()
            loss_unwweight = torch.sum(self.likelihood_model_watermarked.delta**2)
            loss_weight = loss_unwweight * loss_batch_weight
            loss = loss_fct(torch.clamp(out, 1e-5, 1 - 1e-5), labels) + loss_weight

        return (out,) if loss is None else (out, loss)


def train_detector(config, g_values, mask, labels, l2_weight=0.0):
    detector = torch.compile(BayesianDetectorModel(config))
    optimizer = torch.optim.Adam(detector.parameters(), lr=3e-3)
    optimizer.zero_grad()
    outputs = detector(g_values, mask, labels, loss_batch_weight=l2_weight)
    outputs[1].backward()
    optimizer.step()
    return detector


def make():
    torch.manual_seed(0)
    g_values = torch.randint(0, 2, (3, 6, 4)).float()
    mask = torch.ones(3, 6)
    mask[2, 4:] = 0
    labels = torch.tensor([1.0, 0.0, 1.0])
    return BayesianDetectorModel(BayesianDetectorConfig()), [
        (g_values, mask, labels, 0.01),
        (g_values, mask),
    ]
