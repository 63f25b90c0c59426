"""Megatron-DeepSpeed GPT loss: `post_language_model_processing` projects to the vocabulary and calls `vocab_parallel_cross_entropy`, whose `_VocabParallelCrossEntropy` autograd Function all-reduces over the tensor-parallel group, masks out-of-partition targets with masked assignment and writes the softmax in place; the pipeline `CrossEntropy` applies the loss mask.

Source: bigscience-workshop/Megatron-DeepSpeed@17e4536745a1dc18765490a004a535cfad757b11:megatron/mpu/cross_entropy.py:24-110
Also: megatron/model/gpt_model.py (post_language_model_processing,
CrossEntropy), megatron/model/language_model.py (parallel_lm_logits),
megatron/mpu/utils.py (VocabUtility), megatron/mpu/initialize.py (group getters).
Kept: _VocabParallelCrossEntropy (forward/backward) and
vocab_parallel_cross_entropy verbatim; post_language_model_processing and
CrossEntropy verbatim except `get_args()`.
Simplified: the tensor-parallel group is the default group of a one-process
gloo run started in make() (HashStore, no network); parallel_lm_logits is
the single-rank matmul with the word embeddings; a one-layer stand-in
language model produces `lm_output`; vocab 16, hidden 8.
"""
import torch
import torch.distributed as dist
import torch.nn.functional as F


def get_tensor_model_parallel_group():
    return dist.group.WORLD


def get_tensor_model_parallel_rank():
    return dist.get_rank(group=get_tensor_model_parallel_group())


def get_tensor_model_parallel_world_size():
    return dist.get_world_size(group=get_tensor_model_parallel_group())


class VocabUtility:
    """Split the vocabulary into `world_size` chunks amd return the
        first and last index of the vocabulary belonging to the `rank`
        partition: Note that indecies in [fist, last)"""

    @staticmethod
    def vocab_range_from_per_partition_vocab_size(per_partition_vocab_size,
                                                  rank, world_size):
        index_f = rank * per_partition_vocab_size
        index_l = index_f + per_partition_vocab_size
        return index_f, index_l


class _VocabParallelCrossEntropy(torch.autograd.Function):

    @staticmethod
    def forward(ctx, vocab_parallel_logits, target):

        # Maximum value along vocab dimension across all GPUs.
        logits_max = torch.max(vocab_parallel_logits, dim=-1)[0]
        torch.distributed.all_reduce(logits_max,
                                     op=torch.distributed.ReduceOp.MAX,
                                     group=get_tensor_model_parallel_group())
        # Subtract the maximum value.
        vocab_parallel_logits.sub_(logits_max.unsqueeze(dim=-1))

        # Get the partition's vocab indecies
        get_vocab_range = VocabUtility.vocab_range_from_per_partition_vocab_size
        partition_vocab_size = vocab_parallel_logits.size()[-1]
        rank = get_tensor_model_parallel_rank()
        world_size = get_tensor_model_parallel_world_size()
        vocab_start_index, vocab_end_index = get_vocab_range(
            partition_vocab_size, rank, world_size)

        # Create a mask of valid vocab ids (1 means it needs to be masked).
        target_mask = (target < vocab_start_index) | (target >= vocab_end_index)
        masked_target = target.clone() - vocab_start_index
        masked_target[target_mask] = 0

        # Get predicted-logits = logits[target].
        # For Simplicity, we convert logits to a 2-D tensor with size
        # [*, partition-vocab-size] and target to a 1-D tensor of size [*].
        logits_2d = vocab_parallel_logits.view(-1, partition_vocab_size)
        masked_target_1d = masked_target.view(-1)
        arange_1d = torch.arange(start=0, end=logits_2d.size()[0],
                                 device=logits_2d.device)
        predicted_logits_1d = logits_2d[arange_1d, masked_target_1d]
        predicted_logits_1d = predicted_logits_1d.clone().contiguous()
        predicted_logits = predicted_logits_1d.view_as(target)
        predicted_logits[target_mask] = 0.0
        # All reduce is needed to get the chunks from other GPUs.
        torch.distributed.all_reduce(predicted_logits,
                                     op=torch.distributed.ReduceOp.SUM,
                                     group=get_tensor_model_parallel_group())

        # Sum of exponential of logits along vocab dimension across all GPUs.
        exp_logits = vocab_parallel_logits
        torch.exp(vocab_parallel_logits, out=exp_logits)
        sum_exp_logits = exp_logits.sum(dim=-1)
        torch.distributed.all_reduce(sum_exp_logits,
                                     op=torch.distributed.ReduceOp.SUM,
                                     group=get_tensor_model_parallel_group())

        # Loss = log(sum(exp(logits))) - predicted-logit.
        loss = torch.log(sum_exp_logits) - predicted_logits

        # Store softmax, target-mask and masked-target for backward pass.
        exp_logits.div_(sum_exp_logits.unsqueeze(dim=-1))
        ctx.save_for_backward(exp_logits, target_mask, masked_target_1d)

        return loss

    @staticmethod
    def backward(ctx, grad_output):

        # Retreive tensors from the forward path.
        softmax, target_mask, masked_target_1d = ctx.saved_tensors

        # All the inputs have softmax as thier gradient.
        grad_input = softmax
        # For simplicity, work with the 2D gradient.
        partition_vocab_size = softmax.size()[-1]
        grad_2d = grad_input.view(-1, partition_vocab_size)

        # Add the gradient from matching classes.
        arange_1d = torch.arange(start=0, end=grad_2d.size()[0],
                                 device=grad_2d.device)
        grad_2d[arange_1d, masked_target_1d] -= (
            1.0 - target_mask.view(-1).float())

        # Finally elementwise multiplication with the output gradients.
        grad_input.mul_(grad_output.unsqueeze(dim=-1))

        return grad_input, None


