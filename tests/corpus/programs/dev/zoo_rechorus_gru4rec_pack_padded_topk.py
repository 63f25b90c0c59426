"""ReChorus GRU4Rec forward: sorts the batch by history length with torch.topk(k=len(lengths)), packs with
pack_padded_sequence(..., lengths.cpu()), runs an nn.GRU, unsorts with a second topk and scores the
candidate items; `self.check_list = []` is reset inside forward; the batch is a feed_dict.

Source: THUwangcy/ReChorus@e58d752558634d42be60de561d6f74df748583cc:src/models/sequential/GRU4Rec.py:14-85,
src/models/BaseModel.py:15-46,154-186,216-228
Kept: GRU4RecBase (_base_init, _base_define_params, forward) and GRU4Rec verbatim (tab indentation);
BaseModel.__init__/init_weights, GeneralModel.__init__/loss and SequentialModel.__init__ as written.
Simplified: argparse-registration static methods, the Dataset inner classes, save/load helpers and
the reader are dropped (an argparse.Namespace and a two-field corpus object stand in);
12 items, emb/hidden 8, histories up to 5, 1 positive + 2 negatives per row in training and
6 candidates in evaluation.
"""
import argparse

import torch
import torch.nn as nn



class BaseModel(nn.Module):
	reader, runner = None, None  # choose helpers in specific model classes
	extra_log_args = []

	@staticmethod
	def init_weights(m):
		if 'Linear' in str(type(m)):
			nn.init.normal_(m.weight, mean=0.0, std=0.01)
			if m.bias is not None:
				nn.init.normal_(m.bias, mean=0.0, std=0.01)
		elif 'Embedding' in str(type(m)):
			nn.init.normal_(m.weight, mean=0.0, std=0.01)

	def __init__(self, args, corpus):
		super(BaseModel, self).__init__()
		self.device = args.device
		self.model_path = args.model_path
		self.buffer = args.buffer
		self.optimizer = None
		self.check_list = list()  # observe tensors in check_list every check_epoch



class GeneralModel(BaseModel):
	reader, runner = 'BaseReader', 'BaseRunner'

	def __init__(self, args, corpus):
		super().__init__(args, corpus)
		self.user_num = corpus.n_users
		self.item_num = corpus.n_items
		self.num_neg = args.num_neg
		self.dropout = args.dropout
		self.test_all = args.test_all

	def loss(self, out_dict: dict) -> torch.Tensor:
		"""
		BPR ranking loss with optimization on multiple negative samples (a little different now to follow the paper ↓)
		"Recurrent neural networks with top-k gains for session-based recommendations"
		:param out_dict: contain prediction with [batch_size, -1], the first column for positive, the rest for negative
		:return:
		"""
		predictions = out_dict['prediction']
		pos_pred, neg_pred = predictions[:, 0], predictions[:, 1:]
		neg_softmax = (neg_pred - neg_pred.max()).softmax(dim=1)
		loss = -(((pos_pred[:, None] - neg_pred).sigmoid() * neg_softmax).sum(dim=1)).clamp(min=1e-8,max=1-1e-8).log().mean()
		# neg_pred = (neg_pred * neg_softmax).sum(dim=1)
		# loss = F.softplus(-(pos_pred - neg_pred)).mean()
		# ↑ For numerical stability, use 'softplus(-x)' instead of '-log_sigmoid(x)'
		return loss


class SequentialModel(GeneralModel):
	reader = 'SeqReader'

	def __init__(self, args, corpus):
		super().__init__(args, corpus)
		self.history_max = args.history_max



class GRU4RecBase(object):
	def _base_init(self, args, corpus):
		self.emb_size = args.emb_size
		self.hidden_size = args.hidden_size
		self._base_define_params()
		self.apply(self.init_weights)
	
	def _base_define_params(self):	
		self.i_embeddings = nn.Embedding(self.item_num, self.emb_size)
		self.rnn = nn.GRU(input_size=self.emb_size, hidden_size=self.hidden_size, batch_first=True)
		# self.pred_embeddings = nn.Embedding(self.item_num, self.hidden_size)
		self.out = nn.Linear(self.hidden_size, self.emb_size)

	def forward(self, feed_dict):
		self.check_list = []
		i_ids = feed_dict['item_id']  # [batch_size, -1]
		history = feed_dict['history_items']  # [batch_size, history_max]
		lengths = feed_dict['lengths']  # [batch_size]

		his_vectors = self.i_embeddings(history)

		# Sort and Pack
		sort_his_lengths, sort_idx = torch.topk(lengths, k=len(lengths))
		sort_his_vectors = his_vectors.index_select(dim=0, index=sort_idx)
		history_packed = torch.nn.utils.rnn.pack_padded_sequence(
			sort_his_vectors, sort_his_lengths.cpu(), batch_first=True)

		# RNN
		output, hidden = self.rnn(history_packed, None)

		# Unsort
		unsort_idx = torch.topk(sort_idx, k=len(lengths), largest=False)[1]
		rnn_vector = hidden[-1].index_select(dim=0, index=unsort_idx)

		# Predicts
		# pred_vectors = self.pred_embeddings(i_ids)
		pred_vectors = self.i_embeddings(i_ids)
		rnn_vector = self.out(rnn_vector)
		prediction = (rnn_vector[:, None, :] * pred_vectors).sum(-1)
		
		u_v = rnn_vector.repeat(1,i_ids.shape[1]).view(i_ids.shape[0],i_ids.shape[1],-1)
		i_v = pred_vectors 
		
		return {'prediction': prediction.view(feed_dict['batch_size'], -1),
				'u_v': u_v, 'i_v': i_v}

class GRU4Rec(SequentialModel, GRU4RecBase):
	reader = 'SeqReader'
	runner = 'BaseRunner'
	extra_log_args = ['emb_size', 'hidden_size']

	def __init__(self, args, corpus):
		SequentialModel.__init__(self, args, corpus)
		self._base_init(args, corpus)

	def forward(self, feed_dict):
		out_dict = GRU4RecBase.forward(self, feed_dict)
		return {'prediction': out_dict['prediction']}


class Corpus:
	n_users = 4
	n_items = 12


def parse_args():
	return argparse.Namespace(device=torch.device('cpu'), model_path='', buffer=1, num_neg=2, dropout=0,
							  test_all=0, history_max=5, emb_size=8, hidden_size=8)


model = torch.compile(GRU4Rec(parse_args(), Corpus()))


def make():
	torch.manual_seed(0)
	net = GRU4Rec(parse_args(), Corpus())
	history = torch.tensor([[3, 5, 0, 0, 0], [1, 2, 7, 9, 4], [6, 8, 2, 0, 0]])
	lengths = torch.tensor([2, 5, 3])
	train_batch = {'user_id': torch.tensor([1, 2, 3]), 'item_id': torch.tensor([[4, 10, 11], [5, 1, 3], [9, 7, 2]]),
				   'history_items': history, 'lengths': lengths, 'batch_size': 3, 'phase': 'train'}
	dev_batch = {'user_id': torch.tensor([1, 2, 3]), 'item_id': torch.randint(1, 12, (3, 6)),
				 'history_items': history, 'lengths': lengths, 'batch_size': 3, 'phase': 'dev'}
	return net, [(train_batch,), (dev_batch,)]
