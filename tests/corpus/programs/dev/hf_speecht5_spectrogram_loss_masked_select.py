"""SpeechT5 text-to-speech loss: masked_select of padded frames, stop labels, and a guided attention mask built per example from tensor lengths.

Source: huggingface/transformers@v5.23.0:src/transformers/models/speecht5/modeling_speecht5.py:1727-1840
Kept: SpeechT5GuidedMultiheadAttentionLoss (forward, `_make_guided_attention_masks`
looping over `zip(input_lengths, output_lengths)` and slicing with them,
`_make_guided_attention_mask` building a meshgrid from a tensor length) and
SpeechT5SpectrogramLoss.forward (masked_select of labels / outputs / logits,
the stop labels, the guided loss over the first heads of each cross
attention with the reduction-factor stride).
Simplified: the model is replaced by random outputs; compiled inside a
training helper as users compile a criterion.
"""
import torch
from torch import nn
from torch.nn import BCEWithLogitsLoss, L1Loss


class SpeechT5Config:
    use_guided_attention_loss = True
    guided_attention_loss_num_heads = 2
    guided_attention_loss_sigma = 0.4
    guided_attention_loss_scale = 10.0
    reduction_factor = 2


class SpeechT5GuidedMultiheadAttentionLoss(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.sigma = config.guided_attention_loss_sigma
        self.scale = config.guided_attention_loss_scale

    def forward(self, attentions, input_masks, output_masks):
        guided_attn_masks = self._make_guided_attention_masks(input_masks, output_masks, attentions.device)
        masks = output_masks.unsqueeze(-1) & input_masks.unsqueeze(-2)
        masks = masks.to(attentions.device).unsqueeze(1)

        losses = guided_attn_masks * attentions
        loss = torch.mean(losses.masked_select(masks))
        return self.scale * loss

    def _make_guided_attention_masks(self, input_masks, output_masks, device):
        input_lengths = input_masks.sum(-1)
        output_lengths = output_masks.sum(-1)

        guided_attn_masks = torch.zeros((len(input_masks), output_masks.shape[1], input_masks.shape[1]), device=device)

        for idx, (ilen, olen) in enumerate(zip(input_lengths, output_lengths)):
            guided_attn_masks[idx, :olen, :ilen] = self._make_guided_attention_mask(ilen, olen, self.sigma, device)

        return guided_attn_masks.unsqueeze(1)

    @staticmethod
    def _make_guided_attention_mask(input_length, output_length, sigma, device):
        grid_y, grid_x = torch.meshgrid(
            torch.arange(input_length, device=device),
            torch.arange(output_length, device=device),
            indexing="xy",
        )
        grid_x = grid_x.float() / output_length
        grid_y = grid_y.float() / input_length
        return 1.0 - torch.exp(-((grid_y - grid_x) ** 2) / (2 * (sigma**2)))


class SpeechT5SpectrogramLoss(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.use_guided_attention_loss = config.use_guided_attention_loss
        self.guided_attention_loss_num_heads = config.guided_attention_loss_num_heads
        self.reduction_factor = config.reduction_factor

        self.l1_criterion = L1Loss()
        self.bce_criterion = BCEWithLogitsLoss(pos_weight=torch.tensor(5.0))

        if self.use_guided_attention_loss:
            self.attn_criterion = SpeechT5GuidedMultiheadAttentionLoss(config)

    def forward(self, attention_mask, outputs_before_postnet, outputs_after_postnet, logits, labels, cross_attentions=None):
        padding_mask = labels != -100.0

        # mask out the padded portions
        labels = labels.masked_select(padding_mask)
        outputs_before_postnet = outputs_before_postnet.masked_select(padding_mask)
        outputs_after_postnet = outputs_after_postnet.masked_select(padding_mask)

        # spectrogram loss
        l1_loss = self.l1_criterion(outputs_after_postnet, labels) + self.l1_criterion(outputs_before_postnet, labels)

        # construct stop labels from the padding mask
        masks = padding_mask[:, :, 0]
        stop_labels = torch.cat([~masks * 1.0, torch.ones(masks.size(0), 1).to(masks.device)], dim=1)
        stop_labels = stop_labels[:, 1:].masked_select(masks)
        logits = logits.masked_select(masks)

        # stop token loss
        bce_loss = self.bce_criterion(logits, stop_labels)

        # combined loss
        loss = l1_loss + bce_loss

        # guided attention loss
        if self.use_guided_attention_loss:
            attn = torch.cat([x[:, : self.guided_attention_loss_num_heads] for x in cross_attentions], dim=1)
            input_masks = attention_mask == 1
            output_masks = padding_mask[:, :, 0]
            if self.reduction_factor > 1:
                output_masks = output_masks[:, self.reduction_factor - 1 :: self.reduction_factor]
            attn_loss = self.attn_criterion(attn, input_masks, output_masks)
            loss += attn_loss

        return loss


def build_criterion(config):
    return torch.compile(SpeechT5SpectrogramLoss(config))


def make():
    torch.manual_seed(0)
    bsz, frames, mels, text_len = 2, 8, 3, 5
    attention_mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    labels = torch.randn(bsz, frames, mels)
    labels[1, 6:] = -100.0  # second utterance is two frames shorter
    before = torch.randn(bsz, frames, mels)
    after = torch.randn(bsz, frames, mels)
    logits = torch.randn(bsz, frames)
    cross_attentions = tuple(torch.rand(bsz, 4, frames // 2, text_len) for _ in range(2))
    return SpeechT5SpectrogramLoss(SpeechT5Config()), [
        (attention_mask, before, after, logits, labels, cross_attentions),
    ]
