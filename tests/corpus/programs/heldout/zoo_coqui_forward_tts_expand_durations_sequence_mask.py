"""Coqui TTS ForwardTTS inference: format_durations rounds predicted durations, then `sequence_mask(y_lengths, None)` sizes the decoder mask from `sequence_length.max()` and generate_path expands the encoder output.

Source: coqui-ai/TTS@dbf1a08a0d4e47fdad6172e433eeb34bc6b13b4e:TTS/tts/models/forward_tts.py:310-372,417-451,689-714
Also: TTS/tts/utils/helpers.py:43-57,148-169 (sequence_mask, convert_pad_shape, generate_path).
Kept: generate_attn (staticmethod with its `y_mask is None` branch and the
masked assignment `y_lengths[y_lengths < 1] = 1`), expand_encoder_outputs,
format_durations (masked assignment, round), _forward_decoder's
`sequence_mask(y_lengths, None)` and the hasattr(pos_encoder) check, the
inference tail (o_dr, y_lengths = o_dr.sum(1), decoder, outputs dict).
Simplified: encoder and duration predictor are a Conv1d each, the decoder
is a Conv1d; no pitch/energy predictors (use_pitch/use_energy False), no
speaker embedding; hidden 8, 4 output channels.
"""
import torch
from torch import nn
from torch.nn import functional as F


def sequence_mask(sequence_length, max_len=None):
    """Create a sequence mask for filtering padding in a sequence tensor."""
    if max_len is None:
        max_len = sequence_length.max()
    seq_range = torch.arange(max_len, dtype=sequence_length.dtype, device=sequence_length.device)
    # B x T_max
    return seq_range.unsqueeze(0) < sequence_length.unsqueeze(1)


def convert_pad_shape(pad_shape):
    l = pad_shape[::-1]
    pad_shape = [item for sublist in l for item in sublist]
    return pad_shape


def generate_path(duration, mask):
    """
    Shapes:
        - duration: :math:`[B, T_en]`
        - mask: :math:'[B, T_en, T_de]`
        - path: :math:`[B, T_en, T_de]`
    """
    b, t_x, t_y = mask.shape
    cum_duration = torch.cumsum(duration, 1)

    cum_duration_flat = cum_duration.view(b * t_x)
    path = sequence_mask(cum_duration_flat, t_y).to(mask.dtype)
    path = path.view(b, t_x, t_y)
    path = path - F.pad(path, convert_pad_shape([[0, 0], [1, 0], [0, 0]]))[:, :-1]
    path = path * mask
    return path


class ForwardTTSArgs:
    hidden_channels = 8
    out_channels = 4
    num_chars = 20
    length_scale = 1.0
    use_pitch = False
    use_energy = False


class DurationPredictor(nn.Module):
    def __init__(self, hidden_channels):
        super().__init__()
        self.proj = nn.Conv1d(hidden_channels, 1, 3, padding=1)

    def forward(self, x, x_mask):
        return self.proj(x * x_mask) * x_mask


class ForwardTTS(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.length_scale = args.length_scale
        self.emb = nn.Embedding(args.num_chars, args.hidden_channels)
        self.encoder = nn.Conv1d(args.hidden_channels, args.hidden_channels, 3, padding=1)
        self.duration_predictor = DurationPredictor(args.hidden_channels)
        self.decoder = nn.Conv1d(args.hidden_channels, args.out_channels, 1)

    @staticmethod
    def generate_attn(dr, x_mask, y_mask=None):
        """Generate an attention mask from the durations."""
        # compute decode mask from the durations
        if y_mask is None:
            y_lengths = dr.sum(1).long()
            y_lengths[y_lengths < 1] = 1
            y_mask = torch.unsqueeze(sequence_mask(y_lengths, None), 1).to(dr.dtype)
        attn_mask = torch.unsqueeze(x_mask, -1) * torch.unsqueeze(y_mask, 2)
        attn = generate_path(dr, attn_mask.squeeze(1)).to(dr.dtype)
        return attn

    def expand_encoder_outputs(self, en, dr, x_mask, y_mask):
        """Generate attention alignment map from durations and
        expand encoder outputs
        """
        attn = self.generate_attn(dr, x_mask, y_mask)
        o_en_ex = torch.matmul(attn.squeeze(1).transpose(1, 2).to(en.dtype), en.transpose(1, 2)).transpose(1, 2)
        return o_en_ex, attn

    def format_durations(self, o_dr_log, x_mask):
        """Format predicted durations."""
        o_dr = (torch.exp(o_dr_log) - 1) * x_mask * self.length_scale
        o_dr[o_dr < 1] = 1.0
        o_dr = torch.round(o_dr)
        return o_dr

    def _forward_encoder(self, x, x_mask, g=None):
        x_emb = self.emb(x)
        o_en = self.encoder(torch.transpose(x_emb, 1, -1) * x_mask) * x_mask
        return o_en, x_mask, g, x_emb

    def _forward_decoder(self, o_en, dr, x_mask, y_lengths, g):
        y_mask = torch.unsqueeze(sequence_mask(y_lengths, None), 1).to(o_en.dtype)
        # expand o_en with durations
        o_en_ex, attn = self.expand_encoder_outputs(o_en, dr, x_mask, y_mask)
        # positional encoding
        if hasattr(self, "pos_encoder"):
            o_en_ex = self.pos_encoder(o_en_ex, y_mask)
        # decoder pass
        o_de = self.decoder(o_en_ex) * y_mask
        return o_de.transpose(1, 2), attn.transpose(1, 2)

    @torch.no_grad()
    def inference(self, x, aux_input={"d_vectors": None, "speaker_ids": None}):  # pylint: disable=unused-argument
        g = None
        x_lengths = torch.tensor(x.shape[1:2]).to(x.device)
        x_mask = torch.unsqueeze(sequence_mask(x_lengths, x.shape[1]), 1).to(x.dtype).float()
        # encoder pass
        o_en, x_mask, g, _ = self._forward_encoder(x, x_mask, g)
        # duration predictor pass
        o_dr_log = self.duration_predictor(o_en, x_mask)
        o_dr = self.format_durations(o_dr_log, x_mask).squeeze(1)
        y_lengths = o_dr.sum(1)
        o_pitch = None
        o_energy = None
        # decoder pass
        o_de, attn = self._forward_decoder(o_en, o_dr, x_mask, y_lengths, g=None)
        outputs = {
            "model_outputs": o_de,
            "alignments": attn,
            "pitch": o_pitch,
            "energy": o_energy,
            "durations_log": o_dr_log,
        }
        return outputs


model = ForwardTTS(ForwardTTSArgs()).eval()
inference = torch.compile(model.inference)


def make():
    torch.manual_seed(0)
    model = ForwardTTS(ForwardTTSArgs()).eval()
    with torch.no_grad():
        model.duration_predictor.proj.bias.fill_(1.0)
    x = torch.randint(0, 20, (1, 6))
    return model.inference, [(x,), (x[:, :3],)]
