"""Tortoise TTS candidate reranking: each sampled code row goes through `fix_autoregressive_output` (`(codes == stop_token).nonzero()`, `if len(...) == 0`, `stop_token_indices.min().item()`) before CLVP scoring and `torch.topk`.

Source: neonbjb/tortoise-tts@8a2563ecabe93c4fb626f876dd0c52c966edef2f:tortoise/api.py:87-114
Also: the same file's TextToSpeech.tts, lines 459-476 (the CLVP loop over
sample batches, the in-place `batch[i] = fix_autoregressive_output(...)`,
clip_results concatenation and topk selection).
Kept: fix_autoregressive_output verbatim (the complaint print, calm-token
fill and the 45/45/248 ending); the per-batch loop, `clvp(text_tokens.repeat
(...), batch, return_loss=False)` and the best-k selection.
Simplified: CLVP is a small embedding-similarity module; no CVVP, no tqdm,
no temporary_cuda; 8 codes per sample, stop token 8192 -> vocab 8194.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def fix_autoregressive_output(codes, stop_token, complain=True):
    """
    This function performs some padding on coded audio that fixes a mismatch issue between what the diffusion model was
    trained on and what the autoregressive code generator creates (which has no padding or end).
    This is highly specific to the DVAE being used, so this particular coding will not necessarily work if used with
    a different DVAE. This can be inferred by feeding a audio clip padded with lots of zeros on the end through the DVAE
    and copying out the last few codes.

    Failing to do this padding will produce speech with a harsh end that sounds like "BLAH" or similar.
    """
    # Strip off the autoregressive stop token and add padding.
    stop_token_indices = (codes == stop_token).nonzero()
    if len(stop_token_indices) == 0:
        if complain:
            print("No stop tokens found in one of the generated voice clips. This typically means the spoken audio is "
                  "too long. In some cases, the output will still be good, though. Listen to it and if it is missing words, "
                  "try breaking up your input text.")
        return codes
    else:
        codes[stop_token_indices] = 83
    stm = stop_token_indices.min().item()
    codes[stm:] = 83
    if stm - 3 < codes.shape[0]:
        codes[-3] = 45
        codes[-2] = 45
        codes[-1] = 248

    return codes


class CLVP(nn.Module):
    """Contrastive text/speech-code scorer (stand-in with the same call signature)."""

    def __init__(self, num_text_tokens=32, num_speech_tokens=8194, dim=8):
        super().__init__()
        self.text_emb = nn.Embedding(num_text_tokens, dim)
        self.speech_emb = nn.Embedding(num_speech_tokens, dim)
        self.temperature = nn.Parameter(torch.tensor(1.0))

    def forward(self, text, speech_tokens, return_loss: bool):
        text_latents = F.normalize(self.text_emb(text).mean(dim=1), dim=-1)
        speech_latents = F.normalize(self.speech_emb(speech_tokens).mean(dim=1), dim=-1)
        sim = (text_latents * speech_latents).sum(dim=-1) * self.temperature.exp()
        if return_loss:
            raise NotImplementedError
        return sim


class CandidateSelector(nn.Module):
    """The CLVP branch of TextToSpeech.tts, from sampled codes to best_results."""

    def __init__(self, stop_mel_token=8192):
        super().__init__()
        self.stop_mel_token = stop_mel_token
        self.clvp = CLVP()

    def forward(self, samples, text_tokens, k=1):
        stop_mel_token = self.stop_mel_token
        clvp = self.clvp
        clip_results = []
        for batch in samples:
            for i in range(batch.shape[0]):
                batch[i] = fix_autoregressive_output(batch[i], stop_mel_token)
            clvp_out = clvp(text_tokens.repeat(batch.shape[0], 1), batch, return_loss=False)
            clip_results.append(clvp_out)
        clip_results = torch.cat(clip_results, dim=0)
        samples = torch.cat(samples, dim=0)
        best_results = samples[torch.topk(clip_results, k=k).indices]
        return best_results


def make():
    torch.manual_seed(0)
    selector = CandidateSelector().eval()
    text_tokens = torch.randint(0, 32, (1, 6))
    with_stop = torch.randint(0, 8192, (2, 8))
    with_stop[0, 5] = 8192
    with_stop[1, 3:] = 8192
    no_stop = torch.randint(0, 8192, (2, 8))
    no_stop[1, 6] = 8192
    return selector, [([with_stop], text_tokens), ([no_stop], text_tokens, 2)]


def build_selector():
    return torch.compile(CandidateSelector().eval())
