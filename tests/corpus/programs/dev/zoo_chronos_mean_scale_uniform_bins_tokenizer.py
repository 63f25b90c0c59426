"""Chronos MeanScaleUniformBins: NaN-aware mean scaling with `scale[~(scale > 0)] = 1.0`, bucketize into uniform bins, pad ids on NaN positions, EOS append for seq2seq, and the inverse output_transform.

Source: amazon-science/chronos-forecasting@95185d1336e5bfdf50374d44c06ad9e10b303144:src/chronos/chronos.py:28-56,154-240
Kept: ChronosConfig (dataclass with the special-token assert and
create_tokenizer via getattr on the module), MeanScaleUniformBins verbatim
(linspace centers, boundaries, _input_transform with nansum, masked
assignments and clamp_, _append_eos_token, context_input_transform's
context-length crop and the seq2seq EOS branch, output_transform).
Simplified: the ChronosTokenizer base (docstring-only abstract methods) is
folded away; `chronos` module lookup is `globals()`; 16 tokens, context 8,
prediction 4; the compiled entry tokenizes a context and maps sampled ids
back to values, as ChronosPipeline.predict does around the model call.
"""
from dataclasses import dataclass
from typing import Any, Dict, Literal, Optional, Tuple

import torch


@dataclass
class ChronosConfig:
    tokenizer_class: str
    tokenizer_kwargs: Dict[str, Any]
    context_length: int
    prediction_length: int
    n_tokens: int
    n_special_tokens: int
    pad_token_id: int
    eos_token_id: int
    use_eos_token: bool
    model_type: Literal["causal", "seq2seq"]
    num_samples: int
    temperature: float
    top_k: int
    top_p: float

    def __post_init__(self):
        assert self.pad_token_id < self.n_special_tokens and self.eos_token_id < self.n_special_tokens, (
            f"Special token id's must be smaller than {self.n_special_tokens=}"
        )

    def create_tokenizer(self) -> "MeanScaleUniformBins":
        class_ = globals()[self.tokenizer_class]
        return class_(**self.tokenizer_kwargs, config=self)


class MeanScaleUniformBins:
    def __init__(self, low_limit: float, high_limit: float, config: ChronosConfig) -> None:
        self.config = config
        self.centers = torch.linspace(
            low_limit,
            high_limit,
            config.n_tokens - config.n_special_tokens - 1,
        )
        self.boundaries = torch.concat(
            (
                torch.tensor([-1e20], device=self.centers.device),
                (self.centers[1:] + self.centers[:-1]) / 2,
                torch.tensor([1e20], device=self.centers.device),
            )
        )

    def _input_transform(
        self, context: torch.Tensor, scale: Optional[torch.Tensor] = None
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        context = context.to(dtype=torch.float32)
        attention_mask = ~torch.isnan(context)

        if scale is None:
            scale = torch.nansum(torch.abs(context) * attention_mask, dim=-1) / torch.nansum(attention_mask, dim=-1)
            scale[~(scale > 0)] = 1.0

        scaled_context = context / scale.unsqueeze(dim=-1)
        token_ids = (
            torch.bucketize(
                input=scaled_context,
                boundaries=self.boundaries,
                # buckets are open to the right, see:
                # https://pytorch.org/docs/2.1/generated/torch.bucketize.html#torch-bucketize
                right=True,
            )
            + self.config.n_special_tokens
        )

        token_ids.clamp_(0, self.config.n_tokens - 1)

        token_ids[~attention_mask] = self.config.pad_token_id

        return token_ids, attention_mask, scale

    def _append_eos_token(
        self, token_ids: torch.Tensor, attention_mask: torch.Tensor
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        batch_size = token_ids.shape[0]
        eos_tokens = torch.full((batch_size, 1), fill_value=self.config.eos_token_id)
        token_ids = torch.concat((token_ids, eos_tokens), dim=1)
        eos_mask = torch.full((batch_size, 1), fill_value=True)
        attention_mask = torch.concat((attention_mask, eos_mask), dim=1)

        return token_ids, attention_mask

    def context_input_transform(self, context: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        length = context.shape[-1]

        if length > self.config.context_length:
            context = context[..., -self.config.context_length :]

        token_ids, attention_mask, scale = self._input_transform(context=context)

        if self.config.use_eos_token and self.config.model_type == "seq2seq":
            token_ids, attention_mask = self._append_eos_token(token_ids=token_ids, attention_mask=attention_mask)

        return token_ids, attention_mask, scale

    def output_transform(self, samples: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        scale_unsqueezed = scale.unsqueeze(-1).unsqueeze(-1)
        indices = torch.clamp(
            samples - self.config.n_special_tokens - 1,
            min=0,
            max=len(self.centers) - 1,
        )
        return self.centers[indices] * scale_unsqueezed


config = ChronosConfig(
    tokenizer_class="MeanScaleUniformBins",
    tokenizer_kwargs={"low_limit": -15.0, "high_limit": 15.0},
    context_length=8,
    prediction_length=4,
    n_tokens=16,
    n_special_tokens=2,
    pad_token_id=0,
    eos_token_id=1,
    use_eos_token=True,
    model_type="seq2seq",
    num_samples=3,
    temperature=1.0,
    top_k=50,
    top_p=1.0,
)
tokenizer = config.create_tokenizer()


@torch.compile(backend="inductor", fullgraph=False)
def tokenize_and_decode(context: torch.Tensor, samples: torch.Tensor):
    token_ids, attention_mask, scale = tokenizer.context_input_transform(context)
    return token_ids, attention_mask, tokenizer.output_transform(samples, scale)


def make():
    torch.manual_seed(0)
    context = torch.randn(2, 10) * 3
    context[0, 3] = float("nan")
    zeros = torch.zeros(2, 6)
    zeros[1, :2] = float("nan")
    samples = torch.randint(0, 16, (2, 3, 4))
    return tokenize_and_decode._torchdynamo_orig_callable, [(context, samples), (zeros, samples)]
