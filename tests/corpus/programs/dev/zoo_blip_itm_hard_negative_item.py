"""BLIP retrieval training step: image-text contrastive loss against momentum queues, then hard negatives for image-text matching picked with `torch.multinomial(weights_t2i[b], 1).item()` per sample, and the queue pointer read back with `int(self.ptr_queue)`.

Source: salesforce/BLIP@97a975f64f8b0d14204b79ebaaec51342c6d1ab9:models/blip_retrieval.py:10-250
Kept: BLIP_Retrieval.forward verbatim from the ITC block through the ITM loss
(momentum encoders, idx queue targets, the same-rank hard-negative branch with its
two `.item()` loops), copy_params/_momentum_update/_dequeue_and_enqueue with their
@torch.no_grad(), the text_encoder(..., mode='text') / encoder_hidden_states calls.
Simplified: the ViT is a linear patch embedding plus a CLS token; BertModel is an
embedding plus one self-attention and one optional cross-attention block returning
an object with last_hidden_state; the tokenizer is gone (input_ids and
attention_mask are arguments, enc_token_id is a constant); concat_all_gather
returns its input when torch.distributed is not initialized (single process);
negative_all_rank is False.
"""
import torch
from torch import nn
import torch.nn.functional as F


class BertOutput:
    def __init__(self, last_hidden_state):
        self.last_hidden_state = last_hidden_state


class BertModel(nn.Module):
    def __init__(self, vocab_size=30, hidden_size=16, encoder_width=16):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, hidden_size)
        self.self_attn = nn.MultiheadAttention(hidden_size, 2, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(hidden_size, 2, kdim=encoder_width, vdim=encoder_width,
                                                batch_first=True)
        self.norm = nn.LayerNorm(hidden_size)

    def forward(self, input_ids, attention_mask=None, encoder_hidden_states=None, encoder_attention_mask=None,
                return_dict=True, mode='multimodal'):
        h = self.embeddings(input_ids)
        key_padding_mask = attention_mask == 0 if attention_mask is not None else None
        h = h + self.self_attn(h, h, h, key_padding_mask=key_padding_mask)[0]
        if mode == 'multimodal':
            h = h + self.cross_attn(h, encoder_hidden_states, encoder_hidden_states)[0]
        return BertOutput(self.norm(h))


class VisionTransformer(nn.Module):
    def __init__(self, patch=4, width=16):
        super().__init__()
        self.patch = patch
        self.proj = nn.Linear(3 * patch * patch, width)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, width))

    def forward(self, x):
        p = self.patch
        x = x.unfold(2, p, p).unfold(3, p, p).permute(0, 2, 3, 1, 4, 5).flatten(3).flatten(1, 2)
        x = self.proj(x)
        return torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)


