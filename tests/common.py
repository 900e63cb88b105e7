"""Tiny configurations and inputs shared by the tests."""

import numpy as np

# Full sharing (what tf-models-official's AlbertEncoder supports), E != H.
TINY = dict(vocab_size=97, embedding_size=8, hidden_size=32, num_hidden_layers=3,
            num_hidden_groups=1, num_attention_heads=4, intermediate_size=48,
            inner_group_num=1, hidden_act="gelu", hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0, max_position_embeddings=24,
            type_vocab_size=2, initializer_range=0.02)
# Grouped sharing with inner groups: 5 layers over 2 groups (group of layer i = int(i*2/5)
# = 0,0,0,1,1), each group applying 2 sub-blocks.
GROUPED = dict(TINY, num_hidden_layers=5, num_hidden_groups=2, inner_group_num=2)
# E == H: the original has no embedding projection.
SQUARE = dict(TINY, embedding_size=32)


def random_inputs(cfg, batch=3, seq=11, seed=1, num_masked=4):
  """Int32 inputs with some padding at the end of every row but the first."""
  rng = np.random.default_rng(seed)
  ids = rng.integers(5, cfg["vocab_size"], size=(batch, seq)).astype(np.int32)
  lengths = [seq] + list(rng.integers(2, seq, size=batch - 1))
  mask = np.array([[1] * n + [0] * (seq - n) for n in lengths], np.int32)
  types = np.array([[0] * (n // 2) + [1] * (seq - n // 2) for n in lengths], np.int32) * mask
  ids = ids * mask
  positions = np.stack([rng.choice(max(n, num_masked), num_masked, replace=False) for n in lengths])
  return dict(input_word_ids=ids, input_mask=mask, input_type_ids=types,
              masked_lm_positions=positions.astype(np.int32))


def encoder_inputs(inputs):
  return {k: inputs[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}
