"""Pyro Deep Markov Model guide: nn.RNN over a PackedSequence, pad_packed_sequence, a per-sequence reversal loop that builds `torch.arange(T - 1, -1, -1)` from tensor lengths, then a Combiner step per time index.

Source: pyro-ppl/pyro@ff6ae1c9572591791aae8842bcd702fcf0b46fd6:examples/dmm.py:114-200,263-331
Also: pyro/contrib/examples/polyphonic_data_loader.py:119-185 (reverse_sequences,
pad_and_reverse, get_mini_batch_mask, get_mini_batch with pack_padded_sequence).
Kept: Combiner verbatim, the DMM constructor's nn.RNN (relu, batch_first, the
dropout-only-with-layers rule) and h_0/z_q_0 parameters, the guide body (h_0
expand().contiguous(), rnn over the packed reversed batch, poly.pad_and_reverse,
z_prev recursion over range(1, T_max + 1) with the no-IAF assert branch);
reverse_sequences/pad_and_reverse verbatim; get_mini_batch builds the inputs
outside the compiled call as in the training loop.
Simplified: pyro.module/plate/markov/poutine.scale are dropped and pyro.sample
becomes a torch.distributions Normal rsample masked by mini_batch_mask; the guide
returns the sampled latents; no emitter/transition (model side), no IAFs;
input_dim 6, z_dim 3, rnn_dim 8, batches of 3 sequences up to 5 steps.
"""
import torch
import torch.nn as nn
from torch.distributions import Normal


def reverse_sequences(mini_batch, seq_lengths):
    reversed_mini_batch = torch.zeros_like(mini_batch)
    for b in range(mini_batch.size(0)):
        T = seq_lengths[b]
        time_slice = torch.arange(T - 1, -1, -1, device=mini_batch.device)
        reversed_sequence = torch.index_select(mini_batch[b, :, :], 0, time_slice)
        reversed_mini_batch[b, 0:T, :] = reversed_sequence
    return reversed_mini_batch


# this function takes the hidden state as output by the PyTorch rnn and
# unpacks it it; it also reverses each sequence temporally
def pad_and_reverse(rnn_output, seq_lengths):
    rnn_output, _ = nn.utils.rnn.pad_packed_sequence(rnn_output, batch_first=True)
    reversed_output = reverse_sequences(rnn_output, seq_lengths)
    return reversed_output


def get_mini_batch_mask(mini_batch, seq_lengths):
    mask = torch.zeros(mini_batch.shape[0:2])
    for b in range(mini_batch.shape[0]):
        mask[b, 0 : seq_lengths[b]] = torch.ones(seq_lengths[b])
    return mask


def get_mini_batch(mini_batch_indices, sequences, seq_lengths, cuda=False):
    # get the sequence lengths of the mini-batch
    seq_lengths = seq_lengths[mini_batch_indices]
    # sort the sequence lengths
    _, sorted_seq_length_indices = torch.sort(seq_lengths)
    sorted_seq_length_indices = sorted_seq_length_indices.flip(0)
    sorted_seq_lengths = seq_lengths[sorted_seq_length_indices]
    sorted_mini_batch_indices = mini_batch_indices[sorted_seq_length_indices]

    # compute the length of the longest sequence in the mini-batch
    T_max = torch.max(seq_lengths)
    # this is the sorted mini-batch
    mini_batch = sequences[sorted_mini_batch_indices, 0:T_max, :]
    # this is the sorted mini-batch in reverse temporal order
    mini_batch_reversed = reverse_sequences(mini_batch, sorted_seq_lengths)
    # get mask for mini-batch
    mini_batch_mask = get_mini_batch_mask(mini_batch, sorted_seq_lengths)

    # do sequence packing
    mini_batch_reversed = nn.utils.rnn.pack_padded_sequence(
        mini_batch_reversed, sorted_seq_lengths, batch_first=True
    )

    return mini_batch, mini_batch_reversed, mini_batch_mask, sorted_seq_lengths


