"""ReChorus DIN (CTR): embeddings looked up per feature name from a ModuleDict, a DIN attention whose
padding mask compares `torch.arange` positions with the history lengths, `masked_fill` with a
`torch.tensor(mask_value)`, and a `torch.cuda.empty_cache()` call inside attention(); MLP blocks with
BatchNorm and the Dice activation.

Source: THUwangcy/ReChorus@e58d752558634d42be60de561d6f74df748583cc:src/models/context_seq/DIN.py:19-181,
src/utils/layers.py:201-285 (MLP_Block, Dice), src/models/BaseModel.py:15-46,154-170,247-272,
src/models/BaseContextModel.py:73-81,126-141
Kept: DINBase (_define_init with eval() of the layer strings, _define_params_DIN, attention,
get_all_embedding, forward, att_dnn) and DINCTR verbatim; MLP_Block and Dice verbatim; the
__init__ chain BaseModel -> GeneralModel -> CTRModel -> ContextCTRModel -> ContextSeqCTRModel as
written (CTRModel.loss kept).
Simplified: argparse registration, Dataset inner classes and the reader are dropped (an
argparse.Namespace and a corpus object with the feature names stand in); one user feature, one
item feature, no situation features; emb 8, layers [8]; batch 4, histories up to 5.
"""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as fn


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


class CTRModel(GeneralModel):
	reader, runner = 'BaseReader', 'CTRRunner'

	def __init__(self, args, corpus):
		super().__init__(args, corpus)
		self.loss_n = args.loss_n
		if self.loss_n == 'BCE':
			self.loss_fn = nn.BCELoss()

	def loss(self, out_dict: dict) -> torch.Tensor:
		"""
		MSE/BCE loss for CTR model, out_dict should include 'label' and 'prediction' as keys
		"""
		if self.loss_n == 'BCE':
			loss = self.loss_fn(out_dict['prediction'],out_dict['label'].float())
		elif self.loss_n == 'MSE':
			predictions = out_dict['prediction']
			labels = out_dict['label']
			loss = ((predictions-labels)**2).mean()
		else:
			raise ValueError('Undefined loss function: {}'.format(self.loss_n))
		return loss


class ContextCTRModel(CTRModel):
	# context model for CTR prediction tasks
	reader = 'ContextReader'

	def __init__(self, args, corpus):
		super().__init__(args, corpus)
		self.context_features = corpus.user_feature_names + corpus.item_feature_names + corpus.situation_feature_names\
					+ ['user_id','item_id']
		self.feature_max = corpus.feature_max


class ContextSeqCTRModel(ContextCTRModel):
	reader = 'ContextSeqReader'

	def __init__(self, args, corpus):
		super().__init__(args, corpus)
		self.history_max = args.history_max
		self.add_historical_situations = args.add_historical_situations


class MLP_Block(nn.Module):
	'''
	Reference: FuxiCTR
	https://github.com/reczoo/FuxiCTR/blob/v2.0.1/fuxictr/pytorch/layers/blocks/mlp_block.py
	'''
	def __init__(self, input_dim, hidden_units=[], 
				 hidden_activations="ReLU", output_dim=None, output_activation=None, 
				 dropout_rates=0.0, batch_norm=False, 
				 layer_norm=False, norm_before_activation=True,
				 use_bias=True):
		super(MLP_Block, self).__init__()
		dense_layers = []
		if not isinstance(dropout_rates, list):
			dropout_rates = [dropout_rates] * len(hidden_units)
		if not isinstance(hidden_activations, list):
			hidden_activations = [hidden_activations] * len(hidden_units)
		hidden_activations = [getattr(nn, activation)()
                    if activation != "Dice" else Dice(emb_size) for activation, emb_size in zip(hidden_activations, hidden_units)]
		hidden_units = [input_dim] + hidden_units
		for idx in range(len(hidden_units) - 1):
			dense_layers.append(nn.Linear(hidden_units[idx], hidden_units[idx + 1], bias=use_bias))
			if norm_before_activation:
				if batch_norm:
					dense_layers.append(nn.BatchNorm1d(hidden_units[idx + 1]))
				elif layer_norm:
					dense_layers.append(nn.LayerNorm(hidden_units[idx + 1]))
			if hidden_activations[idx]:
				dense_layers.append(hidden_activations[idx])
			if not norm_before_activation:
				if batch_norm:
					dense_layers.append(nn.BatchNorm1d(hidden_units[idx + 1]))
				elif layer_norm:
					dense_layers.append(nn.LayerNorm(hidden_units[idx + 1]))
			if dropout_rates[idx] > 0:
				dense_layers.append(nn.Dropout(p=dropout_rates[idx]))
		if output_dim is not None:
			dense_layers.append(nn.Linear(hidden_units[-1], output_dim, bias=use_bias))
		if output_activation is not None:
			dense_layers.append(getattr(nn, output_activation)())
		self.mlp = nn.Sequential(*dense_layers) # * used to unpack list
	
	def forward(self, inputs):
		return self.mlp(inputs)


