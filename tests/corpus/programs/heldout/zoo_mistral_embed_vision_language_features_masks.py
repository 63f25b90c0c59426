"""mistral-inference multimodal embedding: text and image token positions are split with boolean masks (`input_ids[text_locations]`), the length check's message formats `image_locations.sum().item()`, and the merged features are written back by masked assignment.

Source: mistralai/mistral-inference@2557e12d0e1878a1562ece30434820f80aa3e12a:src/mistral_inference/transformer.py:20-30,33-118,122-215
Also: src/mistral_inference/rope.py (precompute_freqs_cis, apply_rotary_emb),
src/mistral_inference/vision_encoder.py:105-117 (VisionLanguageAdapter),
src/mistral_inference/args.py (VisionEncoderArgs).
Kept: Transformer.__init__'s rank-0 modules, the freqs_cis property cache,
embed_vision_language_features as written (pre-projector norm and patch-merge
switches, the dim/length asserts), forward_partial without a cache
(SimpleInputMetadata positions, the layer loop over a ModuleDict) and forward
with softmax_fp32.
Simplified: one pipeline rank; the vision encoder is a patch conv that returns
(patches, hidden) for a list of images; a transformer block is RMSNorm + rotary
q/k mixing + MLP; freqs are precomputed for 64 positions, not 128000; image
token id 10, dim 8.
"""
import math
from dataclasses import dataclass
from typing import List, Optional

import torch
from torch import nn

RAISING_INPUTS = {2: "AssertionError"}
PATCH_MERGE = "patch_merge"


@dataclass
class VisionEncoderArgs:
    hidden_size: int = 6
    num_channels: int = 3
    image_size: int = 8
    patch_size: int = 4
    image_token_id: int = 10
    adapter_bias: bool = True
    spatial_merge_size: int = 1
    add_pre_mm_projector_layer_norm: bool = False
    mm_projector_id: str = ""


@dataclass
class TransformerArgs:
    dim: int = 8
    n_layers: int = 2
    head_dim: int = 8
    hidden_dim: int = 16
    norm_eps: float = 1e-5
    vocab_size: int = 16
    max_batch_size: int = 2
    rope_theta: Optional[float] = None
    vision_encoder: Optional[VisionEncoderArgs] = None


@dataclass
class SimpleInputMetadata:
    # rope absolute positions
    positions: torch.Tensor

    @staticmethod
    def from_seqlens(seqlens: List[int], device: torch.device) -> "SimpleInputMetadata":
        return SimpleInputMetadata(
            positions=torch.cat([torch.arange(0, seqlen) for seqlen in seqlens]).to(device=device, dtype=torch.long)
        )


def precompute_freqs_cis(dim: int, end: int, theta: float) -> torch.Tensor:
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)  # complex64


def apply_rotary_emb(xq: torch.Tensor, xk: torch.Tensor, freqs_cis: torch.Tensor):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(-2)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(-2)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        output = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return output.type_as(x) * self.weight


class TransformerBlock(nn.Module):
    def __init__(self, dim: int, hidden_dim: int, head_dim: int, norm_eps: float):
        super().__init__()
        self.attention_norm = RMSNorm(dim, eps=norm_eps)
        self.wq = nn.Linear(dim, head_dim, bias=False)
        self.wk = nn.Linear(dim, head_dim, bias=False)
        self.wo = nn.Linear(head_dim, dim, bias=False)
        self.ffn_norm = RMSNorm(dim, eps=norm_eps)
        self.feed_forward = nn.Sequential(nn.Linear(dim, hidden_dim), nn.SiLU(), nn.Linear(hidden_dim, dim))

    def forward(self, x: torch.Tensor, freqs_cis: torch.Tensor, cache=None) -> torch.Tensor:
        h = self.attention_norm(x)
        q, k = apply_rotary_emb(self.wq(h), self.wk(h), freqs_cis)
        r = x + self.wo(torch.sigmoid(q * k))
        return r + self.feed_forward(self.ffn_norm(r))


