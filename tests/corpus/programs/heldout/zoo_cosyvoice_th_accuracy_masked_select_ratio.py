"""CosyVoice TransformerLM training forward: targets built per utterance with `.tolist()` and tensor-valued list repeats, unpad/pad of the LM input, a label-smoothing loss whose token count uses `.item()`, and `th_accuracy` comparing `masked_select` results.

Source: FunAudioLLM/CosyVoice@02f941d34885bdb08c4cbcbb4bb8e2cecad3d430:cosyvoice/llm/llm.py:24-132
Also: cosyvoice/utils/common.py@07352a50b30c8f8f07e5d2c15841710aa49b99df:25,79-99
(IGNORE_ID, th_accuracy); cosyvoice/transformer/label_smoothing_loss.py
@a875ea29c37b8615daff970aec03c3542aa78ab3:21-96 (LabelSmoothingLoss).
Kept: TransformerLM.__init__ (minus the unused speech-token size plumbing), encode,
pad_unpad_sequence and forward verbatim; th_accuracy and LabelSmoothingLoss verbatim.
Simplified: the conformer text encoder and the transformer `llm` are small stand-ins
with the same call signatures and (output, mask) returns; sizes shrunk (8-dim
embeddings, 10 text tokens, 12 speech tokens, speaker embedding of 6).
"""
from typing import Dict, Optional

import torch
from torch import nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence, unpad_sequence

IGNORE_ID = -1


def th_accuracy(pad_outputs: torch.Tensor, pad_targets: torch.Tensor,
                ignore_label: int) -> torch.Tensor:
    """Calculate accuracy.

    Args:
        pad_outputs (Tensor): Prediction tensors (B * Lmax, D).
        pad_targets (LongTensor): Target label tensors (B, Lmax).
        ignore_label (int): Ignore label id.

    Returns:
        torch.Tensor: Accuracy value (0.0 - 1.0).

    """
    pad_pred = pad_outputs.view(pad_targets.size(0), pad_targets.size(1),
                                pad_outputs.size(1)).argmax(2)
    mask = pad_targets != ignore_label
    numerator = torch.sum(
        pad_pred.masked_select(mask) == pad_targets.masked_select(mask))
    denominator = torch.sum(mask)
    return (numerator / denominator).detach()


class LabelSmoothingLoss(nn.Module):
    def __init__(self,
                 size: int,
                 padding_idx: int,
                 smoothing: float,
                 normalize_length: bool = False):
        """Construct an LabelSmoothingLoss object."""
        super(LabelSmoothingLoss, self).__init__()
        self.criterion = nn.KLDivLoss(reduction="none")
        self.padding_idx = padding_idx
        self.confidence = 1.0 - smoothing
        self.smoothing = smoothing
        self.size = size
        self.normalize_length = normalize_length

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        assert x.size(2) == self.size
        batch_size = x.size(0)
        x = x.view(-1, self.size)
        target = target.view(-1)
        # use zeros_like instead of torch.no_grad() for true_dist,
        # since no_grad() can not be exported by JIT
        true_dist = torch.zeros_like(x)
        true_dist.fill_(self.smoothing / (self.size - 1))
        ignore = target == self.padding_idx  # (B,)
        total = len(target) - ignore.sum().item()
        target = target.masked_fill(ignore, 0)  # avoid -1 index
        true_dist.scatter_(1, target.unsqueeze(1), self.confidence)
        kl = self.criterion(torch.log_softmax(x, dim=1), true_dist)
        denom = total if self.normalize_length else batch_size
        return kl.masked_fill(ignore.unsqueeze(1), 0).sum() / denom


class TextEncoderStandIn(nn.Module):
    """Stands in for the ConformerEncoder: (xs, xs_lens, ...) -> (out, mask (B, 1, T))."""

    def __init__(self, input_size: int, output_size: int):
        super().__init__()
        self._output_size = output_size
        self.proj = nn.Linear(input_size, output_size)

    def output_size(self) -> int:
        return self._output_size

    def forward(self, xs, xs_lens, decoding_chunk_size=0, num_decoding_left_chunks=-1):
        T = xs.size(1)
        masks = (torch.arange(T, device=xs.device).unsqueeze(0) < xs_lens.unsqueeze(1)).unsqueeze(1)
        return self.proj(xs), masks


class LLMStandIn(nn.Module):
    """Stands in for the TransformerEncoder llm: (xs, xs_lens) -> (out, mask)."""

    def __init__(self, size: int):
        super().__init__()
        self.proj = nn.Linear(size, size)

    def forward(self, xs, xs_lens):
        T = xs.size(1)
        masks = (torch.arange(T, device=xs.device).unsqueeze(0) < xs_lens.unsqueeze(1)).unsqueeze(1)
        return torch.tanh(self.proj(xs)), masks