class Dice(nn.Module):
	"""The Data Adaptive Activation Function in DIN,which can be viewed as a generalization of PReLu and can adaptively adjust the rectified point according to distribution of input data.

	Input shape:
		- 2 dims: [batch_size, embedding_size(features)]
		- 3 dims: [batch_size, num_features, embedding_size(features)]

	Output shape:
		- Same shape as input.

	References
		- [Zhou G, Zhu X, Song C, et al. Deep interest network for click-through rate prediction[C]//Proceedings of the 24th ACM SIGKDD International Conference on Knowledge Discovery & Data Mining. ACM, 2018: 1059-1068.](https://arxiv.org/pdf/1706.06978.pdf)
		- https://github.com/zhougr1993/DeepInterestNetwork, https://github.com/fanoping/DIN-pytorch
	"""

	def __init__(self, emb_size, dim=2, epsilon=1e-8, device='cpu'):
		super(Dice, self).__init__()
		assert dim == 2 or dim == 3

		self.bn = nn.BatchNorm1d(emb_size, eps=epsilon)
		self.sigmoid = nn.Sigmoid()
		self.dim = dim

		# wrap alpha in nn.Parameter to make it trainable
		if self.dim == 2:
			self.alpha = nn.Parameter(torch.zeros((emb_size,)).to(device))
		else:
			self.alpha = nn.Parameter(torch.zeros((emb_size, 1)).to(device))

	def forward(self, x):
		assert x.dim() == self.dim
		if self.dim == 2:
			x_p = self.sigmoid(self.bn(x))
			out = self.alpha * (1 - x_p) * x + x_p * x
		else:
			x = torch.transpose(x, 1, 2)
			x_p = self.sigmoid(self.bn(x))
			out = self.alpha * (1 - x_p) * x + x_p * x
			out = torch.transpose(out, 1, 2)
		return out


