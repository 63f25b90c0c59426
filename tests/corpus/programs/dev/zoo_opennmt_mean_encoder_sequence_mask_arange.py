"""OpenNMT-py's MeanEncoder feeding GlobalAttention: `sequence_mask(lengths, max_len=None)` falls back to `max_len or lengths.max()` and builds `torch.arange(0, max_len)` from a 0-d tensor; the attention's own call passes `max_len=align.size(-1)` instead.

Source: OpenNMT/OpenNMT-py@97111d97551c24857076a4102eabdb468b35cff4:onmt/encoders/mean_encoder.py:1-45
Also: onmt/utils/misc.py:53-58 (sequence_mask), onmt/modules/global_attention.py
(GlobalAttention.__init__/score/forward with dot, general and mlp scores),
onmt/encoders/encoder.py (EncoderBase's (enc_out, enc_final_hs, src_len) contract).
Kept: MeanEncoder.forward with both src_len branches and the
(mean, mean) final state, sequence_mask verbatim, GlobalAttention's
one_step handling, coverage plumbing, the double-negated mask fill and the
tanh for general/dot.
Simplified: onmt.modules.Embeddings is an nn.Embedding with an
embedding_size attribute; sparsemax is left out (attn_func "softmax"); the
decoder around the attention is reduced to one query step from the mean
state, the way the RNN decoder's first input-feed step sees it; vocab 10,
dim 6.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def sequence_mask(lengths, max_len=None):
    """
    Creates a boolean mask from sequence lengths.
    """
    max_len = max_len or lengths.max()
    return torch.arange(0, max_len, device=lengths.device) >= lengths.unsqueeze(1)


class Embeddings(nn.Embedding):
    def __init__(self, word_vec_size, word_vocab_size, word_padding_idx=1):
        super().__init__(word_vocab_size, word_vec_size, padding_idx=word_padding_idx)
        self.embedding_size = word_vec_size


class EncoderBase(nn.Module):
    def forward(self, src, src_len=None):
        raise NotImplementedError


class MeanEncoder(EncoderBase):
    def __init__(self, num_layers, embeddings):
        super(MeanEncoder, self).__init__()
        self.num_layers = num_layers
        self.embeddings = embeddings

    def forward(self, src, src_len=None):
        """See :func:`EncoderBase.forward()`"""
        emb = self.embeddings(src)
        batch, _, emb_dim = emb.size()

        if src_len is not None:
            # we avoid padding while mean pooling
            mask = (~sequence_mask(src_len)).float()
            mask = mask / src_len.unsqueeze(1).float()
            mean = torch.bmm(mask.unsqueeze(1), emb).squeeze(1)
        else:
            mean = emb.mean(1)

        mean = mean.expand(self.num_layers, batch, emb_dim)
        enc_out = emb
        enc_final_hs = (mean, mean)
        return enc_out, enc_final_hs, src_len


class GlobalAttention(nn.Module):
    def __init__(self, dim, coverage=False, attn_type="dot", attn_func="softmax"):
        super(GlobalAttention, self).__init__()

        self.dim = dim
        assert attn_type in [
            "dot",
            "general",
            "mlp",
        ], "Please select a valid attention type (got {:s}).".format(attn_type)
        self.attn_type = attn_type
        assert attn_func in [
            "softmax",
        ], "Please select a valid attention function."
        self.attn_func = attn_func

        if self.attn_type == "general":
            self.linear_in = nn.Linear(dim, dim, bias=False)
        elif self.attn_type == "mlp":
            self.linear_context = nn.Linear(dim, dim, bias=False)
            self.linear_query = nn.Linear(dim, dim, bias=True)
            self.v = nn.Linear(dim, 1, bias=False)
        # mlp wants it with bias
        out_bias = self.attn_type == "mlp"
        self.linear_out = nn.Linear(dim * 2, dim, bias=out_bias)

        if coverage:
            self.linear_cover = nn.Linear(1, dim, bias=False)

    def score(self, h_t, h_s):
        # Check input sizes
        src_batch, src_len, src_dim = h_s.size()
        tgt_batch, tgt_len, tgt_dim = h_t.size()

        if self.attn_type in ["general", "dot"]:
            if self.attn_type == "general":
                h_t = self.linear_in(h_t)
            h_s_ = h_s.transpose(1, 2)
            # (batch, t_len, d) x (batch, d, s_len) --> (batch, t_len, s_len)
            return torch.bmm(h_t, h_s_)
        else:
            dim = self.dim
            wq = self.linear_query(h_t)
            wq = wq.view(tgt_batch, tgt_len, 1, dim)
            wq = wq.expand(tgt_batch, tgt_len, src_len, dim)

            uh = self.linear_context(h_s.contiguous())
            uh = uh.view(src_batch, 1, src_len, dim)
            uh = uh.expand(src_batch, tgt_len, src_len, dim)

            # (batch, t_len, s_len, d)
            wquh = torch.tanh(wq + uh)

            return self.v(wquh).view(tgt_batch, tgt_len, src_len)

    def forward(self, src, enc_out, src_len=None, coverage=None):
        # one step input
        if src.dim() == 2:
            one_step = True
            src = src.unsqueeze(1)
        else:
            one_step = False

        batch, src_l, dim = enc_out.size()
        batch_, target_l, dim_ = src.size()
        if coverage is not None:
            batch_, src_l_ = coverage.size()

        if coverage is not None:
            cover = coverage.view(-1).unsqueeze(1)
            enc_out += self.linear_cover(cover).view_as(enc_out)
            enc_out = torch.tanh(enc_out)

        # compute attention scores, as in Luong et al.
        align = self.score(src, enc_out)

        if src_len is not None:
            mask = ~sequence_mask(src_len, max_len=align.size(-1))
            mask = mask.unsqueeze(1)  # Make it broadcastable.
            align.masked_fill_(~mask, -float("inf"))

        # Softmax or sparsemax to normalize attention weights
        align_vectors = F.softmax(align.view(batch * target_l, src_l), -1)
        align_vectors = align_vectors.view(batch, target_l, src_l)

        # each context vector c_t is the weighted average
        # over all the source hidden states
        c = torch.bmm(align_vectors, enc_out)

        # concatenate
        concat_c = torch.cat([c, src], 2).view(batch * target_l, dim * 2)
        attn_h = self.linear_out(concat_c).view(batch, target_l, dim)
        if self.attn_type in ["general", "dot"]:
            attn_h = torch.tanh(attn_h)

        if one_step:
            attn_h = attn_h.squeeze(1)
            align_vectors = align_vectors.squeeze(1)

        return attn_h, align_vectors


class MeanEncoderAttentionStep(nn.Module):
    def __init__(self, vocab=10, dim=6, attn_type="general"):
        super().__init__()
        self.encoder = MeanEncoder(num_layers=1, embeddings=Embeddings(dim, vocab))
        self.attn = GlobalAttention(dim, attn_type=attn_type)

    def forward(self, src, src_len=None):
        enc_out, enc_final_hs, src_len = self.encoder(src, src_len)
        query = enc_final_hs[0][-1]
        attn_h, align = self.attn(query, enc_out, src_len=src_len)
        return attn_h, align


model = torch.compile(MeanEncoderAttentionStep())


def make():
    torch.manual_seed(0)
    src = torch.tensor([[2, 3, 4, 5], [6, 7, 1, 1]])
    src_len = torch.tensor([4, 2])
    return MeanEncoderAttentionStep(), [(src, src_len), (src,)]
