"""BLIP VQA answer ranking: candidate answers are ranked by their first-token probability, the top-k are re-scored by the decoder's per-sample loss, question states are repeated by `tile` (a numpy-built `torch.LongTensor` order index), and the answer is read with `topk_ids[max_topk_ids>=0, max_topk_ids]`.

Source: salesforce/BLIP@97a975f64f8b0d14204b79ebaaec51342c6d1ab9:models/blip_vqa.py:100-186
Also: models/med.py BertLMHeadModel.forward (reduction='none' with
label_smoothing=0.1, loss summed per sequence).
Kept: rank_answer and tile verbatim; the decoder call signature (encoder_hidden_states,
encoder_attention_mask, labels, return_dict, reduction) and its shifted
cross-entropy loss with reduction 'none'.
Simplified: the BERT decoder is an embedding, one causal self-attention and one
cross-attention block and an LM head; the tokenizer is reduced to pad_token_id;
the question states are an argument (the ViT/question encoder are not run).
"""
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn import CrossEntropyLoss


class Tokenizer:
    pad_token_id = 0
    bos_token_id = 1


class LMOutput:
    def __init__(self, logits, loss=None):
        self.logits = logits
        self.loss = loss


class BertLMHeadModel(nn.Module):
    def __init__(self, vocab_size=20, hidden=16):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, hidden)
        self.self_attn = nn.MultiheadAttention(hidden, 2, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(hidden, 2, batch_first=True)
        self.cls = nn.Linear(hidden, vocab_size)

    def forward(self, input_ids, attention_mask=None, encoder_hidden_states=None, encoder_attention_mask=None,
                labels=None, return_dict=True, reduction='mean'):
        L = input_ids.shape[1]
        h = self.embeddings(input_ids)
        causal = torch.triu(torch.ones(L, L, dtype=torch.bool), 1)
        h = h + self.self_attn(h, h, h, attn_mask=causal)[0]
        h = h + self.cross_attn(h, encoder_hidden_states, encoder_hidden_states,
                                key_padding_mask=encoder_attention_mask == 0)[0]
        prediction_scores = self.cls(h)

        lm_loss = None
        if labels is not None:
            # we are doing next-token prediction; shift prediction scores and input ids by one
            shifted_prediction_scores = prediction_scores[:, :-1, :].contiguous()
            labels = labels[:, 1:].contiguous()
            loss_fct = CrossEntropyLoss(reduction=reduction, label_smoothing=0.1)
            lm_loss = loss_fct(shifted_prediction_scores.view(-1, self.cls.out_features), labels.view(-1))
            if reduction == 'none':
                lm_loss = lm_loss.view(prediction_scores.size(0), -1).sum(1)
        return LMOutput(prediction_scores, lm_loss)


class BLIP_VQA(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokenizer = Tokenizer()
        self.text_decoder = BertLMHeadModel()

    def rank_answer(self, question_states, question_atts, answer_ids, answer_atts, k):

        num_ques = question_states.size(0)
        start_ids = answer_ids[0, 0].repeat(num_ques, 1)  # bos token

        start_output = self.text_decoder(start_ids,
                                         encoder_hidden_states=question_states,
                                         encoder_attention_mask=question_atts,
                                         return_dict=True,
                                         reduction='none')
        logits = start_output.logits[:, 0, :]  # first token's logit

        # topk_probs: top-k probability
        # topk_ids: [num_question, k]
        answer_first_token = answer_ids[:, 1]
        prob_first_token = F.softmax(logits, dim=1).index_select(dim=1, index=answer_first_token)
        topk_probs, topk_ids = prob_first_token.topk(k, dim=1)

        # answer input: [num_question*k, answer_len]
        input_ids = []
        input_atts = []
        for b, topk_id in enumerate(topk_ids):
            input_ids.append(answer_ids.index_select(dim=0, index=topk_id))
            input_atts.append(answer_atts.index_select(dim=0, index=topk_id))
        input_ids = torch.cat(input_ids, dim=0)
        input_atts = torch.cat(input_atts, dim=0)

        targets_ids = input_ids.masked_fill(input_ids == self.tokenizer.pad_token_id, -100)

        # repeat encoder's output for top-k answers
        question_states = tile(question_states, 0, k)
        question_atts = tile(question_atts, 0, k)

        output = self.text_decoder(input_ids,
                                   attention_mask=input_atts,
                                   encoder_hidden_states=question_states,
                                   encoder_attention_mask=question_atts,
                                   labels=targets_ids,
                                   return_dict=True,
                                   reduction='none')

        log_probs_sum = -output.loss
        log_probs_sum = log_probs_sum.view(num_ques, k)

        max_topk_ids = log_probs_sum.argmax(dim=1)
        max_ids = topk_ids[max_topk_ids >= 0, max_topk_ids]

        return max_ids


def tile(x, dim, n_tile):
    init_dim = x.size(dim)
    repeat_idx = [1] * x.dim()
    repeat_idx[dim] = n_tile
    x = x.repeat(*(repeat_idx))
    order_index = torch.LongTensor(np.concatenate([init_dim * np.arange(n_tile) + i for i in range(init_dim)]))
    return torch.index_select(x, dim, order_index.to(x.device))


vqa = BLIP_VQA().eval()
rank = torch.compile(vqa.rank_answer)


def make():
    torch.manual_seed(0)
    model = BLIP_VQA().eval()
    question_states = torch.randn(2, 6, 16)
    question_atts = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])
    answer_ids = torch.tensor([[1, 5, 7, 2], [1, 6, 2, 0], [1, 9, 3, 2], [1, 4, 2, 0], [1, 11, 2, 0]])
    answer_atts = (answer_ids != 0).long()
    return model.rank_answer, [(question_states, question_atts, answer_ids, answer_atts, 3),
                               (question_states[:1], question_atts[:1], answer_ids, answer_atts, 2)]