class DINBase(object):

	def _define_init(self, args,corpus):
		self.user_context = ['user_id']+corpus.user_feature_names
		self.item_context = ['item_id']+corpus.item_feature_names
		self.situation_context = corpus.situation_feature_names
		self.item_feature_num = len(self.item_context)
		self.user_feature_num = len(self.user_context)
		self.situation_feature_num = len(corpus.situation_feature_names) if self.add_historical_situations else 0
  
		self.vec_size = args.emb_size
		self.att_layers = eval(args.att_layers)
		self.dnn_layers = eval(args.dnn_layers)
		self._define_params_DIN()
		self.apply(self.init_weights)

	def _define_params_DIN(self):
		self.embedding_dict = nn.ModuleDict()
		for f in self.user_context+self.item_context+self.situation_context:
			self.embedding_dict[f] = nn.Embedding(self.feature_max[f],self.vec_size) if f.endswith('_c') or f.endswith('_id') else\
					nn.Linear(1,self.vec_size,bias=False)

		pre_size = 4 * (self.item_feature_num+self.situation_feature_num) * self.vec_size
		self.att_mlp_layers = MLP_Block(input_dim=pre_size,hidden_units=self.att_layers,output_dim=1,
                                  hidden_activations='Sigmoid',dropout_rates=self.dropout,batch_norm=False)

		pre_size = (2*(self.item_feature_num+self.situation_feature_num)+self.item_feature_num
              +len(self.situation_context) + self.user_feature_num) * self.vec_size
		self.dnn_mlp_layers = MLP_Block(input_dim=pre_size,hidden_units=self.dnn_layers,output_dim=1,
                                  hidden_activations='Dice',dropout_rates=self.dropout,batch_norm=True,
                                  norm_before_activation=True)

	def attention(self, queries, keys, keys_length, mask_mat,softmax_stag=False, return_seq_weight=False):
		'''Reference:
			RecBole layers: SequenceAttLayer, https://github.com/RUCAIBox/RecBole/blob/master/recbole/model/layers.py#L294
			queries: batch * (if*vecsize)
		'''
		embedding_size = queries.shape[-1]  # H
		hist_len = keys.shape[1]  # T
		queries = queries.repeat(1, hist_len)
		queries = queries.view(-1, hist_len, embedding_size)
		# MLP Layer
		input_tensor = torch.cat(
			[queries, keys, queries - keys, queries * keys], dim=-1
		)
		output = torch.transpose(self.att_mlp_layers(input_tensor), -1, -2)
		# get mask
		output = output.squeeze(1)
		mask = mask_mat.repeat(output.size(0), 1)
		mask = mask >= keys_length.unsqueeze(1)
		# mask
		if softmax_stag:
			mask_value = -np.inf
		else:
			mask_value = 0.0
		output = output.masked_fill(mask=mask, value=torch.tensor(mask_value))
		output = output.unsqueeze(1)
		output = output / (embedding_size**0.5)
		# get the weight of each user's history list about the target item
		if softmax_stag:
			output = fn.softmax(output, dim=2)  # [B, 1, T]
		if not return_seq_weight:
			output = torch.matmul(output, keys)  # [B, 1, H]
		torch.cuda.empty_cache()
		return output.squeeze(dim=1)

	def get_all_embedding(self, feed_dict, merge_all=True):
		# item embedding
		item_feats_emb = torch.stack([self.embedding_dict[f](feed_dict[f]) if f.endswith('_c') or f.endswith('_id')
					else self.embedding_dict[f](feed_dict[f].float().unsqueeze(-1))
					for f in self.item_context],dim=-2) # batch * feature num * emb size
		# historical item embedding
		history_item_emb = torch.stack([self.embedding_dict[f](feed_dict['history_'+f]) if f.endswith('_c') or f.endswith('_id')
					else self.embedding_dict[f](feed_dict['history_'+f].float().unsqueeze(-1))
					for f in self.item_context],dim=-2) # batch * feature num * emb size
		# user embedding
		user_feats_emb = torch.stack([self.embedding_dict[f](feed_dict[f]) if f.endswith('_c') or f.endswith('_id')
					else self.embedding_dict[f](feed_dict[f].float().unsqueeze(-1))
					for f in self.user_context],dim=-2) # batch * feature num * emb size
		# situation embedding
		if len(self.situation_context):
			situ_feats_emb = torch.stack([self.embedding_dict[f](feed_dict[f]) if f.endswith('_c') or f.endswith('_id')
					else self.embedding_dict[f](feed_dict[f].float().unsqueeze(-1))
					for f in self.situation_context],dim=-2) # batch * feature num * emb size
		else:
			situ_feats_emb = None
		# historical situation embedding
		if self.add_historical_situations and len(self.situation_context):
			history_situ_emb = torch.stack([self.embedding_dict[f](feed_dict['history_'+f]) if f.endswith('_c') or f.endswith('_id')
					else self.embedding_dict[f](feed_dict['history_'+f].float().unsqueeze(-1))
					for f in self.situation_context],dim=-2) # batch * feature num * emb size
			history_emb = torch.cat([history_item_emb,history_situ_emb],dim=-2).flatten(start_dim=-2)
			item_num = item_feats_emb.shape[1]
			current_emb = torch.cat([item_feats_emb, situ_feats_emb.unsqueeze(1).repeat(1,item_num,1,1)],dim=-2).flatten(start_dim=-2)
		else:
			history_emb = history_item_emb.flatten(start_dim=-2)
			current_emb = item_feats_emb.flatten(start_dim=-2)

		if merge_all:
			item_num = item_feats_emb.shape[1]
			if situ_feats_emb is not None:
				all_context = torch.cat([item_feats_emb, user_feats_emb.unsqueeze(1).repeat(1,item_num,1,1),
							situ_feats_emb.unsqueeze(1).repeat(1,item_num,1,1)],dim=-2).flatten(start_dim=-2)
			else:
				all_context = torch.cat([item_feats_emb, user_feats_emb.unsqueeze(1).repeat(1,item_num,1,1),
							],dim=-2).flatten(start_dim=-2)
					
			return history_emb, current_emb, all_context
		else:
			return history_emb, current_emb, user_feats_emb, situ_feats_emb

	def forward(self, feed_dict):
		hislens = feed_dict['lengths']
		history_emb, current_emb, all_context = self.get_all_embedding(feed_dict)
		predictions = self.att_dnn(current_emb,history_emb, all_context, hislens)
		return {'prediction':predictions}

	def att_dnn(self, current_emb, history_emb, all_context, history_lengths):
		mask_mat = (torch.arange(history_emb.shape[1]).view(1,-1)).to(self.device)
  
		batch_size, item_num, feats_emb = current_emb.shape
		_, max_len, his_emb = history_emb.shape
		current_emb2d = current_emb.view(-1, feats_emb) # transfer 3d (batch * candidate * emb) to 2d ((batch*candidate)*emb) 
		history_emb2d = history_emb.unsqueeze(1).repeat(1,item_num,1,1).view(-1,max_len,his_emb)
		hislens2d = history_lengths.unsqueeze(1).repeat(1,item_num).view(-1)
		user_his_emb2d = self.attention(current_emb2d, history_emb2d, hislens2d,mask_mat,softmax_stag=False)
  
		din_output = torch.cat([user_his_emb2d, user_his_emb2d*current_emb2d, all_context.view(batch_size*item_num,-1) ],dim=-1)
		din_output = self.dnn_mlp_layers(din_output)
		return din_output.squeeze(dim=-1).view(batch_size, item_num)