class BLIP_Retrieval(nn.Module):
    def __init__(self,
                 embed_dim=8,
                 queue_size=8,
                 momentum=0.995,
                 negative_all_rank=False,
                 ):
        super().__init__()

        self.visual_encoder, vision_width = VisionTransformer(), 16
        self.enc_token_id = 2
        self.text_encoder = BertModel(encoder_width=vision_width)

        text_width = 16

        self.vision_proj = nn.Linear(vision_width, embed_dim)
        self.text_proj = nn.Linear(text_width, embed_dim)

        self.itm_head = nn.Linear(text_width, 2)

        # create momentum encoders
        self.visual_encoder_m = VisionTransformer()
        self.vision_proj_m = nn.Linear(vision_width, embed_dim)
        self.text_encoder_m = BertModel(encoder_width=vision_width)
        self.text_proj_m = nn.Linear(text_width, embed_dim)

        self.model_pairs = [[self.visual_encoder, self.visual_encoder_m],
                            [self.vision_proj, self.vision_proj_m],
                            [self.text_encoder, self.text_encoder_m],
                            [self.text_proj, self.text_proj_m],
                            ]
        self.copy_params()

        # create the queue
        self.register_buffer("image_queue", torch.randn(embed_dim, queue_size))
        self.register_buffer("text_queue", torch.randn(embed_dim, queue_size))
        self.register_buffer("idx_queue", torch.full((1, queue_size), -100))
        self.register_buffer("ptr_queue", torch.zeros(1, dtype=torch.long))

        self.image_queue = nn.functional.normalize(self.image_queue, dim=0)
        self.text_queue = nn.functional.normalize(self.text_queue, dim=0)

        self.queue_size = queue_size
        self.momentum = momentum
        self.temp = nn.Parameter(0.07*torch.ones([]))

        self.negative_all_rank = negative_all_rank

    def forward(self, image, input_ids, attention_mask, alpha, idx):
        with torch.no_grad():
            self.temp.clamp_(0.001, 0.5)

        image_embeds = self.visual_encoder(image)
        image_atts = torch.ones(image_embeds.size()[:-1], dtype=torch.long).to(image.device)
        image_feat = F.normalize(self.vision_proj(image_embeds[:, 0, :]), dim=-1)

        text_output = self.text_encoder(input_ids, attention_mask=attention_mask,
                                        return_dict=True, mode='text')
        text_feat = F.normalize(self.text_proj(text_output.last_hidden_state[:, 0, :]), dim=-1)

        ###============== Image-text Contrastive Learning ===================###
        idx = idx.view(-1, 1)
        idx_all = torch.cat([idx.t(), self.idx_queue.clone().detach()], dim=1)
        pos_idx = torch.eq(idx, idx_all).float()
        sim_targets = pos_idx / pos_idx.sum(1, keepdim=True)

        # get momentum features
        with torch.no_grad():
            self._momentum_update()
            image_embeds_m = self.visual_encoder_m(image)
            image_feat_m = F.normalize(self.vision_proj_m(image_embeds_m[:, 0, :]), dim=-1)
            image_feat_m_all = torch.cat([image_feat_m.t(), self.image_queue.clone().detach()], dim=1)

            text_output_m = self.text_encoder_m(input_ids, attention_mask=attention_mask,
                                                return_dict=True, mode='text')
            text_feat_m = F.normalize(self.text_proj_m(text_output_m.last_hidden_state[:, 0, :]), dim=-1)
            text_feat_m_all = torch.cat([text_feat_m.t(), self.text_queue.clone().detach()], dim=1)

            sim_i2t_m = image_feat_m @ text_feat_m_all / self.temp
            sim_t2i_m = text_feat_m @ image_feat_m_all / self.temp

            sim_i2t_targets = alpha * F.softmax(sim_i2t_m, dim=1) + (1 - alpha) * sim_targets
            sim_t2i_targets = alpha * F.softmax(sim_t2i_m, dim=1) + (1 - alpha) * sim_targets

        sim_i2t = image_feat @ text_feat_m_all / self.temp
        sim_t2i = text_feat @ image_feat_m_all / self.temp

        loss_i2t = -torch.sum(F.log_softmax(sim_i2t, dim=1)*sim_i2t_targets, dim=1).mean()
        loss_t2i = -torch.sum(F.log_softmax(sim_t2i, dim=1)*sim_t2i_targets, dim=1).mean()

        loss_ita = (loss_i2t+loss_t2i)/2

        idxs = concat_all_gather(idx)
        self._dequeue_and_enqueue(image_feat_m, text_feat_m, idxs)

        ###============== Image-text Matching ===================###
        encoder_input_ids = input_ids.clone()
        encoder_input_ids[:, 0] = self.enc_token_id

        # forward the positve image-text pair
        bs = image.size(0)
        output_pos = self.text_encoder(encoder_input_ids,
                                       attention_mask=attention_mask,
                                       encoder_hidden_states=image_embeds,
                                       encoder_attention_mask=image_atts,
                                       return_dict=True,
                                       )

        with torch.no_grad():
            mask = torch.eq(idx, idx.t())

            sim_i2t = image_feat @ text_feat.t() / self.temp
            sim_t2i = text_feat @ image_feat.t() / self.temp

            weights_i2t = F.softmax(sim_i2t, dim=1)
            weights_i2t.masked_fill_(mask, 0)

            weights_t2i = F.softmax(sim_t2i, dim=1)
            weights_t2i.masked_fill_(mask, 0)

        # select a negative image (from same rank) for each text
        image_embeds_neg = []
        for b in range(bs):
            neg_idx = torch.multinomial(weights_t2i[b], 1).item()
            image_embeds_neg.append(image_embeds[neg_idx])
        image_embeds_neg = torch.stack(image_embeds_neg, dim=0)

        # select a negative text (from same rank) for each image
        text_ids_neg = []
        text_atts_neg = []
        for b in range(bs):
            neg_idx = torch.multinomial(weights_i2t[b], 1).item()
            text_ids_neg.append(encoder_input_ids[neg_idx])
            text_atts_neg.append(attention_mask[neg_idx])

        text_ids_neg = torch.stack(text_ids_neg, dim=0)
        text_atts_neg = torch.stack(text_atts_neg, dim=0)

        text_ids_all = torch.cat([encoder_input_ids, text_ids_neg], dim=0)
        text_atts_all = torch.cat([attention_mask, text_atts_neg], dim=0)

        image_embeds_all = torch.cat([image_embeds_neg, image_embeds], dim=0)
        image_atts_all = torch.cat([image_atts, image_atts], dim=0)

        output_neg = self.text_encoder(text_ids_all,
                                       attention_mask=text_atts_all,
                                       encoder_hidden_states=image_embeds_all,
                                       encoder_attention_mask=image_atts_all,
                                       return_dict=True,
                                       )

        vl_embeddings = torch.cat([output_pos.last_hidden_state[:, 0, :], output_neg.last_hidden_state[:, 0, :]], dim=0)
        vl_output = self.itm_head(vl_embeddings)

        itm_labels = torch.cat([torch.ones(bs, dtype=torch.long), torch.zeros(2*bs, dtype=torch.long)],
                               dim=0).to(image.device)
        loss_itm = F.cross_entropy(vl_output, itm_labels)

        return loss_ita, loss_itm

    @torch.no_grad()
    def copy_params(self):
        for model_pair in self.model_pairs:
            for param, param_m in zip(model_pair[0].parameters(), model_pair[1].parameters()):
                param_m.data.copy_(param.data)  # initialize
                param_m.requires_grad = False  # not update by gradient

    @torch.no_grad()
    def _momentum_update(self):
        for model_pair in self.model_pairs:
            for param, param_m in zip(model_pair[0].parameters(), model_pair[1].parameters()):
                param_m.data = param_m.data * self.momentum + param.data * (1. - self.momentum)

    @torch.no_grad()
    def _dequeue_and_enqueue(self, image_feat, text_feat, idxs):
        # gather keys before updating queue
        image_feats = concat_all_gather(image_feat)
        text_feats = concat_all_gather(text_feat)

        batch_size = image_feats.shape[0]

        ptr = int(self.ptr_queue)
        assert self.queue_size % batch_size == 0  # for simplicity

        # replace the keys at ptr (dequeue and enqueue)
        self.image_queue[:, ptr:ptr + batch_size] = image_feats.T
        self.text_queue[:, ptr:ptr + batch_size] = text_feats.T
        self.idx_queue[:, ptr:ptr + batch_size] = idxs.T
        ptr = (ptr + batch_size) % self.queue_size  # move pointer

        self.ptr_queue[0] = ptr


@torch.no_grad()
def concat_all_gather(tensor):
    """Performs all_gather operation on the provided tensors (single process: the tensor itself)."""
    if not torch.distributed.is_available() or not torch.distributed.is_initialized():
        return tensor
    tensors_gather = [torch.ones_like(tensor)
                      for _ in range(torch.distributed.get_world_size())]
    torch.distributed.all_gather(tensors_gather, tensor, async_op=False)

    output = torch.cat(tensors_gather, dim=0)
    return output


def train(model, batches):
    model.train()
    step = torch.compile(model)
    return [step(*batch) for batch in batches]


def make():
    torch.manual_seed(0)
    model = BLIP_Retrieval()
    image = torch.randn(4, 3, 8, 8)
    input_ids = torch.randint(3, 30, (4, 5))
    attention_mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 0, 0, 0]])
    idx = torch.tensor([11, 12, 13, 14])
    return model, [(image, input_ids, attention_mask, 0.4, idx), (image[:2], input_ids[:2], attention_mask[:2], 0.0, idx[2:])]
