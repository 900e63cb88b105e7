"""Task heads that sit on an AlbertEncoder's outputs.

Pretraining heads compute in float32 whatever the global mixed-precision
policy, so logits and their LayerNorm keep full precision; they are small
(P masked positions, one pooled vector) so this costs nearly nothing.
"""

import tensorflow as tf
import tf_keras as keras

from albert_tf.modeling import activations
from albert_tf.modeling.layers.layer_norm import LayerNorm
from albert_tf.modeling.layers.dropout import dropout
from albert_tf.modeling.tracing import plain_python


@keras.utils.register_keras_serializable(package="albert_tf")
class AlbertMaskedLMHead(keras.layers.Layer):
  """`cls/predictions`: dense H->E with the hidden activation, LayerNorm(E), tied logits.

  Args:
    vocab_size: V, size of the output bias.
    embedding_size: E, width of the transform and of the tied table.
    hidden_act: activation of the transform ("gelu" = tanh approximation).
    initializer_range: stddev of the truncated-normal kernel initializer.
    layer_norm_eps: epsilon of the LayerNorm.
  """

  def __init__(self, vocab_size, embedding_size, hidden_act="gelu", initializer_range=0.02,
               layer_norm_eps=1e-12, **kwargs):
    kwargs.setdefault("dtype", "float32")
    super().__init__(**kwargs)
    self.vocab_size = vocab_size
    self.embedding_size = embedding_size
    self.hidden_act = hidden_act
    self.initializer_range = initializer_range
    self.layer_norm_eps = layer_norm_eps
    self.dense = keras.layers.Dense(
        embedding_size, activation=activations.get(hidden_act), name="dense", dtype=self.dtype_policy,
        kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range))
    self.layer_norm = LayerNorm(
        epsilon=layer_norm_eps, name="LayerNorm", dtype=self.dtype_policy)

  def build(self, input_shape):
    self.dense.build([None, None, input_shape[-1]])
    self.layer_norm.build([None, None, self.embedding_size])
    self.output_bias = self.add_weight("output_bias", shape=[self.vocab_size],
                                       initializer="zeros")
    super().build(input_shape)

  @plain_python
  def call(self, masked_hidden, embedding_table):
    """[B, P, H] hidden states at masked positions, [V, E] table -> [B, P, V] float32 logits."""
    x = self.layer_norm(self.dense(masked_hidden))                     # [B, P, E]
    table = tf.cast(embedding_table, tf.float32)                       # read as float32 here
    logits = tf.einsum("bpe,ve->bpv", x, table)                        # [B, P, V]
    return tf.nn.bias_add(logits, self.output_bias)

  def get_config(self):
    config = super().get_config()
    config.update(vocab_size=self.vocab_size, embedding_size=self.embedding_size,
                  hidden_act=self.hidden_act, initializer_range=self.initializer_range,
                  layer_norm_eps=self.layer_norm_eps)
    return config


@keras.utils.register_keras_serializable(package="albert_tf")
class AlbertClassificationHead(keras.layers.Layer):
  """The original classifier: dropout, then logits = pooled @ output_weights^T + output_bias.

  Weights [num_classes, H] as the original `output_weights`; one output and
  no softmax for regression (num_classes=1). Computes in float32.

  Args:
    num_classes: number of labels (1 for regression such as STS-B).
    dropout_rate: dropout on the pooled output in training (0.1 in the original).
    initializer_range: stddev of the truncated-normal initializer.
    seed: seed of that initializer (the same weights under any tf.distribute strategy).
  """

  def __init__(self, num_classes: int, dropout_rate: float = 0.1, initializer_range=0.02,
               seed=None, **kwargs):
    kwargs.setdefault("dtype", "float32")
    super().__init__(**kwargs)
    self.num_classes = num_classes
    self.dropout_rate = dropout_rate
    self.initializer_range = initializer_range
    self.seed = seed
    self.dropout = dropout(dropout_rate, dtype=self.dtype_policy)

  def build(self, input_shape):
    self.output_weights = self.add_weight(
        "output_weights", shape=[self.num_classes, input_shape[-1]],
        initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range,
                                                       seed=self.seed))
    self.output_bias = self.add_weight("output_bias", shape=[self.num_classes],
                                       initializer="zeros")
    super().build(input_shape)

  @plain_python
  def call(self, pooled_output, training=None):
    """[B, H] -> [B, num_classes] float32 logits."""
    pooled = self.dropout(tf.cast(pooled_output, tf.float32), training=training)
    logits = tf.matmul(pooled, self.output_weights, transpose_b=True)
    return tf.nn.bias_add(logits, self.output_bias)

  def get_config(self):
    config = super().get_config()
    config.update(num_classes=self.num_classes, dropout_rate=self.dropout_rate,
                  initializer_range=self.initializer_range, seed=self.seed)
    return config


