"""UniSpeech pre-training head: gumbel vector quantizer (train/eval branches) and bernoulli feature replacement.

Source: huggingface/transformers@00363c3693bca9a0c1d9617cb738e4530dd3784e:src/transformers/models/unispeech/modeling_unispeech.py:1000-1060,1380-1470
(census: penguinwu/oss-model-graph-break-corpus, UniSpeechModel / UniSpeech pre-training family).
Kept: UniSpeechGumbelVectorQuantizer (group check raise, weight_proj, `if self.training:` gumbel_softmax
hard + soft-dist perplexity vs argmax/scatter one-hot, codevector gather), and
UniSpeechForPreTraining.forward (dropout_features, quantizer, project_q/project_hid, `torch.empty(...).fill_`
replace-prob matrix, `torch.bernoulli(...).bool()`, masked_fill mix, ctc_proj, tuple return).
Simplified: the UniSpeechModel backbone (conv feature encoder + transformer) is a small stand-in
that returns (transformer_features, extract_features) from precomputed frame features; tiny sizes.
"""
import torch
from torch import nn


class UniSpeechConfig:
    conv_dim = (12,)
    hidden_size = 16
    num_codevector_groups = 2
    num_codevectors_per_group = 5
    codevector_dim = 8
    proj_codevector_dim = 8
    num_ctc_classes = 10
    feat_quantizer_dropout = 0.0
    final_dropout = 0.1
    replace_prob = 0.5
    use_return_dict = False


class UniSpeechBackboneStandIn(nn.Module):
    """Stands in for UniSpeechModel: feature projection + one encoder layer, returns a tuple."""

    def __init__(self, config):
        super().__init__()
        self.layer_norm = nn.LayerNorm(config.conv_dim[-1])
        self.projection = nn.Linear(config.conv_dim[-1], config.hidden_size)
        self.encoder = nn.TransformerEncoderLayer(config.hidden_size, 2, 32, dropout=0.0, batch_first=True)

    def forward(self, input_values, attention_mask=None, output_attentions=None, output_hidden_states=None,
                return_dict=None):
        extract_features = self.layer_norm(input_values)
        hidden_states = self.projection(extract_features)
        hidden_states = self.encoder(hidden_states)
        return (hidden_states, extract_features)