def vocab_parallel_cross_entropy(vocab_parallel_logits, target):
    """Helper function for the cross entropy."""
    # cloning is required for backward hook to work properly
    # see https://github.com/bigscience-workshop/Megatron-DeepSpeed/pull/155
    return _VocabParallelCrossEntropy.apply(vocab_parallel_logits.clone(), target)


def parallel_lm_logits(input_, word_embeddings_weight, parallel_output, bias=None):
    """LM logits using word embedding weights (single tensor-parallel rank)."""
    if bias is None:
        logits_parallel = F.linear(input_, word_embeddings_weight)
    else:
        logits_parallel = F.linear(input_, word_embeddings_weight, bias)
    return logits_parallel


def post_language_model_processing(lm_output, labels, logit_weights,
                                   get_key_value, parallel_output,
                                   forward_method_parallel_output,
                                   fp16_lm_cross_entropy):
    if get_key_value:
        lm_output, presents = lm_output

    # Output.
    if forward_method_parallel_output is not None:
        parallel_output = forward_method_parallel_output
    output = parallel_lm_logits(
        lm_output,
        logit_weights,
        parallel_output)

    if get_key_value:
        output = [output, presents]

    if labels is None:
        return output
    else:
        if fp16_lm_cross_entropy:
            assert output.dtype == torch.half
            loss = vocab_parallel_cross_entropy(output, labels)
        else:
            loss = vocab_parallel_cross_entropy(output.float(), labels)
        return loss


def CrossEntropy(output, labels):
    labels, loss_mask = labels[0], labels[1]

    losses = vocab_parallel_cross_entropy(output.contiguous().float(), labels)
    loss_mask = loss_mask.view(-1)
    loss = torch.sum(losses.view(-1) * loss_mask) / loss_mask.sum()
    return loss


class GPTModel(torch.nn.Module):
    def __init__(self, vocab_size=16, hidden_size=8, fp16_lm_cross_entropy=False, parallel_output=True):
        super().__init__()
        self.word_embeddings = torch.nn.Embedding(vocab_size, hidden_size)
        self.language_model = torch.nn.Linear(hidden_size, hidden_size)
        self.fp16_lm_cross_entropy = fp16_lm_cross_entropy
        self.parallel_output = parallel_output
        self.post_process = True

    def word_embeddings_weight(self):
        return self.word_embeddings.weight

    def forward(self, input_ids, labels=None, loss_mask=None, get_key_value=False,
                forward_method_parallel_output=None):
        lm_output = torch.tanh(self.language_model(self.word_embeddings(input_ids)))
        if self.post_process:
            if loss_mask is not None:
                # pipeline engine path: logits first, then the loss_fn
                logits = post_language_model_processing(
                    lm_output, None, self.word_embeddings_weight(), get_key_value,
                    self.parallel_output, forward_method_parallel_output, self.fp16_lm_cross_entropy)
                return CrossEntropy(logits, (labels, loss_mask))
            return post_language_model_processing(
                lm_output, labels,
                self.word_embeddings_weight(),
                get_key_value,
                self.parallel_output,
                forward_method_parallel_output,
                self.fp16_lm_cross_entropy)
        else:
            return lm_output


def init_single_process_group():
    if not dist.is_initialized():
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)


def make():
    init_single_process_group()
    torch.manual_seed(0)
    model = GPTModel()
    ids = torch.randint(0, 16, (2, 5))
    labels = torch.randint(0, 16, (2, 5))
    loss_mask = torch.ones(2, 5)
    loss_mask[1, 3:] = 0
    return model, [(ids,), (ids, labels), (ids, labels, loss_mask)]


def train():
    init_single_process_group()
    model = torch.compile(GPTModel())
    return model