@keras.utils.register_keras_serializable(package="albert_tf")
class AlbertSentenceOrderHead(AlbertClassificationHead):
  """`cls/seq_relationship`: the classification head without dropout, weights [2, H].

  Args:
    num_classes: 2 for sentence order (and for NSP).
    initializer_range: stddev of the truncated-normal initializer.
  """

  def __init__(self, num_classes=2, initializer_range=0.02, **kwargs):
    kwargs.setdefault("dropout_rate", 0.0)
    super().__init__(num_classes, initializer_range=initializer_range, **kwargs)


def _truncated_normal(stddev, seed):
  return keras.initializers.TruncatedNormal(stddev=stddev, seed=seed)


@keras.utils.register_keras_serializable(package="albert_tf")
class AlbertSpanHead(keras.layers.Layer):
  """SQuAD v1.1 head (`cls/squad`): start and end logits from one [2, H] projection.

  Computes in float32. As the original, the logits are not masked; prediction
  keeps only spans inside the context.

  Args:
    initializer_range: stddev of the truncated-normal initializer.
    seed: seed of that initializer.
  """

  def __init__(self, initializer_range=0.02, seed=None, **kwargs):
    kwargs.setdefault("dtype", "float32")
    super().__init__(**kwargs)
    self.initializer_range = initializer_range
    self.seed = seed

  def build(self, input_shape):
    self.output_weights = self.add_weight(
        "output_weights", shape=[2, input_shape[-1]],
        initializer=_truncated_normal(self.initializer_range, self.seed))
    self.output_bias = self.add_weight("output_bias", shape=[2], initializer="zeros")
    super().build(input_shape)

  @plain_python
  def call(self, sequence_output):
    """[B, S, H] -> dict of start_logits, end_logits [B, S]."""
    x = tf.cast(sequence_output, tf.float32)
    logits = tf.einsum("bsh,th->bst", x, self.output_weights) + self.output_bias   # [B, S, 2]
    return dict(start_logits=logits[:, :, 0], end_logits=logits[:, :, 1])

  def get_config(self):
    config = super().get_config()
    config.update(initializer_range=self.initializer_range, seed=self.seed)
    return config


