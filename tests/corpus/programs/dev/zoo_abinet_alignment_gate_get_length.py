"""ABINet alignment (fusion) head: gated mix of language and vision features, class logits, and `Model._get_length`, the greedy length decoder built from argmax, cumsum and `torch.where` against the charset's null label.

Source: FangShancheng/ABINet@d3bfeec0042a23ba54357d4256c016f46c564201:modules/model_alignment.py:1-34
Also: modules/model.py:1-50 (Model base: charset, _get_length and the mask helpers),
utils.py:14-62 (CharsetMapper.__init__/_read_charset), fastai.core.ifnone.
Kept: BaseAlignment and Model verbatim, the config plumbing through `ifnone`
and `config.dataset_max_length + 1`.
Simplified: CharsetMapper reads its "id<TAB>char" lines from an in-memory
list instead of data/charset_36.txt; fastai's star import replaced by torch;
d_model 16, max length 6, batch 2.
"""
import re

import torch
import torch.nn as nn


def ifnone(a, b):
    "`a` if `a` is not None, otherwise `b`."
    return b if a is None else a


# data/charset_36.txt: "0\ta" ... "35\t0"
CHARSET_36 = ["%d\t%s" % (i, c) for i, c in enumerate("abcdefghijklmnopqrstuvwxyz1234567890")]


class CharsetMapper(object):
    """A simple class to map ids into strings.

    It works only when the character set is 1:1 mapping between individual
    characters and individual ids.
    """

    def __init__(self,
                 filename='',
                 max_length=30,
                 null_char=u'\u2591'):
        self.null_char = null_char
        self.max_length = max_length

        self.label_to_char = self._read_charset(filename)
        self.char_to_label = dict(map(reversed, self.label_to_char.items()))
        self.num_classes = len(self.label_to_char)

    def _read_charset(self, filename):
        """Reads a charset definition from a tab separated text file."""
        pattern = re.compile(r'(\d+)\t(.+)')
        charset = {}
        self.null_label = 0
        charset[self.null_label] = self.null_char
        for i, line in enumerate(CHARSET_36):  # with open(filename, 'r') as f: enumerate(f)
            m = pattern.match(line)
            assert m, f'Incorrect charset file. line #{i}: {line}'
            label = int(m.group(1)) + 1
            char = m.group(2)
            charset[label] = char
        return charset


_default_tfmer_cfg = dict(d_model=512, nhead=8, d_inner=2048, # 1024
                          dropout=0.1, activation='relu')


class Model(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.max_length = config.dataset_max_length + 1
        self.charset = CharsetMapper(config.dataset_charset_path, max_length=self.max_length)

    def load(self, source, device=None, strict=True):
        state = torch.load(source, map_location=device)
        self.load_state_dict(state['model'], strict=strict)

    def _get_length(self, logit, dim=-1):
        """ Greed decoder to obtain length from logit"""
        out = (logit.argmax(dim=-1) == self.charset.null_label)
        abn = out.any(dim)
        out = ((out.cumsum(dim) == 1) & out).max(dim)[1]
        out = out + 1  # additional end token
        out = torch.where(abn, out, out.new_tensor(logit.shape[1]))
        return out

    @staticmethod
    def _get_padding_mask(length, max_length):
        length = length.unsqueeze(-1)
        grid = torch.arange(0, max_length, device=length.device).unsqueeze(0)
        return grid >= length

    @staticmethod
    def _get_square_subsequent_mask(sz, device, diagonal=0, fw=True):
        mask = (torch.triu(torch.ones(sz, sz, device=device), diagonal=diagonal) == 1)
        if fw: mask = mask.transpose(0, 1)
        mask = mask.float().masked_fill(mask == 0, float('-inf')).masked_fill(mask == 1, float(0.0))
        return mask

    @staticmethod
    def _get_location_mask(sz, device=None):
        mask = torch.eye(sz, device=device)
        mask = mask.float().masked_fill(mask == 1, float('-inf'))
        return mask


class BaseAlignment(Model):
    def __init__(self, config):
        super().__init__(config)
        d_model = ifnone(config.model_alignment_d_model, _default_tfmer_cfg['d_model'])

        self.loss_weight = ifnone(config.model_alignment_loss_weight, 1.0)
        self.max_length = config.dataset_max_length + 1  # additional stop token
        self.w_att = nn.Linear(2 * d_model, d_model)
        self.cls = nn.Linear(d_model, self.charset.num_classes)

    def forward(self, l_feature, v_feature):
        """
        Args:
            l_feature: (N, T, E) where T is length, N is batch size and d is dim of model
            v_feature: (N, T, E) shape the same as l_feature
            l_lengths: (N,)
            v_lengths: (N,)
        """
        f = torch.cat((l_feature, v_feature), dim=2)
        f_att = torch.sigmoid(self.w_att(f))
        output = f_att * v_feature + (1 - f_att) * l_feature

        logits = self.cls(output)  # (N, T, C)
        pt_lengths = self._get_length(logits)

        return {'logits': logits, 'pt_lengths': pt_lengths, 'loss_weight':self.loss_weight,
                'name': 'alignment'}


class Config:
    dataset_max_length = 5
    dataset_charset_path = 'data/charset_36.txt'
    model_alignment_d_model = 16
    model_alignment_loss_weight = None


alignment = torch.compile(BaseAlignment(Config()).eval())


def make():
    torch.manual_seed(0)
    model = BaseAlignment(Config()).eval()
    l_feature = torch.randn(2, 6, 16)
    v_feature = torch.randn(2, 6, 16)
    return model, [(l_feature, v_feature)]
