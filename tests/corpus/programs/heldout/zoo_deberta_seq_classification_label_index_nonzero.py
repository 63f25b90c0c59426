"""DeBERTa SequenceClassificationModel.forward: pools the first token through ContextPooler/StableDropout, and for hard labels selects the labelled rows with `label_index = (labels >= 0).nonzero()` and branches on `label_index.size(0) > 0` before gathering logits; soft labels take a log-softmax loss.

Source: microsoft/DeBERTa@2c0ca9d51f3e2daeb9b5f8ae15908c96e472771f:DeBERTa/apps/models/sequence_classification.py:20-70
Also: DeBERTa/deberta/pooling.py (PoolConfig, ContextPooler),
DeBERTa/deberta/ops.py (StableDropout, XDropout, DropoutContext),
DeBERTa/deberta/bert.py (gelu / ACT2FN).
Kept: SequenceClassificationModel.__init__ (pool config, classifier,
StableDropout) and forward verbatim; PoolConfig, ContextPooler, StableDropout,
XDropout, DropoutContext verbatim (torch >= 1.2 side).
Simplified: NNModule is nn.Module (no init_weights / apply_state / state-dict
hook); the DeBERTa backbone is an embedding plus two tanh-linear layers that
return all encoded layers; hidden 8, 3 labels; compiled in training mode.
"""
import math

import torch
from torch.nn import CrossEntropyLoss


def gelu(x):
  """Implementation of the gelu activation function.
  """
  return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


ACT2FN = {"gelu": gelu, "relu": torch.nn.functional.relu, "tanh": torch.nn.functional.tanh}


class DropoutContext(object):
  def __init__(self):
    self.dropout = 0
    self.mask = None
    self.scale = 1
    self.reuse_mask = True


class XDropout(torch.autograd.Function):
  @staticmethod
  def forward(ctx, input, local_ctx):
    mask, dropout = XDropout.get_mask(input, local_ctx)
    ctx.scale=1.0/(1-dropout)
    if dropout>0:
      ctx.save_for_backward(mask)
      return input.masked_fill(mask, 0)*ctx.scale
    else:
      return input

  @staticmethod
  def backward(ctx, grad_output):
    if ctx.scale > 1:
      mask, = ctx.saved_tensors
      return grad_output.masked_fill(mask, 0)*ctx.scale, None
    else:
      return grad_output, None

  @staticmethod
  def get_mask(input, local_context):
    if not isinstance(local_context, DropoutContext):
      dropout = local_context
      mask = None
    else:
      dropout = local_context.dropout
      dropout *= local_context.scale
      mask = local_context.mask if local_context.reuse_mask else None

    if dropout>0 and mask is None:
      mask=(1-torch.empty_like(input).bernoulli_(1-dropout)).bool()

    if isinstance(local_context, DropoutContext):
      if local_context.mask is None:
        local_context.mask = mask

    return mask, dropout


class StableDropout(torch.nn.Module):
  def __init__(self, drop_prob):
    super().__init__()
    self.drop_prob = drop_prob
    self.count = 0
    self.context_stack = None

  def forward(self, x):
    if self.training and self.drop_prob>0:
      return XDropout.apply(x, self.get_context())
    return x

  def get_context(self):
    if self.context_stack is not None:
      if self.count >= len(self.context_stack):
        self.context_stack.append(DropoutContext())
      ctx = self.context_stack[self.count]
      ctx.dropout = self.drop_prob
      self.count += 1
      return ctx
    else:
      return self.drop_prob


class PoolConfig(object):
    def __init__(self, model_config):
        pool_config = getattr(model_config, 'pooling', model_config)
        self.hidden_size = getattr(pool_config, 'hidden_size', model_config.hidden_size)
        self.dropout = getattr(pool_config, 'dropout', 0)
        self.hidden_act = getattr(pool_config, 'hidden_act', 'gelu')


