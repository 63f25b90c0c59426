"""Paraformer glancing sampler: a no-grad first decoder pass, then per utterance
`if target_num > 0:` on a tensor and `torch.randperm(seq_lens[li])[:target_num]` scatter_ into the
input mask, mixing target embeddings into the acoustic embeddings; make_pad_mask calls
`lengths.tolist()` and is given `maxlen=ys_pad_lens.max()`.

Source: modelscope/FunASR@78cc132a5157ef40b205481da46af0622ce0cf3f:funasr/models/paraformer/model.py:408-455,
funasr/models/transformer/utils/nets_utils.py:104-218
Kept: Paraformer.sampler verbatim (share_embedding / sampling_ratio / ignore_id attribute plumbing,
the `with torch.no_grad()` block, the per-row loop) and make_pad_mask verbatim (docstring shortened).
Simplified: the SANM decoder is replaced by a small decoder with the same call signature and
`embed` / `output_layer` attributes (Embedding + one Linear mixing in the mean encoder frame);
Paraformer.__init__ keeps only the attributes the sampler reads; vocabulary 12, width 8.
"""
import torch
from torch import nn


def make_pad_mask(lengths, xs=None, length_dim=-1, maxlen=None):
    """Make mask tensor containing indices of padded part."""
    if length_dim == 0:
        raise ValueError("length_dim cannot be 0: {}".format(length_dim))

    if not isinstance(lengths, list):
        lengths = lengths.tolist()
    bs = int(len(lengths))
    if maxlen is None:
        if xs is None:
            maxlen = int(max(lengths))
        else:
            maxlen = xs.size(length_dim)
    else:
        assert xs is None
        assert maxlen >= int(max(lengths))

    seq_range = torch.arange(0, maxlen, dtype=torch.int64)
    seq_range_expand = seq_range.unsqueeze(0).expand(bs, maxlen)
    seq_length_expand = seq_range_expand.new(lengths).unsqueeze(-1)
    mask = seq_range_expand >= seq_length_expand

    if xs is not None:
        assert xs.size(0) == bs, (xs.size(0), bs)

        if length_dim < 0:
            length_dim = xs.dim() + length_dim
        # ind = (:, None, ..., None, :, , None, ..., None)
        ind = tuple(slice(None) if i in (0, length_dim) else None for i in range(xs.dim()))
        mask = mask[ind].expand_as(xs).to(xs.device)
    return mask


class TinyDecoder(nn.Module):
    def __init__(self, vocab_size, encoder_output_size):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, encoder_output_size)
        self.mix = nn.Linear(2 * encoder_output_size, encoder_output_size)
        self.output_layer = nn.Linear(encoder_output_size, vocab_size)

    def forward(self, hs_pad, hlens, ys_in_pad, ys_in_lens):
        memory = hs_pad.mean(1, keepdim=True).expand(-1, ys_in_pad.size(1), -1)
        x = torch.relu(self.mix(torch.cat([ys_in_pad, memory], dim=-1)))
        x = self.output_layer(x)
        return x, ys_in_lens


class Paraformer(nn.Module):
    def __init__(
        self,
        vocab_size: int = -1,
        encoder_output_size: int = 8,
        ignore_id: int = -1,
        sampling_ratio: float = 0.2,
        share_embedding: bool = False,
    ):
        super().__init__()
        self.vocab_size = vocab_size
        self.ignore_id = ignore_id
        self.decoder = TinyDecoder(vocab_size, encoder_output_size)
        self.sampling_ratio = sampling_ratio
        self.share_embedding = share_embedding

    def sampler(self, encoder_out, encoder_out_lens, ys_pad, ys_pad_lens, pre_acoustic_embeds):

        """Sampler.

            Args:
                encoder_out: Encoder output tensor.
                encoder_out_lens: Encoder output lengths.
                ys_pad: TODO.
                ys_pad_lens: Lengths of ys_pad.
                pre_acoustic_embeds: TODO.
            """
        tgt_mask = (~make_pad_mask(ys_pad_lens, maxlen=ys_pad_lens.max())[:, :, None]).to(
            ys_pad.device
        )
        ys_pad_masked = ys_pad * tgt_mask[:, :, 0]
        if self.share_embedding:
            ys_pad_embed = self.decoder.output_layer.weight[ys_pad_masked]
        else:
            ys_pad_embed = self.decoder.embed(ys_pad_masked)
        with torch.no_grad():
            decoder_outs = self.decoder(
                encoder_out, encoder_out_lens, pre_acoustic_embeds, ys_pad_lens
            )
            decoder_out, _ = decoder_outs[0], decoder_outs[1]
            pred_tokens = decoder_out.argmax(-1)
            nonpad_positions = ys_pad.ne(self.ignore_id)
            seq_lens = (nonpad_positions).sum(1)
            same_num = ((pred_tokens == ys_pad) & nonpad_positions).sum(1)
            input_mask = torch.ones_like(nonpad_positions)
            bsz, seq_len = ys_pad.size()
            for li in range(bsz):
                target_num = (
                    ((seq_lens[li] - same_num[li].sum()).float()) * self.sampling_ratio
                ).long()
                if target_num > 0:
                    input_mask[li].scatter_(
                        dim=0,
                        index=torch.randperm(seq_lens[li])[:target_num].to(input_mask.device),
                        value=0,
                    )
            input_mask = input_mask.eq(1)
            input_mask = input_mask.masked_fill(~nonpad_positions, False)
            input_mask_expand_dim = input_mask.unsqueeze(2).to(pre_acoustic_embeds.device)

        sematic_embeds = pre_acoustic_embeds.masked_fill(
            ~input_mask_expand_dim, 0
        ) + ys_pad_embed.masked_fill(input_mask_expand_dim, 0)
        return sematic_embeds * tgt_mask, decoder_out * tgt_mask


model = Paraformer(vocab_size=12)
model.sampler = torch.compile(model.sampler)


def make():
    torch.manual_seed(0)
    m = Paraformer(vocab_size=12)
    encoder_out = torch.randn(2, 10, 8)
    encoder_out_lens = torch.tensor([10, 7])
    ys_pad = torch.tensor([[3, 5, 7, 2, 9, 4], [4, 4, 9, 1, -1, -1]])
    ys_pad_lens = torch.tensor([6, 4])
    pre_acoustic_embeds = torch.randn(2, 6, 8)
    # row 0: target_num = int(6 * 0.2) = 1 > 0; row 1: int(4 * 0.2) = 0; second set: one-token targets
    return m.sampler, [
        (encoder_out, encoder_out_lens, ys_pad, ys_pad_lens, pre_acoustic_embeds),
        (encoder_out, encoder_out_lens, ys_pad[:, :1], torch.tensor([1, 1]), pre_acoustic_embeds[:, :1]),
    ]