@keras.utils.register_keras_serializable(package="albert_tf")
class AlbertSpanV2Head(keras.layers.Layer):
  """SQuAD v2.0 head of the original (from XLNet): span logits with the end conditioned
  on the start, and an answer-class logit for "no answer".

  - start: dense(H -> 1) on each position, masked by p_mask, log-softmax.
  - end: dense([h_j; h_start] -> H, tanh), LayerNorm, dense(H -> 1), masked,
    log-softmax over j. Training conditions on the gold start
    (`start_positions`); inference on each of the `start_n_top` best starts
    and keeps the `end_n_top` best ends of each.
  - answer class: dense([sum_j p_start(j) h_j; h_CLS] -> H, tanh), dropout,
    dense(H -> 1, no bias); positive means "no answer".

  Computes in float32.

  Args:
    hidden_size: H (width of the inner dense layers).
    start_n_top: starts kept at inference.
    end_n_top: ends kept per start at inference.
    dropout_rate: dropout in the answer-class branch.
    initializer_range: stddev of the truncated-normal initializers.
    seed: seed of those initializers.
  """

  def __init__(self, hidden_size: int, start_n_top: int = 5, end_n_top: int = 5,
               dropout_rate: float = 0.1, initializer_range=0.02, seed=None, **kwargs):
    kwargs.setdefault("dtype", "float32")
    super().__init__(**kwargs)
    self.hidden_size = hidden_size
    self.start_n_top, self.end_n_top = start_n_top, end_n_top
    self.dropout_rate = dropout_rate
    self.initializer_range = initializer_range
    self.seed = seed
    policy = self.dtype_policy

    def dense(units, name, index, **kw):
      seed_i = None if seed is None else seed + index
      return keras.layers.Dense(units, name=name, dtype=policy,
                                kernel_initializer=_truncated_normal(initializer_range, seed_i),
                                **kw)

    self.start_dense = dense(1, "start_dense", 0)
    self.end_dense_0 = dense(hidden_size, "end_dense_0", 1, activation="tanh")
    self.end_layer_norm = LayerNorm(epsilon=1e-12, name="end_LayerNorm",
                                                          dtype=policy)
    self.end_dense_1 = dense(1, "end_dense_1", 2)
    self.answer_dense_0 = dense(hidden_size, "answer_dense_0", 3, activation="tanh")
    self.answer_dense_1 = dense(1, "answer_dense_1", 4, use_bias=False)
    self.dropout = dropout(dropout_rate, dtype=policy)

  def build(self, input_shape):
    h = input_shape[-1]
    self.start_dense.build([None, None, h])
    self.end_dense_0.build([None, None, 2 * h])
    self.end_layer_norm.build([None, None, None, self.hidden_size])   # [B, K, S, H]
    self.end_dense_1.build([None, None, self.hidden_size])
    self.answer_dense_0.build([None, 2 * h])
    self.answer_dense_1.build([None, self.hidden_size])
    super().build(input_shape)

  def _end_log_probs(self, x, start_features, p_mask):
    """x [B, S, H], start_features [B, K, H] -> end log-probs [B, K, S].

    dense_0 on [h_j; h_start] is x @ W_top + h_start @ W_bottom + b, so the
    [B, K, S, 2H] concatenation is never built."""
    h = x.shape[-1]
    kernel, bias = self.end_dense_0.kernel, self.end_dense_0.bias         # [2H, H], [H]
    positions = tf.einsum("bsh,hd->bsd", x, kernel[:h])                   # [B, S, H]
    starts = tf.einsum("bkh,hd->bkd", start_features, kernel[h:])         # [B, K, H]
    hidden = tf.tanh(positions[:, None] + starts[:, :, None] + bias)      # [B, K, S, H]
    logits = tf.squeeze(self.end_dense_1(self.end_layer_norm(hidden)), -1)   # [B, K, S]
    return tf.nn.log_softmax(_mask(logits, p_mask[:, None]), -1)

  @plain_python
  def call(self, sequence_output, p_mask, start_positions=None, training=None):
    """Span and answer-class outputs.

    Args:
      sequence_output: [B, S, H].
      p_mask: [B, S], 1 where no answer may start or end.
      start_positions: [B] gold starts (training / loss); None for inference.

    Returns:
      with start_positions: start_log_probs, end_log_probs [B, S], cls_logits [B];
      without: start_top_log_probs, start_top_index [B, K], end_top_log_probs,
      end_top_index [B, K * E] (ends of start k at k*E..k*E+E-1), cls_logits [B].
    """
    x = tf.cast(sequence_output, tf.float32)
    p_mask = tf.cast(p_mask, tf.float32)
    start_logits = _mask(tf.squeeze(self.start_dense(x), -1), p_mask)    # [B, S]
    start_log_probs = tf.nn.log_softmax(start_logits, -1)
    outputs = {}
    if start_positions is not None:
      start_features = tf.gather(x, start_positions, batch_dims=1)        # [B, H]
      end_log_probs = self._end_log_probs(x, start_features[:, None], p_mask)
      outputs.update(start_log_probs=start_log_probs, end_log_probs=end_log_probs[:, 0])
    else:
      top_log_probs, top_index = tf.math.top_k(start_log_probs, self.start_n_top)   # [B, K]
      start_features = tf.gather(x, top_index, batch_dims=1)             # [B, K, H]
      end_log_probs = self._end_log_probs(x, start_features, p_mask)      # [B, K, S]
      end_top_log_probs, end_top_index = tf.math.top_k(end_log_probs, self.end_n_top)  # [B, K, E]
      flat = [-1, self.start_n_top * self.end_n_top]
      outputs.update(start_top_log_probs=top_log_probs, start_top_index=top_index,
                     end_top_log_probs=tf.reshape(end_top_log_probs, flat),
                     end_top_index=tf.reshape(end_top_index, flat))
    start_p = tf.nn.softmax(start_logits, -1)                             # [B, S]
    start_summary = tf.einsum("bsh,bs->bh", x, start_p)                   # [B, H]
    answer = self.answer_dense_0(tf.concat([start_summary, x[:, 0]], -1))  # [B, H]
    answer = self.dropout(answer, training=training)
    outputs["cls_logits"] = tf.squeeze(self.answer_dense_1(answer), -1)   # [B]
    return outputs

  def get_config(self):
    config = super().get_config()
    config.update(hidden_size=self.hidden_size, start_n_top=self.start_n_top,
                  end_n_top=self.end_n_top, dropout_rate=self.dropout_rate,
                  initializer_range=self.initializer_range, seed=self.seed)
    return config


def _mask(logits, p_mask):
  """The original's masking: logits where p_mask is 0, -1e30 where it is 1."""
  return logits * (1.0 - p_mask) - 1e30 * p_mask