class UniSpeechGumbelVectorQuantizer(nn.Module):
    """
    Vector quantization using gumbel softmax. See `[CATEGORICAL REPARAMETERIZATION WITH
    GUMBEL-SOFTMAX](https://arxiv.org/pdf/1611.01144.pdf) for more information.
    """

    def __init__(self, config):
        super().__init__()
        self.num_groups = config.num_codevector_groups
        self.num_vars = config.num_codevectors_per_group

        if config.codevector_dim % self.num_groups != 0:
            raise ValueError(
                f"`config.codevector_dim {config.codevector_dim} must be divisible by `config.num_codevector_groups`"
                f" {self.num_groups} for concatenation"
            )

        # storage for codebook variables (codewords)
        self.codevectors = nn.Parameter(
            torch.FloatTensor(1, self.num_groups * self.num_vars, config.codevector_dim // self.num_groups)
        )
        self.weight_proj = nn.Linear(config.conv_dim[-1], self.num_groups * self.num_vars)

        # can be decayed for training
        self.temperature = 2

    @staticmethod
    def _compute_perplexity(probs):
        marginal_probs = probs.mean(dim=0)
        perplexity = torch.exp(-torch.sum(marginal_probs * torch.log(marginal_probs + 1e-7), dim=-1)).sum()
        return perplexity

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_size = hidden_states.shape

        # project to codevector dim
        hidden_states = self.weight_proj(hidden_states)
        hidden_states = hidden_states.view(batch_size * sequence_length * self.num_groups, -1)

        if self.training:
            # sample code vector probs via gumbel in differentiateable way
            codevector_probs = nn.functional.gumbel_softmax(
                hidden_states.float(), tau=self.temperature, hard=True
            ).type_as(hidden_states)

            # compute perplexity
            codevector_soft_dist = torch.softmax(
                hidden_states.view(batch_size * sequence_length, self.num_groups, -1).float(), dim=-1
            )
            perplexity = self._compute_perplexity(codevector_soft_dist)
        else:
            # take argmax in non-differentiable way
            # comptute hard codevector distribution (one hot)
            codevector_idx = hidden_states.argmax(dim=-1)
            codevector_probs = hidden_states.new_zeros(*hidden_states.shape).scatter_(
                -1, codevector_idx.view(-1, 1), 1.0
            )
            codevector_probs = codevector_probs.view(batch_size * sequence_length, self.num_groups, -1)

            perplexity = self._compute_perplexity(codevector_probs)

        codevector_probs = codevector_probs.view(batch_size * sequence_length, -1)
        # use probs to retrieve codevectors
        codevectors_per_group = codevector_probs.unsqueeze(-1) * self.codevectors
        codevectors = codevectors_per_group.view(batch_size * sequence_length, self.num_groups, self.num_vars, -1)
        codevectors = codevectors.sum(-2).view(batch_size, sequence_length, -1)

        return codevectors, perplexity


class UniSpeechForPreTraining(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.unispeech = UniSpeechBackboneStandIn(config)
        self.dropout_features = nn.Dropout(config.feat_quantizer_dropout)

        self.quantizer = UniSpeechGumbelVectorQuantizer(config)
        self.project_q = nn.Linear(config.codevector_dim, config.proj_codevector_dim)
        self.project_hid = nn.Linear(config.proj_codevector_dim, config.hidden_size)

        self.ctc_proj = nn.Linear(config.hidden_size, config.num_ctc_classes)
        self.dropout = nn.Dropout(config.final_dropout)

        # gumbel softmax requires special init
        self.quantizer.weight_proj.weight.data.normal_(mean=0.0, std=1)
        self.quantizer.weight_proj.bias.data.zero_()
        nn.init.uniform_(self.quantizer.codevectors)

    def set_gumbel_temperature(self, temperature: int):
        self.quantizer.temperature = temperature

    def forward(self, input_values, attention_mask=None, output_attentions=None, output_hidden_states=None,
                return_dict=None):
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict

        outputs = self.unispeech(
            input_values,
            attention_mask=attention_mask,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=return_dict,
        )
        transformer_features = outputs[0]

        # quantize all (unmasked) extracted features and project to final vq dim
        extract_features = self.dropout_features(outputs[1])
        quantized_features, codevector_perplexity = self.quantizer(extract_features)

        # project quantized features twice
        quantized_features = self.project_q(quantized_features)
        quantized_features = self.project_hid(quantized_features)

        prob_replace_matrix = torch.empty(transformer_features.size(0), transformer_features.size(1)).fill_(
            self.config.replace_prob
        )
        prob_replace_matrix = prob_replace_matrix.transpose(0, 1)
        sampled_replace_matrix = torch.bernoulli(prob_replace_matrix).bool().to(transformer_features.device)
        sampled_replace_matrix = sampled_replace_matrix.transpose(0, 1)
        sampled_replace_matrix = sampled_replace_matrix.unsqueeze(-1)
        logits = transformer_features.masked_fill(sampled_replace_matrix, 0.0) + (
            quantized_features.masked_fill(~sampled_replace_matrix, 0.0)
        )

        # project to ctc units
        logits = self.dropout(logits)
        logits = self.ctc_proj(logits)

        loss = None
        if loss is not None:
            return (loss, transformer_features, quantized_features, codevector_perplexity) + outputs[2:]
        return (transformer_features, quantized_features, codevector_perplexity) + outputs[2:]


def validation_model_factory():
    model = UniSpeechForPreTraining(UniSpeechConfig())
    model.set_gumbel_temperature(1.5)
    return torch.compile(model.eval())


def make():
    torch.manual_seed(0)
    m = UniSpeechForPreTraining(UniSpeechConfig()).eval()
    return m, [
        (torch.randn(2, 6, 12),),
        (torch.randn(1, 9, 12),),
    ]
