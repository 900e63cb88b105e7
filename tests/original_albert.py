"""Independent references for the tests: the original ALBERT in NumPy, and its checkpoint layout.

Nothing here imports albert_tf. `original_variables` lists the variable names
and shapes of google-research/albert's graph (modeling.py, run_pretraining.py);
`write_checkpoint` writes them as a TF1 name-based checkpoint, as the
original Saver does; `forward` is the original equations in float64 NumPy.
"""

import math

import numpy as np
import tensorflow as tf


def original_variables(cfg, heads=True):
  """Name -> shape of every variable in an original ALBERT checkpoint."""
  V, E, H, I = cfg["vocab_size"], cfg["embedding_size"], cfg["hidden_size"], cfg["intermediate_size"]
  out = {
      "bert/embeddings/word_embeddings": [V, E],
      "bert/embeddings/position_embeddings": [cfg["max_position_embeddings"], E],
      "bert/embeddings/token_type_embeddings": [cfg["type_vocab_size"], E],
      "bert/embeddings/LayerNorm/gamma": [E],
      "bert/embeddings/LayerNorm/beta": [E],
  }
  if E != H:
    out["bert/encoder/embedding_hidden_mapping_in/kernel"] = [E, H]
    out["bert/encoder/embedding_hidden_mapping_in/bias"] = [H]
  for g in range(cfg["num_hidden_groups"]):
    for k in range(cfg["inner_group_num"]):
      p = f"bert/encoder/transformer/group_{g}/inner_group_{k}"
      for name, shape in (("attention_1/self/query", [H, H]), ("attention_1/self/key", [H, H]),
                          ("attention_1/self/value", [H, H]), ("attention_1/output/dense", [H, H]),
                          ("ffn_1/intermediate/dense", [H, I]),
                          ("ffn_1/intermediate/output/dense", [I, H])):
        out[f"{p}/{name}/kernel"] = shape
        out[f"{p}/{name}/bias"] = [shape[1]]
      for ln in ("LayerNorm", "LayerNorm_1"):
        out[f"{p}/{ln}/gamma"] = [H]
        out[f"{p}/{ln}/beta"] = [H]
  out["bert/pooler/dense/kernel"] = [H, H]
  out["bert/pooler/dense/bias"] = [H]
  if heads:
    out.update({
        "cls/predictions/transform/dense/kernel": [H, E],
        "cls/predictions/transform/dense/bias": [E],
        "cls/predictions/transform/LayerNorm/gamma": [E],
        "cls/predictions/transform/LayerNorm/beta": [E],
        "cls/predictions/output_bias": [V],
        "cls/seq_relationship/output_weights": [2, H],
        "cls/seq_relationship/output_bias": [2],
    })
  return out


def random_weights(cfg, heads=True, seed=0, scale=0.2):
  """Random arrays for every original variable; LayerNorm gains near 1."""
  rng = np.random.default_rng(seed)
  weights = {}
  for name, shape in original_variables(cfg, heads).items():
    if name.endswith("gamma"):
      weights[name] = (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
    else:
      weights[name] = (scale * rng.standard_normal(shape)).astype(np.float32)
  return weights


def write_checkpoint(prefix, weights, prefix_names="", optimizer_slots=False):
  """Writes `weights` as a TF1 name-based checkpoint (what tf.compat.v1.train.Saver writes)."""
  names, tensors = [], []
  for name, value in weights.items():
    names.append(prefix_names + name)
    tensors.append(tf.constant(value))
    if optimizer_slots:
      for slot in ("adam_m", "adam_v"):
        names.append(f"{prefix_names}{name}/{slot}")
        tensors.append(tf.zeros_like(value))
  if optimizer_slots:
    names.append("global_step")
    tensors.append(tf.constant(1234, tf.int64))
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                    tensors=tensors)
  return prefix


def _layer_norm(x, gamma, beta, eps=1e-12):
  mean = x.mean(-1, keepdims=True)
  var = ((x - mean) ** 2).mean(-1, keepdims=True)
  return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _gelu(x):
  return 0.5 * x * (1.0 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _softmax(x):
  x = x - x.max(-1, keepdims=True)
  e = np.exp(x)
  return e / e.sum(-1, keepdims=True)


def forward(cfg, w, ids, mask, types, masked_lm_positions=None):
  """The original ALBERT forward pass (inference), float64. Returns a dict of arrays."""
  w = {k: v.astype(np.float64) for k, v in w.items()}
  B, S = ids.shape
  H, N = cfg["hidden_size"], cfg["num_attention_heads"]
  D, L, G = H // N, cfg["num_hidden_layers"], cfg["num_hidden_groups"]
  x = (w["bert/embeddings/word_embeddings"][ids] + w["bert/embeddings/token_type_embeddings"][types]
       + w["bert/embeddings/position_embeddings"][:S][None])
  x = _layer_norm(x, w["bert/embeddings/LayerNorm/gamma"], w["bert/embeddings/LayerNorm/beta"])
  if "bert/encoder/embedding_hidden_mapping_in/kernel" in w:
    x = x @ w["bert/encoder/embedding_hidden_mapping_in/kernel"] + w["bert/encoder/embedding_hidden_mapping_in/bias"]
  adder = (1.0 - mask[:, None, None, :].astype(np.float64)) * -10000.0

  def dense(t, name):
    return t @ w[name + "/kernel"] + w[name + "/bias"]

  def heads(t):  # [B, S, H] -> [B, N, S, D]
    return t.reshape(B, S, N, D).transpose(0, 2, 1, 3)

  all_layers = []
  for i in range(L):
    g = int(i / L * G)
    for k in range(cfg["inner_group_num"]):
      p = f"bert/encoder/transformer/group_{g}/inner_group_{k}"
      q = heads(dense(x, p + "/attention_1/self/query"))
      kk = heads(dense(x, p + "/attention_1/self/key"))
      v = heads(dense(x, p + "/attention_1/self/value"))
      logits = q @ kk.transpose(0, 1, 3, 2) / math.sqrt(D) + adder
      ctx = (_softmax(logits) @ v).transpose(0, 2, 1, 3).reshape(B, S, H)
      a = _layer_norm(dense(ctx, p + "/attention_1/output/dense") + x,
                      w[p + "/LayerNorm/gamma"], w[p + "/LayerNorm/beta"])
      f = dense(_gelu(dense(a, p + "/ffn_1/intermediate/dense")), p + "/ffn_1/intermediate/output/dense")
      x = _layer_norm(f + a, w[p + "/LayerNorm_1/gamma"], w[p + "/LayerNorm_1/beta"])
      all_layers.append(x)
  pooled = np.tanh(dense(x[:, 0], "bert/pooler/dense"))
  out = dict(sequence_output=x, pooled_output=pooled, encoder_outputs=all_layers)
  if "cls/seq_relationship/output_weights" in w:
    out["sop_logits"] = pooled @ w["cls/seq_relationship/output_weights"].T + w["cls/seq_relationship/output_bias"]
  if masked_lm_positions is not None and "cls/predictions/output_bias" in w:
    m = np.take_along_axis(x, masked_lm_positions[:, :, None], axis=1)
    m = _gelu(dense(m, "cls/predictions/transform/dense"))
    m = _layer_norm(m, w["cls/predictions/transform/LayerNorm/gamma"], w["cls/predictions/transform/LayerNorm/beta"])
    out["mlm_logits"] = m @ w["bert/embeddings/word_embeddings"].T + w["cls/predictions/output_bias"]
  return out