class TransformerLM(torch.nn.Module):
    def __init__(
            self,
            text_encoder_input_size: int,
            llm_input_size: int,
            llm_output_size: int,
            text_token_size: int,
            speech_token_size: int,
            text_encoder: torch.nn.Module,
            llm: torch.nn.Module,
            length_normalized_loss: bool = True,
            lsm_weight: float = 0.0,
            spk_embed_dim: int = 192,
    ):
        super().__init__()
        self.llm_input_size = llm_input_size
        self.speech_token_size = speech_token_size
        # 1. build text token inputs related modules
        self.text_embedding = torch.nn.Embedding(text_token_size, text_encoder_input_size)
        self.text_encoder = text_encoder
        self.text_encoder_affine_layer = nn.Linear(
            self.text_encoder.output_size(),
            llm_input_size
        )

        # 2. build speech token language model related modules
        self.sos_eos = 0
        self.task_id = 1
        self.llm_embedding = torch.nn.Embedding(2, llm_input_size)
        self.llm = llm
        self.llm_decoder = nn.Linear(llm_output_size, speech_token_size + 1)
        self.criterion_ce = LabelSmoothingLoss(
            size=speech_token_size + 1,
            padding_idx=IGNORE_ID,
            smoothing=lsm_weight,
            normalize_length=length_normalized_loss,
        )

        # 3. [Optional] build speech token related modules
        self.speech_embedding = torch.nn.Embedding(speech_token_size, llm_input_size)
        self.spk_embed_affine_layer = torch.nn.Linear(spk_embed_dim, llm_input_size)

    def encode(
            self,
            text: torch.Tensor,
            text_lengths: torch.Tensor,
    ):
        encoder_out, encoder_mask = self.text_encoder(text, text_lengths, decoding_chunk_size=1, num_decoding_left_chunks=-1)
        encoder_out_lens = encoder_mask.squeeze(1).sum(1)
        encoder_out = self.text_encoder_affine_layer(encoder_out)
        return encoder_out, encoder_out_lens

    def pad_unpad_sequence(self, sos_eos_emb, embedding, text_token, text_token_len, task_id_emb, speech_token, speech_token_len):
        text_token = unpad_sequence(text_token, text_token_len.cpu(), batch_first=True)
        speech_token = unpad_sequence(speech_token, speech_token_len.cpu(), batch_first=True)
        lm_input = [torch.concat([sos_eos_emb.squeeze(dim=0), embedding[i], text_token[i], task_id_emb.squeeze(dim=0), speech_token[i]], dim=0) for i in range(len(text_token))]
        lm_input_len = torch.tensor([i.size(0) for i in lm_input], dtype=torch.int32)
        lm_input = pad_sequence(lm_input, batch_first=True, padding_value=IGNORE_ID)
        return lm_input, lm_input_len

    def forward(
            self,
            batch: dict,
            device: torch.device,
    ) -> Dict[str, Optional[torch.Tensor]]:
        """
        Args:
            text: (B, L, D)
            text_lengths: (B,)
            audio: (B, T, N) or (B, T)
            audio_lengths: (B,)
        """
        text_token = batch['text_token'].to(device)
        text_token_len = batch['text_token_len'].to(device)
        speech_token = batch['speech_token'].to(device)
        speech_token_len = batch['speech_token_len'].to(device)
        embedding = batch['embedding'].to(device)

        # 1. prepare llm_target
        lm_target = [torch.tensor([IGNORE_ID] * (2 + text_token_len[i]) + speech_token[i, :speech_token_len[i]].tolist() + [self.speech_token_size]) for i in range(text_token.size(0))]
        lm_target = pad_sequence(lm_target, batch_first=True, padding_value=IGNORE_ID).to(device)

        # 1. encode text_token
        text_token = self.text_embedding(text_token)
        text_token, text_token_len = self.encode(text_token, text_token_len)

        # 2. embedding projection
        embedding = F.normalize(embedding, dim=1)
        embedding = self.spk_embed_affine_layer(embedding)
        embedding = embedding.unsqueeze(1)

        # 3. eos and task_id
        sos_eos_emb = self.llm_embedding.weight[self.sos_eos].reshape(1, 1, -1)
        task_id_emb = self.llm_embedding.weight[self.task_id].reshape(1, 1, -1)

        # 4. encode speech_token
        speech_token = self.speech_embedding(speech_token)

        # 5. unpad and pad
        lm_input, lm_input_len = self.pad_unpad_sequence(sos_eos_emb, embedding, text_token, text_token_len, task_id_emb, speech_token, speech_token_len)

        # 6. run lm forward
        lm_output, lm_output_mask = self.llm(lm_input, lm_input_len.to(device))
        logits = self.llm_decoder(lm_output)
        loss = self.criterion_ce(logits, lm_target)
        acc = th_accuracy(logits.view(-1, self.speech_token_size + 1), lm_target, ignore_label=IGNORE_ID)
        return {'loss': loss, 'acc': acc}


def build_llm() -> TransformerLM:
    # conf/cosyvoice.yaml (shrunk): llm: !new:cosyvoice.llm.llm.TransformerLM
    return TransformerLM(
        text_encoder_input_size=8, llm_input_size=8, llm_output_size=8,
        text_token_size=10, speech_token_size=12,
        text_encoder=TextEncoderStandIn(8, 8), llm=LLMStandIn(8),
        length_normalized_loss=True, lsm_weight=0.0, spk_embed_dim=6,
    )


def train_one_epoch():
    # cosyvoice/utils/executor.py: `info_dict = batch_forward(model, batch_dict, scaler, info_dict)`
    model = torch.compile(build_llm())
    return model


def make():
    torch.manual_seed(0)
    model = build_llm()
    batch = {
        'text_token': torch.tensor([[1, 4, 2, 7], [3, 5, 0, 0]]),
        'text_token_len': torch.tensor([4, 2], dtype=torch.int32),
        'speech_token': torch.tensor([[2, 9, 11, 4, 6], [1, 3, 8, 0, 0]]),
        'speech_token_len': torch.tensor([5, 3], dtype=torch.int32),
        'embedding': torch.randn(2, 6),
    }
    return model, [(batch, torch.device('cpu'))]
