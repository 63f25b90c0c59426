"""Decision Transformer SequenceTrainer.train_step: predictions and targets are flattened and filtered with the boolean padding mask `[attention_mask.reshape(-1) > 0]`, then the loss is backpropagated, clipped, stepped, and reported with `.detach().cpu().item()`.

Source: kzl/decision-transformer@5605e40ce763bb27ff0cf5beb06210d08771e047:gym/decision_transformer/training/seq_trainer.py:7-38
Also: gym/decision_transformer/models/decision_transformer.py@046702e00101e48cef83cd05827b8bde2e4dd801
(DecisionTransformer.__init__/forward), gym/decision_transformer/training/trainer.py
(Trainer.__init__), gym/experiment.py (the MSE loss_fn lambda, AdamW).
Kept: train_step verbatim, DecisionTransformer.forward verbatim (timestep embeddings,
the (R, s, a) interleave, the stacked attention mask), Trainer's attributes.
Simplified: transformers' GPT2Model is a one-layer causal self-attention stand-in that
takes inputs_embeds/attention_mask and returns {'last_hidden_state': ...}; get_batch
returns a fixed padded batch (experiment.py samples it with numpy); AdamW runs with
lr 0 so repeated calls see the same weights; state_dim 3, act_dim 2, hidden 16, K 4.
"""
import torch
import torch.nn as nn


class GPT2Model(nn.Module):
    def __init__(self, n_embd, n_head=2):
        super().__init__()
        self.attn = nn.MultiheadAttention(n_embd, n_head, batch_first=True)
        self.ln_f = nn.LayerNorm(n_embd)

    def forward(self, inputs_embeds=None, attention_mask=None):
        seq = inputs_embeds.shape[1]
        causal = torch.triu(torch.ones(seq, seq, dtype=torch.bool, device=inputs_embeds.device), diagonal=1)
        h, _ = self.attn(inputs_embeds, inputs_embeds, inputs_embeds, attn_mask=causal,
                         key_padding_mask=attention_mask == 0, need_weights=False)
        return {'last_hidden_state': self.ln_f(torch.nan_to_num(h) + inputs_embeds)}


class TrajectoryModel(nn.Module):

    def __init__(self, state_dim, act_dim, max_length=None):
        super().__init__()

        self.state_dim = state_dim
        self.act_dim = act_dim
        self.max_length = max_length


class DecisionTransformer(TrajectoryModel):

    """
    This model uses GPT to model (Return_1, state_1, action_1, Return_2, state_2, ...)
    """

    def __init__(
            self,
            state_dim,
            act_dim,
            hidden_size,
            max_length=None,
            max_ep_len=4096,
            action_tanh=True,
            **kwargs
    ):
        super().__init__(state_dim, act_dim, max_length=max_length)

        self.hidden_size = hidden_size

        # note: the only difference between this GPT2Model and the default Huggingface version
        # is that the positional embeddings are removed (since we'll add those ourselves)
        self.transformer = GPT2Model(hidden_size, **kwargs)

        self.embed_timestep = nn.Embedding(max_ep_len, hidden_size)
        self.embed_return = torch.nn.Linear(1, hidden_size)
        self.embed_state = torch.nn.Linear(self.state_dim, hidden_size)
        self.embed_action = torch.nn.Linear(self.act_dim, hidden_size)

        self.embed_ln = nn.LayerNorm(hidden_size)

        # note: we don't predict states or returns for the paper
        self.predict_state = torch.nn.Linear(hidden_size, self.state_dim)
        self.predict_action = nn.Sequential(
            *([nn.Linear(hidden_size, self.act_dim)] + ([nn.Tanh()] if action_tanh else []))
        )
        self.predict_return = torch.nn.Linear(hidden_size, 1)

    def forward(self, states, actions, rewards, returns_to_go, timesteps, attention_mask=None):

        batch_size, seq_length = states.shape[0], states.shape[1]

        if attention_mask is None:
            # attention mask for GPT: 1 if can be attended to, 0 if not
            attention_mask = torch.ones((batch_size, seq_length), dtype=torch.long)

        # embed each modality with a different head
        state_embeddings = self.embed_state(states)
        action_embeddings = self.embed_action(actions)
        returns_embeddings = self.embed_return(returns_to_go)
        time_embeddings = self.embed_timestep(timesteps)

        # time embeddings are treated similar to positional embeddings
        state_embeddings = state_embeddings + time_embeddings
        action_embeddings = action_embeddings + time_embeddings
        returns_embeddings = returns_embeddings + time_embeddings

        # this makes the sequence look like (R_1, s_1, a_1, R_2, s_2, a_2, ...)
        # which works nice in an autoregressive sense since states predict actions
        stacked_inputs = torch.stack(
            (returns_embeddings, state_embeddings, action_embeddings), dim=1
        ).permute(0, 2, 1, 3).reshape(batch_size, 3*seq_length, self.hidden_size)
        stacked_inputs = self.embed_ln(stacked_inputs)

        # to make the attention mask fit the stacked inputs, have to stack it as well
        stacked_attention_mask = torch.stack(
            (attention_mask, attention_mask, attention_mask), dim=1
        ).permute(0, 2, 1).reshape(batch_size, 3*seq_length)

        # we feed in the input embeddings (not word indices as in NLP) to the model
        transformer_outputs = self.transformer(
            inputs_embeds=stacked_inputs,
            attention_mask=stacked_attention_mask,
        )
        x = transformer_outputs['last_hidden_state']

        # reshape x so that the second dimension corresponds to the original
        # returns (0), actions (1), or states (2); i.e. x[:,1,t] is the token for a_t
        x = x.reshape(batch_size, seq_length, 3, self.hidden_size).permute(0, 2, 1, 3)

        # get predictions
        return_preds = self.predict_return(x[:,2])  # predict next return given state and action
        state_preds = self.predict_state(x[:,2])    # predict next state given state and action
        action_preds = self.predict_action(x[:,1])  # predict next action given state

        return state_preds, action_preds, return_preds


