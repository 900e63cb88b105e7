"""AlbertEncoder: factorized embeddings and groups of shared attention+FFN blocks."""

from typing import Dict, Union

import tensorflow as tf
import tf_keras as keras

from albert_tf.modeling import fused
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.layers import AlbertEmbeddings, AlbertTransformerBlock
from albert_tf.modeling.layers.transformer import DERIVED_WEIGHTS
from albert_tf.modeling.tracing import custom_gradient, plain_python

INPUT_KEYS = ("input_word_ids", "input_mask", "input_type_ids")


def as_config(config: Union[AlbertConfig, dict]) -> AlbertConfig:
  """Accepts an AlbertConfig, a dict of its fields, or a preset name."""
  if isinstance(config, AlbertConfig):
    return config
  if isinstance(config, dict):
    return AlbertConfig.from_dict(config)
  if isinstance(config, str):
    return AlbertConfig.from_preset(config)
  raise TypeError(f"expected an AlbertConfig, dict or preset name, got {type(config).__name__}")


@custom_gradient
def sum_gradients_in_order(weight: tf.Tensor) -> tf.Tensor:
  """Identity for a shared weight between two applications; in the backward pass
  each application's gradient is added to the running sum as soon as it exists.

  Without it the L applications' gradients of a shared block meet in one AddN
  (Grappler also merges chains of adds into one), so all L of them are held at
  once: 800 MB each for ALBERT-xxlarge, 9.6 GB for 12 layers. The gradient here
  is a Snapshot, which Grappler does not merge through, so at most a running
  sum and one application's gradient are alive. Values are unchanged.
  """
  def grad(upstream):
    return tf.raw_ops.Snapshot(input=upstream)
  return tf.identity(weight), grad


def use_in_compute_dtype(compute_value: tf.Tensor, master: tf.Tensor, uses: int = 1,
                         final: bool = False):
  """`uses` consecutive applications of a shared weight: `uses` copies of the compute-dtype
  value (the cast of the float32 `master`, made once per call) and, unless `final` (no
  application of it follows), the master for the next applications. Backward, the
  master's gradient is the next applications' (the running sum) plus these `uses`
  gradients in float32, in one pass (`fused.accumulate`): the L applications' 16-bit
  gradients are summed in float32, with at most the sum and `uses` applications'
  gradients alive."""
  @custom_gradient
  def use(compute_value, master):
    values = tuple(tf.identity(compute_value) for _ in range(uses))
    def grad(*upstream):
      gradients, running_sum = (upstream, None) if final else (upstream[:-1], upstream[-1])
      return None, fused.accumulate(running_sum, *gradients)
    return (values if final else values + (tf.identity(master),)), grad
  return use(compute_value, master)