class Combiner(nn.Module):
    """
    Parameterizes `q(z_t | z_{t-1}, x_{t:T})`, which is the basic building block
    of the guide (i.e. the variational distribution). The dependence on `x_{t:T}` is
    through the hidden state of the RNN (see the PyTorch module `rnn` below)
    """

    def __init__(self, z_dim, rnn_dim):
        super().__init__()
        # initialize the three linear transformations used in the neural network
        self.lin_z_to_hidden = nn.Linear(z_dim, rnn_dim)
        self.lin_hidden_to_loc = nn.Linear(rnn_dim, z_dim)
        self.lin_hidden_to_scale = nn.Linear(rnn_dim, z_dim)
        # initialize the two non-linearities used in the neural network
        self.tanh = nn.Tanh()
        self.softplus = nn.Softplus()

    def forward(self, z_t_1, h_rnn):
        # combine the rnn hidden state with a transformed version of z_t_1
        h_combined = 0.5 * (self.tanh(self.lin_z_to_hidden(z_t_1)) + h_rnn)
        # use the combined hidden state to compute the mean used to sample z_t
        loc = self.lin_hidden_to_loc(h_combined)
        # use the combined hidden state to compute the scale used to sample z_t
        scale = self.softplus(self.lin_hidden_to_scale(h_combined))
        # return loc, scale which can be fed into Normal
        return loc, scale


class DMMGuide(nn.Module):
    def __init__(
        self,
        input_dim=88,
        z_dim=100,
        rnn_dim=600,
        num_layers=1,
        rnn_dropout_rate=0.0,
    ):
        super().__init__()
        self.combiner = Combiner(z_dim, rnn_dim)
        # dropout just takes effect on inner layers of rnn
        rnn_dropout_rate = 0.0 if num_layers == 1 else rnn_dropout_rate
        self.rnn = nn.RNN(
            input_size=input_dim,
            hidden_size=rnn_dim,
            nonlinearity="relu",
            batch_first=True,
            bidirectional=False,
            num_layers=num_layers,
            dropout=rnn_dropout_rate,
        )
        self.iafs = []
        self.z_q_0 = nn.Parameter(torch.zeros(z_dim))
        # define a (trainable) parameter for the initial hidden state of the rnn
        self.h_0 = nn.Parameter(torch.zeros(1, 1, rnn_dim))

    def forward(
        self,
        mini_batch,
        mini_batch_reversed,
        mini_batch_mask,
        mini_batch_seq_lengths,
        annealing_factor=1.0,
    ):
        # this is the number of time steps we need to process in the mini-batch
        T_max = mini_batch.size(1)

        # if on gpu we need the fully broadcast view of the rnn initial state
        # to be in contiguous gpu memory
        h_0_contig = self.h_0.expand(
            1, mini_batch.size(0), self.rnn.hidden_size
        ).contiguous()
        # push the observed x's through the rnn;
        # rnn_output contains the hidden state at each time step
        rnn_output, _ = self.rnn(mini_batch_reversed, h_0_contig)
        # reverse the time-ordering in the hidden state and un-pack it
        rnn_output = pad_and_reverse(rnn_output, mini_batch_seq_lengths)
        # set z_prev = z_q_0 to setup the recursive conditioning in q(z_t |...)
        z_prev = self.z_q_0.expand(mini_batch.size(0), self.z_q_0.size(0))

        zs = []
        for t in range(1, T_max + 1):
            # the next two lines assemble the distribution q(z_t | z_{t-1}, x_{t:T})
            z_loc, z_scale = self.combiner(z_prev, rnn_output[:, t - 1, :])
            z_dist = Normal(z_loc, z_scale)
            assert z_dist.event_shape == ()
            assert z_dist.batch_shape[-2:] == (
                len(mini_batch),
                self.z_q_0.size(0),
            )
            z_t = z_dist.rsample() * mini_batch_mask[:, t - 1 : t] * annealing_factor
            zs.append(z_t)
            # the latent sampled at this time step will be conditioned upon in the next time step
            # so keep track of it
            z_prev = z_t
        return torch.stack(zs, 1)


def build_guide():
    return DMMGuide(input_dim=6, z_dim=3, rnn_dim=8)


guide = torch.compile(build_guide())


def make():
    torch.manual_seed(0)
    sequences = (torch.rand(4, 5, 6) > 0.5).float()
    seq_lengths = torch.tensor([5, 3, 4, 2])
    batch_a = get_mini_batch(torch.tensor([0, 1, 2]), sequences, seq_lengths)
    batch_b = get_mini_batch(torch.tensor([1, 3]), sequences, seq_lengths)
    return build_guide(), [batch_a, batch_b]
