"""Task heads that sit on an AlbertEncoder's outputs.

Pretraining heads compute in float32 whatever the global mixed-precision
policy, so logits and their LayerNorm keep full precision; they are small
(P masked positions, one pooled vector) so this costs nearly nothing.
"""

import tensorflow as tf
import tf_keras as keras

from albert_tf import activations


@keras.utils.register_keras_serializable(package="albert_tf")
class AlbertMaskedLMHead(keras.layers.Layer):
  """`cls/predictions`: dense H->E with the hidden activation, LayerNorm(E), tied logits.

  Args:
    vocab_size: V, size of the output bias.
    embedding_size: E, width of the transform and of the tied table.
    hidden_act: activation of the transform ("gelu" = tanh approximation).
    initializer_range: stddev of the truncated-normal kernel initializer.
  """

  def __init__(self, vocab_size, embedding_size, hidden_act="gelu", initializer_range=0.02,
               **kwargs):
    kwargs.setdefault("dtype", "float32")
    super().__init__(**kwargs)
    self.vocab_size = vocab_size
    self.embedding_size = embedding_size
    self.hidden_act = hidden_act
    self.initializer_range = initializer_range
    self.dense = keras.layers.Dense(
        embedding_size, activation=activations.get(hidden_act), name="dense", dtype=self.dtype_policy,
        kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range))
    self.layer_norm = keras.layers.LayerNormalization(
        epsilon=1e-12, name="LayerNorm", dtype=self.dtype_policy)

  def build(self, input_shape):
    self.dense.build([None, None, input_shape[-1]])
    self.layer_norm.build([None, None, self.embedding_size])
    self.output_bias = self.add_weight("output_bias", shape=[self.vocab_size],
                                       initializer="zeros")
    super().build(input_shape)

  def call(self, masked_hidden, embedding_table):
    """[B, P, H] hidden states at masked positions, [V, E] table -> [B, P, V] float32 logits."""
    x = self.layer_norm(self.dense(masked_hidden))                     # [B, P, E]
    table = tf.cast(embedding_table, tf.float32)                       # read as float32 here
    logits = tf.einsum("bpe,ve->bpv", x, table)                        # [B, P, V]
    return tf.nn.bias_add(logits, self.output_bias)

  def get_config(self):
    config = super().get_config()
    config.update(vocab_size=self.vocab_size, embedding_size=self.embedding_size,
                  hidden_act=self.hidden_act, initializer_range=self.initializer_range)
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
    self.dropout = keras.layers.Dropout(dropout_rate, dtype=self.dtype_policy)

  def build(self, input_shape):
    self.output_weights = self.add_weight(
        "output_weights", shape=[self.num_classes, input_shape[-1]],
        initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range,
                                                       seed=self.seed))
    self.output_bias = self.add_weight("output_bias", shape=[self.num_classes],
                                       initializer="zeros")
    super().build(input_shape)

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