def applications_per_sum(config: AlbertConfig, budget_bytes: float = 32e6) -> int:
  """How many applications' 16-bit gradients of a shared block are added to its float32
  sum at once (`use_in_compute_dtype`'s `uses`): as many as fit `budget_bytes` beyond the
  one that is always alive (ALBERT-base 3, large 2, xlarge and xxlarge 1). The bfloat16
  ALBERT-base b8 s128 train step's XLA time, one op at a time: 0.119 s with 1, 0.110 s
  with 3; 2 to 5 measured alike within the noise of whole steps."""
  h, i = config.hidden_size, config.intermediate_size
  block_bytes = 2 * (4 * h * h + 2 * h * i) * config.inner_group_num
  return 1 + int(budget_bytes // block_bytes)


def attention_bias_from_mask(input_mask: tf.Tensor) -> tf.Tensor:
  """[B, S] 0/1 mask -> [B, 1, 1, S] float32 additive bias (0 or -10000, as the original)."""
  mask = tf.cast(input_mask, tf.float32)
  return ((1.0 - mask) * -10000.0)[:, tf.newaxis, tf.newaxis, :]


@keras.utils.register_keras_serializable(package="albert_tf")
class AlbertEncoder(keras.Model):
  """The ALBERT encoder, exactly as the original `AlbertModel` computes it.

  Called with a dict of int32 [B, S] tensors `input_word_ids`, `input_mask`
  and `input_type_ids` (the last two default to ones and zeros), it returns
  a dict with `sequence_output` [B, S, H], `pooled_output` [B, H] (tanh dense
  on the first token) and `encoder_outputs`, the [B, S, H] output of every
  attention+FFN application in order (L * inner_group_num of them).

  Weight sharing: `num_hidden_groups` groups, each holding `inner_group_num`
  blocks; layer i applies the blocks of group int(i / L * G) in turn. The last
  application computes the first token separately for the pooler (same values),
  so classifiers skip most of the last block on the other tokens.

  Args:
    config: an AlbertConfig, a dict of its fields, or a preset name.
    recompute: in training, keep only each block's input (and its FFN output) for
      the backward pass and compute the block again there (activation memory of
      about one block instead of L; about two thirds of a forward pass more time).
      Gradients are unchanged.
  """

  def __init__(self, config: Union[AlbertConfig, dict, str], recompute: bool = False, **kwargs):
    super().__init__(**kwargs)
    self.config = as_config(config)
    self.recompute = recompute
    c = self.config
    init = lambda: keras.initializers.TruncatedNormal(stddev=c.initializer_range)
    self.embeddings = AlbertEmbeddings(
        c.vocab_size, c.embedding_size, c.max_position_embeddings, c.type_vocab_size,
        dropout_rate=c.hidden_dropout_prob, initializer_range=c.initializer_range,
        layer_norm_eps=c.layer_norm_eps, name="embeddings")
    # The original has no projection when E == H.
    self.embedding_projection = None
    if c.embedding_size != c.hidden_size:
      self.embedding_projection = keras.layers.Dense(
          c.hidden_size, kernel_initializer=init(), name="embedding_hidden_mapping_in")
    self.groups = [
        [AlbertTransformerBlock(
            c.hidden_size, c.num_attention_heads, c.intermediate_size, c.hidden_act,
            c.hidden_dropout_prob, c.attention_probs_dropout_prob, c.initializer_range,
            recompute=recompute, layer_norm_eps=c.layer_norm_eps,
            name=f"group_{g}_inner_group_{k}")
         for k in range(c.inner_group_num)]
        for g in range(c.num_hidden_groups)]
    self.pooler = keras.layers.Dense(c.hidden_size, activation="tanh",
                                     kernel_initializer=init(), name="pooler")
    self.build()

  def build(self, input_shape=None):
    """Creates every weight now, so checkpoints load before the first call."""
    c = self.config
    self.embeddings.build()
    if self.embedding_projection is not None:
      self.embedding_projection.build([None, None, c.embedding_size])
    for group in self.groups:
      for block in group:
        block.build([None, None, c.hidden_size])
    self.pooler.build([None, c.hidden_size])
    self.built = True

  @property
  def embedding_table(self) -> tf.Variable:
    """The [V, E] word-embedding table, tied to the masked-LM output."""
    return self.embeddings.word_embeddings

  def get_embedding_table(self) -> tf.Variable:
    return self.embedding_table

  @plain_python
  def call(self, inputs: Dict[str, tf.Tensor], training=None,
           uses_sequence_output=False) -> Dict[str, tf.Tensor]:
    """The encoder's outputs for `inputs` (int32 or int64 [B, S] ids, mask, type ids).

    The last block also computes the first token on its own for the pooler, so a caller
    that uses only `pooled_output` (a classifier) runs the last block's Q, K, V projection
    and first-token attention only, once a tf.function prunes the rest. A caller that
    returns `sequence_output` too (a serving signature) passes `uses_sequence_output=True`:
    the pooler then takes the full last block's first row, and no second first-token path
    runs (at batch 1, seq 32 of ALBERT-base it cost 3 ms of 55).
    """
    if not isinstance(inputs, dict) or "input_word_ids" not in inputs:
      raise ValueError("AlbertEncoder expects a dict with 'input_word_ids' "
                       f"(and 'input_mask', 'input_type_ids'); got {type(inputs).__name__}"
                       + (f" with keys {sorted(inputs)}" if isinstance(inputs, dict) else ""))
    as_int32 = lambda t: None if t is None else tf.cast(t, tf.int32)  # int64 ids too
    word_ids = as_int32(inputs["input_word_ids"])
    mask = as_int32(inputs.get("input_mask"))
    type_ids = as_int32(inputs.get("input_type_ids"))
    if mask is None:
      mask = tf.ones_like(word_ids)
    if type_ids is None:
      type_ids = tf.zeros_like(word_ids)

    x = self.embeddings(word_ids, type_ids, training=training)               # [B, S, E]
    if self.embedding_projection is not None:
      x = self.embedding_projection(x)                                        # [B, S, H]
    bias = attention_bias_from_mask(mask)                                     # [B, 1, 1, S]

    # Shared weights are read (and cast) once per call, not once per layer. Training in
    # a lower precision keeps float32 master copies whose gradients (each application's,
    # in float32) are summed in float32 (`use_in_compute_dtype`).
    compute_dtype = tf.as_dtype(self.compute_dtype)
    masters = None
    if training and compute_dtype != tf.float32:
      masters = [[block.read_weights(tf.float32, training=True) for block in group]
                 for group in self.groups]
      weights = [[{k: tf.cast(v, compute_dtype) for k, v in w.items()} for w in group]
                 for group in masters]
    else:
      weights = [[block.read_weights(training=bool(training)) for block in group]
                 for group in self.groups]
    encoder_outputs = []
    num_layers = self.config.num_hidden_layers
    groups = [self.config.group_index(layer) for layer in range(num_layers)]
    per_sum = applications_per_sum(self.config)
    values = {}   # layer -> its blocks' compute-dtype weights, from the masters
    for layer_index in range(num_layers):
      group_index = groups[layer_index]
      used = weights[group_index]
      if masters is not None:
        if layer_index not in values:
          # The next applications of this group (up to `per_sum`) take their values at
          # once and pass the masters on.
          layers = [j for j in range(layer_index, num_layers) if groups[j] == group_index]
          uses, final = min(per_sum, len(layers)), per_sum >= len(layers)
          outs = [{k: use_in_compute_dtype(v, m[k], uses, final) for k, v in w.items()
                   if k not in DERIVED_WEIGHTS} for w, m in zip(used, masters[group_index])]
          for n, j in enumerate(layers[:uses]):
            values[j] = [dict(w, **{k: out[n] for k, out in o.items()})
                         for w, o in zip(used, outs)]
          if not final:
            masters[group_index] = [{k: out[-1] for k, out in o.items()} for o in outs]
        used = values.pop(layer_index)
      group = list(zip(self.groups[group_index], used))
      for inner_index, (block, block_weights) in enumerate(group):
        last = (layer_index == num_layers - 1 and inner_index == len(group) - 1
                and not uses_sequence_output)
        # The last application also computes the first token on its own, for the
        # pooler: a model that uses only pooled_output never runs the rest of it.
        x = block(x, bias, training=training, weights=block_weights, first_token=last)
        if last:
          x, first_token = x                                                  # [B, S, H], [B, H]
        encoder_outputs.append(x)                                             # [B, S, H]
      if training and masters is None:  # the running sums (masters keep their own)
        weights[group_index] = [{k: v if k in DERIVED_WEIGHTS else sum_gradients_in_order(v)
                                 for k, v in w.items()} for w in weights[group_index]]

    if uses_sequence_output:
      first_token = x[:, 0]                                                   # [B, H]
    pooled = self.pooler(first_token)                                         # [B, H]
    return dict(sequence_output=x, pooled_output=pooled, encoder_outputs=encoder_outputs)

  @property
  def checkpoint_items(self):
    """Objects to track in a tf.train.Checkpoint when this encoder is restored."""
    return dict(encoder=self)

  def get_config(self):
    return dict(config=self.config.to_dict(), recompute=self.recompute, name=self.name)

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**config)