class VisionLanguageAdapter(nn.Module):
    def __init__(self, in_dim: int, out_dim: int, bias: bool = True):
        super().__init__()
        self.w_in = nn.Linear(in_dim, out_dim, bias=bias)
        self.gelu = nn.GELU()
        self.w_out = nn.Linear(out_dim, out_dim, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_out(self.gelu(self.w_in(x)))  # type: ignore[no-any-return]


class VisionTransformer(nn.Module):
    """Patchify every image of the list and concatenate the patch features."""

    def __init__(self, args: VisionEncoderArgs):
        super().__init__()
        self.patch_conv = nn.Conv2d(args.num_channels, args.hidden_size, args.patch_size, stride=args.patch_size)

    def forward(self, images: List[torch.Tensor]) -> torch.Tensor:
        return torch.cat([self.patch_conv(img[None]).flatten(2)[0].t() for img in images])


class Transformer(nn.Module):
    def __init__(self, args: TransformerArgs, pipeline_rank: int = 0, num_pipeline_ranks: int = 1, softmax_fp32: bool = True):
        super().__init__()
        self.args = args
        self.vocab_size = args.vocab_size
        self.n_layers = args.n_layers
        self._precomputed_freqs_cis: Optional[torch.Tensor] = None
        assert self.vocab_size > 0
        assert pipeline_rank < num_pipeline_ranks, (pipeline_rank, num_pipeline_ranks)
        self.pipeline_rank = pipeline_rank
        self.num_pipeline_ranks = num_pipeline_ranks
        self.softmax_fp32 = softmax_fp32

        # Modules specific to some ranks:
        self.tok_embeddings: Optional[nn.Embedding] = None
        self.norm: Optional[RMSNorm] = None
        self.output: Optional[nn.Linear] = None
        if pipeline_rank == 0:
            self.tok_embeddings = nn.Embedding(args.vocab_size, args.dim)

            self.vision_encoder: Optional[VisionTransformer] = None
            self.vision_language_adapter: Optional[VisionLanguageAdapter] = None

            if args.vision_encoder is not None:
                self.vision_encoder = VisionTransformer(args.vision_encoder)
                self.vision_language_adapter = VisionLanguageAdapter(
                    args.vision_encoder.hidden_size, args.dim, args.vision_encoder.adapter_bias
                )

                if args.vision_encoder.add_pre_mm_projector_layer_norm:
                    self.pre_mm_projector_norm = RMSNorm(args.vision_encoder.hidden_size, eps=1e-5)

        if pipeline_rank == num_pipeline_ranks - 1:
            self.norm = RMSNorm(args.dim, eps=args.norm_eps)
            self.output = nn.Linear(args.dim, args.vocab_size, bias=False)
        # Initialize all layers but slice off those not of this rank.
        layers = [
            TransformerBlock(dim=args.dim, hidden_dim=args.hidden_dim, head_dim=args.head_dim, norm_eps=args.norm_eps)
            for _ in range(args.n_layers)
        ]
        num_layers_per_rank = math.ceil(self.n_layers / self.num_pipeline_ranks)
        offset = self.pipeline_rank * num_layers_per_rank
        end = min(self.n_layers, offset + num_layers_per_rank)
        self.layers = nn.ModuleDict({str(i): layers[i] for i in range(offset, end)})
        self.n_local_layers = len(self.layers)

    @property
    def dtype(self) -> torch.dtype:
        return next(self.parameters()).dtype

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    @property
    def freqs_cis(self) -> torch.Tensor:
        # We cache freqs_cis but need to take care that it is on the right device
        # and has the right dtype (complex64).
        if self._precomputed_freqs_cis is None:
            # default to 10**6
            theta = self.args.rope_theta or 1000000.0
            self._precomputed_freqs_cis = precompute_freqs_cis(self.args.head_dim, 64, theta)

        if self._precomputed_freqs_cis.device != self.device:
            self._precomputed_freqs_cis = self._precomputed_freqs_cis.to(device=self.device)
        return self._precomputed_freqs_cis

    def embed_vision_language_features(self, input_ids: torch.Tensor, images: List[torch.Tensor]) -> torch.Tensor:
        assert self.tok_embeddings is not None
        assert self.vision_encoder is not None
        assert self.vision_language_adapter is not None
        assert self.args.vision_encoder is not None

        text_locations = input_ids != self.args.vision_encoder.image_token_id
        image_locations = input_ids == self.args.vision_encoder.image_token_id
        text_features = self.tok_embeddings(input_ids[text_locations])

        image_features = self.vision_encoder(images)

        if self.args.vision_encoder.add_pre_mm_projector_layer_norm:
            image_features = self.pre_mm_projector_norm(image_features)

        if self.args.vision_encoder.mm_projector_id == PATCH_MERGE:
            patch_size = self.args.vision_encoder.patch_size
            img_patch_dims = [(img.shape[1] // patch_size, img.shape[2] // patch_size) for img in images]
            image_features = self.patch_merger(image_features, image_sizes=img_patch_dims)

        image_features = self.vision_language_adapter(image_features)

        N_txt, D_txt = text_features.shape
        N_img, D_img = image_features.shape

        seq_len = input_ids.shape[0]

        assert D_txt == D_img, f"Text features dim {D_txt} should be equal to image features dim {D_img}"
        assert seq_len == N_txt + N_img, (
            f"seq_len {seq_len} should be equal to N_txt + N_img {(N_txt, N_img, image_locations.sum().item())}"
        )

        combined_features = torch.empty(
            (seq_len, D_txt),
            dtype=text_features.dtype,
            device=text_features.device,
        )
        combined_features[text_locations, :] = text_features
        combined_features[image_locations, :] = image_features
        return combined_features

    def forward_partial(self, input_ids: torch.Tensor, seqlens: List[int], cache=None,
                        images: Optional[List[torch.Tensor]] = None) -> torch.Tensor:
        assert len(seqlens) <= self.args.max_batch_size, (
            f"Max batch size is {self.args.max_batch_size}, got batch size of {len(seqlens)}"
        )
        (num_toks,) = input_ids.shape
        assert sum(seqlens) == num_toks, (sum(seqlens), num_toks)

        input_metadata = [SimpleInputMetadata.from_seqlens(seqlens, self.device) for _ in range(len(self.layers))]

        assert self.tok_embeddings is not None
        if self.vision_encoder is not None and images:
            h = self.embed_vision_language_features(input_ids, images)
        else:
            h = self.tok_embeddings(input_ids)

        # freqs_cis is always the same for every layer
        freqs_cis = self.freqs_cis[input_metadata[0].positions]

        for local_layer_id, layer in enumerate(self.layers.values()):
            h = layer(h, freqs_cis, None)

        # Last rank has a final normalization step.
        assert self.norm is not None
        return self.norm(h)  # type: ignore

    def forward(self, input_ids: torch.Tensor, seqlens: List[int], cache=None,
                images: Optional[List[torch.Tensor]] = None) -> torch.Tensor:
        h = self.forward_partial(input_ids, seqlens, cache=cache, images=images)
        assert self.output is not None
        outs = self.output(h)

        if self.softmax_fp32:
            return outs.float()
        else:
            return outs


def load_model():
    model = Transformer(TransformerArgs(vision_encoder=VisionEncoderArgs()))
    return torch.compile(model.eval())


def make():
    torch.manual_seed(0)
    model = Transformer(TransformerArgs(vision_encoder=VisionEncoderArgs())).eval()
    image = torch.randn(3, 8, 8)  # 2x2 patches -> 4 image tokens
    with_image = torch.tensor([1, 10, 10, 10, 10, 3, 4, 5, 6])
    text_only = torch.tensor([1, 3, 4, 2, 7, 8])
    too_few_image_tokens = torch.tensor([1, 10, 10, 3, 4])
    return model, [
        (with_image, [5, 4], None, [image]),
        (text_only, [6]),
        (too_few_image_tokens, [5], None, [image]),
    ]
