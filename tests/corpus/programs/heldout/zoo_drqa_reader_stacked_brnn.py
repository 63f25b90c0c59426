"""DrQA reader StackedBRNN: `if x_mask.data.sum() == 0` picks the unpadded path, otherwise (padding or eval) sorts lengths, `list(lengths[idx_sort])`, packs, runs bidirectional LSTMs and unpacks.

Source: facebookresearch/DrQA@055570d87ed8450b748667ad858407440e0081c5:drqa/reader/layers.py:20-170
Kept: StackedBRNN verbatim (the three-way branch on the mask sum and
`self.padding or not self.training`, _forward_unpadded, _forward_padded with
Variable, pack_padded_sequence/PackedSequence/pad_packed_sequence, the pad-up
`.type(output.data.type())`), built the way RnnDocReader builds its document encoder.
Simplified: 2 layers, hidden 4, input 6, concat_layers=True, dropout 0.2.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable


class StackedBRNN(nn.Module):
    """Stacked Bi-directional RNNs.

    Differs from standard PyTorch library in that it has the option to save
    and concat the hidden states between layers. (i.e. the output hidden size
    for each sequence input is num_layers * hidden_size).
    """

    def __init__(self, input_size, hidden_size, num_layers,
                 dropout_rate=0, dropout_output=False, rnn_type=nn.LSTM,
                 concat_layers=False, padding=False):
        super(StackedBRNN, self).__init__()
        self.padding = padding
        self.dropout_output = dropout_output
        self.dropout_rate = dropout_rate
        self.num_layers = num_layers
        self.concat_layers = concat_layers
        self.rnns = nn.ModuleList()
        for i in range(num_layers):
            input_size = input_size if i == 0 else 2 * hidden_size
            self.rnns.append(rnn_type(input_size, hidden_size,
                                      num_layers=1,
                                      bidirectional=True))

    def forward(self, x, x_mask):
        """Encode either padded or non-padded sequences.

        Args:
            x: batch * len * hdim
            x_mask: batch * len (1 for padding, 0 for true)
        Output:
            x_encoded: batch * len * hdim_encoded
        """
        if x_mask.data.sum() == 0:
            # No padding necessary.
            output = self._forward_unpadded(x, x_mask)
        elif self.padding or not self.training:
            # Pad if we care or if its during eval.
            output = self._forward_padded(x, x_mask)
        else:
            # We don't care.
            output = self._forward_unpadded(x, x_mask)

        return output.contiguous()

    def _forward_unpadded(self, x, x_mask):
        """Faster encoding that ignores any padding."""
        # Transpose batch and sequence dims
        x = x.transpose(0, 1)

        # Encode all layers
        outputs = [x]
        for i in range(self.num_layers):
            rnn_input = outputs[-1]

            # Apply dropout to hidden input
            if self.dropout_rate > 0:
                rnn_input = F.dropout(rnn_input,
                                      p=self.dropout_rate,
                                      training=self.training)
            # Forward
            rnn_output = self.rnns[i](rnn_input)[0]
            outputs.append(rnn_output)

        # Concat hidden layers
        if self.concat_layers:
            output = torch.cat(outputs[1:], 2)
        else:
            output = outputs[-1]

        # Transpose back
        output = output.transpose(0, 1)

        # Dropout on output layer
        if self.dropout_output and self.dropout_rate > 0:
            output = F.dropout(output,
                               p=self.dropout_rate,
                               training=self.training)
        return output

    def _forward_padded(self, x, x_mask):
        """Slower (significantly), but more precise, encoding that handles
        padding.
        """
        # Compute sorted sequence lengths
        lengths = x_mask.data.eq(0).long().sum(1).squeeze()
        _, idx_sort = torch.sort(lengths, dim=0, descending=True)
        _, idx_unsort = torch.sort(idx_sort, dim=0)

        lengths = list(lengths[idx_sort])
        idx_sort = Variable(idx_sort)
        idx_unsort = Variable(idx_unsort)

        # Sort x
        x = x.index_select(0, idx_sort)

        # Transpose batch and sequence dims
        x = x.transpose(0, 1)

        # Pack it up
        rnn_input = nn.utils.rnn.pack_padded_sequence(x, lengths)

        # Encode all layers
        outputs = [rnn_input]
        for i in range(self.num_layers):
            rnn_input = outputs[-1]

            # Apply dropout to input
            if self.dropout_rate > 0:
                dropout_input = F.dropout(rnn_input.data,
                                          p=self.dropout_rate,
                                          training=self.training)
                rnn_input = nn.utils.rnn.PackedSequence(dropout_input,
                                                        rnn_input.batch_sizes)
            outputs.append(self.rnns[i](rnn_input)[0])

        # Unpack everything
        for i, o in enumerate(outputs[1:], 1):
            outputs[i] = nn.utils.rnn.pad_packed_sequence(o)[0]

        # Concat hidden layers or take final
        if self.concat_layers:
            output = torch.cat(outputs[1:], 2)
        else:
            output = outputs[-1]

        # Transpose and unsort
        output = output.transpose(0, 1)
        output = output.index_select(0, idx_unsort)

        # Pad up to original batch sequence length
        if output.size(1) != x_mask.size(1):
            padding = torch.zeros(output.size(0),
                                  x_mask.size(1) - output.size(1),
                                  output.size(2)).type(output.data.type())
            output = torch.cat([output, Variable(padding)], 1)

        # Dropout on output layer
        if self.dropout_output and self.dropout_rate > 0:
            output = F.dropout(output,
                               p=self.dropout_rate,
                               training=self.training)
        return output


class Args:
    embedding_dim = 6
    hidden_size = 4
    doc_layers = 2
    dropout_rnn = 0.2
    dropout_rnn_output = True
    concat_rnn_layers = True
    rnn_padding = False


def build_doc_rnn(args):
    return StackedBRNN(
        input_size=args.embedding_dim,
        hidden_size=args.hidden_size,
        num_layers=args.doc_layers,
        dropout_rate=args.dropout_rnn,
        dropout_output=args.dropout_rnn_output,
        concat_layers=args.concat_rnn_layers,
        rnn_type=nn.LSTM,
        padding=args.rnn_padding,
    )


doc_rnn = torch.compile(build_doc_rnn(Args()).eval())


def make():
    torch.manual_seed(0)
    x = torch.randn(3, 5, 6)
    no_pad = torch.zeros(3, 5, dtype=torch.bool)
    pad = torch.tensor([
        [0, 0, 0, 1, 1],
        [0, 0, 0, 0, 1],
        [0, 0, 1, 1, 1],
    ], dtype=torch.bool)
    pad_one_full = torch.tensor([
        [0, 0, 0, 1, 1],
        [0, 0, 0, 0, 0],
        [0, 0, 1, 1, 1],
    ], dtype=torch.bool)
    return build_doc_rnn(Args()).eval(), [(x, no_pad), (x, pad), (x, pad_one_full)]