class Trainer:

    def __init__(self, model, optimizer, batch_size, get_batch, loss_fn, scheduler=None, eval_fns=None):
        self.model = model
        self.optimizer = optimizer
        self.batch_size = batch_size
        self.get_batch = get_batch
        self.loss_fn = loss_fn
        self.scheduler = scheduler
        self.eval_fns = [] if eval_fns is None else eval_fns
        self.diagnostics = dict()


class SequenceTrainer(Trainer):

    def train_step(self):
        states, actions, rewards, dones, rtg, timesteps, attention_mask = self.get_batch(self.batch_size)
        action_target = torch.clone(actions)

        state_preds, action_preds, reward_preds = self.model.forward(
            states, actions, rewards, rtg[:,:-1], timesteps, attention_mask=attention_mask,
        )

        act_dim = action_preds.shape[2]
        action_preds = action_preds.reshape(-1, act_dim)[attention_mask.reshape(-1) > 0]
        action_target = action_target.reshape(-1, act_dim)[attention_mask.reshape(-1) > 0]

        loss = self.loss_fn(
            None, action_preds, None,
            None, action_target, None,
        )

        self.optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), .25)
        self.optimizer.step()

        with torch.no_grad():
            self.diagnostics['training/action_error'] = torch.mean((action_preds-action_target)**2).detach().cpu().item()

        return loss.detach().cpu().item()


def make_batch_fn(K=4, state_dim=3, act_dim=2):
    g = torch.Generator().manual_seed(1)
    states = torch.randn(2, K, state_dim, generator=g)
    actions = torch.rand(2, K, act_dim, generator=g) * 2 - 1
    rewards = torch.randn(2, K, 1, generator=g)
    dones = torch.zeros(2, K, dtype=torch.long)
    rtg = torch.randn(2, K + 1, 1, generator=g)
    timesteps = torch.tensor([[0, 0, 0, 1], [3, 4, 5, 6]])
    # left padding, as experiment.py's get_batch builds it
    attention_mask = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])

    def get_batch(batch_size=256, max_len=K):
        return states, actions, rewards, dones, rtg, timesteps, attention_mask

    return get_batch


def build_trainer():
    model = DecisionTransformer(state_dim=3, act_dim=2, hidden_size=16, max_length=4, max_ep_len=32)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.0, weight_decay=1e-4)
    return SequenceTrainer(
        model=model,
        optimizer=optimizer,
        batch_size=2,
        get_batch=make_batch_fn(),
        loss_fn=lambda s_hat, a_hat, r_hat, s, a, r: torch.mean((a_hat - a)**2),
    )


trainer = build_trainer()
train_step = torch.compile(trainer.train_step)


def make():
    torch.manual_seed(0)
    return build_trainer().train_step, [()]