class ContextPooler(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = torch.nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = StableDropout(config.dropout)
        self.config = config

    def forward(self, hidden_states, mask = None):
        # We "pool" the model by simply taking the hidden state corresponding
        # to the first token.

        context_token = hidden_states[:, 0]
        context_token = self.dropout(context_token)
        pooled_output = self.dense(context_token)
        pooled_output = ACT2FN[self.config.hidden_act](pooled_output)
        return pooled_output

    def output_dim(self):
        return self.config.hidden_size


class DeBERTa(torch.nn.Module):
  """Stand-in backbone: returns every encoded layer like DeBERTa(..., output_all_encoded_layers=True)."""
  def __init__(self, config, pre_trained=None):
    super().__init__()
    self.config = config
    self.embeddings = torch.nn.Embedding(config.vocab_size, config.hidden_size)
    self.layers = torch.nn.ModuleList([torch.nn.Linear(config.hidden_size, config.hidden_size) for _ in range(2)])

  def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None, output_all_encoded_layers=True):
    h = self.embeddings(input_ids)
    if attention_mask is not None:
      h = h * attention_mask.unsqueeze(-1).to(h)
    encoded = []
    for layer in self.layers:
      h = torch.tanh(layer(h))
      encoded.append(h)
    return encoded


class SequenceClassificationModel(torch.nn.Module):
  def __init__(self, config, num_labels=2, drop_out=None, pre_trained=None):
    super().__init__()
    self.num_labels = num_labels
    self.deberta = DeBERTa(config, pre_trained=pre_trained)
    if pre_trained is not None:
      self.config = self.deberta.config
    else:
      self.config = config
    pool_config = PoolConfig(self.config)
    output_dim = self.deberta.config.hidden_size
    self.pooler = ContextPooler(pool_config)
    output_dim = self.pooler.output_dim()

    self.classifier = torch.nn.Linear(output_dim, num_labels)
    drop_out = self.config.hidden_dropout_prob if drop_out is None else drop_out
    self.dropout = StableDropout(drop_out)

  def forward(self, input_ids, type_ids=None, input_mask=None, labels=None, position_ids=None, **kwargs):
    encoder_layers = self.deberta(input_ids, attention_mask=input_mask, token_type_ids=type_ids,
        position_ids=position_ids, output_all_encoded_layers=True)
    pooled_output = self.pooler(encoder_layers[-1])
    pooled_output = self.dropout(pooled_output)
    logits = self.classifier(pooled_output)

    loss = 0
    if labels is not None:
      if self.num_labels ==1:
        # regression task
        loss_fn = torch.nn.MSELoss()
        logits=logits.view(-1).to(labels.dtype)
        loss = loss_fn(logits, labels.view(-1))
      elif labels.dim()==1 or labels.size(-1)==1:
        label_index = (labels >= 0).nonzero()
        labels = labels.long()
        if label_index.size(0) > 0:
          labeled_logits = torch.gather(logits, 0, label_index.expand(label_index.size(0), logits.size(1)))
          labels = torch.gather(labels, 0, label_index.view(-1))
          loss_fct = CrossEntropyLoss()
          loss = loss_fct(labeled_logits.view(-1, self.num_labels).float(), labels.view(-1))
        else:
          loss = torch.tensor(0).to(logits)
      else:
        log_softmax = torch.nn.LogSoftmax(-1)
        label_confidence = 1
        loss = -((log_softmax(logits)*labels).sum(-1)*label_confidence).mean()

    return (logits,loss)


class Config:
  vocab_size = 20
  hidden_size = 8
  hidden_dropout_prob = 0.1


model = torch.compile(SequenceClassificationModel(Config(), num_labels=3))


def make():
  torch.manual_seed(0)
  m = SequenceClassificationModel(Config(), num_labels=3)
  ids = torch.randint(0, 20, (4, 6))
  mask = torch.ones(4, 6, dtype=torch.long)
  some_labelled = torch.tensor([0, -1, 2, 1])
  none_labelled = torch.tensor([-1, -1, -1, -1])
  soft = torch.softmax(torch.randn(4, 3), -1)
  return m, [
    (ids, None, mask),
    (ids, None, mask, some_labelled),
    (ids, None, mask, none_labelled),
    (ids, None, mask, soft),
  ]