class DINCTR(ContextSeqCTRModel, DINBase):
	reader = 'ContextSeqReader'
	runner = 'CTRRunner'
	extra_log_args = ['emb_size','att_layers','add_historical_situations']
	
	def __init__(self, args, corpus):
		ContextSeqCTRModel.__init__(self, args, corpus)
		self._define_init(args,corpus)

	def forward(self, feed_dict):
		out_dict = DINBase.forward(self,feed_dict)
		out_dict['prediction'] = out_dict['prediction'].view(-1).sigmoid()
		out_dict['label'] = feed_dict['label'].view(-1)
		return out_dict


class Corpus:
	n_users = 5
	n_items = 13
	user_feature_names = ['u_age_c']
	item_feature_names = ['i_category_c']
	situation_feature_names = []
	feature_max = {'user_id': 5, 'item_id': 13, 'u_age_c': 4, 'i_category_c': 3}


def parse_args():
	return argparse.Namespace(device=torch.device('cpu'), model_path='', buffer=1, num_neg=0, dropout=0,
							  test_all=0, loss_n='BCE', history_max=5, add_historical_situations=0,
							  emb_size=8, att_layers='[8]', dnn_layers='[8]')


model = torch.compile(DINCTR(parse_args(), Corpus()))


def make():
	torch.manual_seed(0)
	net = DINCTR(parse_args(), Corpus())
	feed_dict = {
		'user_id': torch.tensor([1, 2, 3, 4]),
		'u_age_c': torch.tensor([0, 3, 1, 2]),
		'item_id': torch.tensor([[4], [7], [12], [1]]),
		'i_category_c': torch.tensor([[1], [2], [0], [1]]),
		'history_item_id': torch.tensor([[3, 5, 0, 0, 0], [1, 2, 7, 9, 4], [6, 8, 2, 0, 0], [11, 0, 0, 0, 0]]),
		'history_i_category_c': torch.tensor([[1, 2, 0, 0, 0], [0, 1, 2, 2, 1], [2, 1, 0, 0, 0], [1, 0, 0, 0, 0]]),
		'lengths': torch.tensor([2, 5, 3, 1]),
		'label': torch.tensor([[1], [0], [1], [0]]),
		'batch_size': 4,
		'phase': 'train',
	}
	return net, [(feed_dict,)]
