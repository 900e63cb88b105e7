"""ALBERT's factorized input embeddings: word [V,E] + position [P,E] + type [T,E]."""

import tensorflow as tf
import tf_keras as keras

from albert_tf.modeling.layers.dropout import dropout
from albert_tf.modeling.layers.layer_norm import LayerNorm
from albert_tf.modeling.tracing import plain_python


@keras.utils.register_keras_serializable(package="albert_tf")
class AlbertEmbeddings(keras.layers.Layer):
  """Sum of word, position and token-type embeddings, then LayerNorm and dropout.

  The output stays at the embedding width E; the encoder projects it to H.
  Variable names and shapes follow `bert/embeddings/*` of the original.

  Args:
    vocab_size: V, rows of the word-embedding table.
    embedding_size: E, width of all three tables.
    max_position_embeddings: P, longest supported sequence.
    type_vocab_size: T, number of segment ids.
    dropout_rate: dropout after the LayerNorm.
    initializer_range: stddev of the truncated-normal initializer.
    layer_norm_eps: epsilon of the LayerNorm.
  """

  def __init__(self, vocab_size, embedding_size, max_position_embeddings=512,
               type_vocab_size=2, dropout_rate=0.0, initializer_range=0.02,
               layer_norm_eps=1e-12, **kwargs):
    super().__init__(**kwargs)
    self.vocab_size = vocab_size
    self.embedding_size = embedding_size
    self.max_position_embeddings = max_position_embeddings
    self.type_vocab_size = type_vocab_size
    self.dropout_rate = dropout_rate
    self.initializer_range = initializer_range
    self.layer_norm_eps = layer_norm_eps
    self.layer_norm = LayerNorm(
        axis=-1, epsilon=layer_norm_eps, name="LayerNorm", dtype=self.dtype_policy)
    self.dropout = dropout(dropout_rate, dtype=self.dtype_policy)

  def build(self, input_shape=None):
    init = lambda: keras.initializers.TruncatedNormal(stddev=self.initializer_range)
    self.word_embeddings = self.add_weight(
        "word_embeddings", shape=[self.vocab_size, self.embedding_size], initializer=init())
    self.position_embeddings = self.add_weight(
        "position_embeddings", shape=[self.max_position_embeddings, self.embedding_size],
        initializer=init())
    self.token_type_embeddings = self.add_weight(
        "token_type_embeddings", shape=[self.type_vocab_size, self.embedding_size],
        initializer=init())
    self.layer_norm.build([None, None, self.embedding_size])
    super().build(input_shape)

  @plain_python
  def call(self, input_word_ids, input_type_ids, training=None):
    """[B, S] int ids -> [B, S, E] embeddings; 0 < S <= max_position_embeddings."""
    limit = self.max_position_embeddings
    static = input_word_ids.shape[1] if input_word_ids.shape.rank == 2 else None
    if static is not None and not 0 < static <= limit:
      raise ValueError(f"sequence length {static}: the model takes 1 to "
                       f"max_position_embeddings={limit} positions")
    seq_length = tf.shape(input_word_ids)[1]
    if static is None:  # known only when run (a SavedModel called with another length)
      checks = [tf.debugging.assert_less_equal(
                    seq_length, limit,
                    message=f"the sequence is longer than max_position_embeddings={limit}"),
                tf.debugging.assert_positive(seq_length, message="the sequence length is 0")]
      with tf.control_dependencies(checks):
        seq_length = tf.identity(seq_length)
    words = tf.gather(self.word_embeddings, input_word_ids)           # [B, S, E]
    types = tf.gather(self.token_type_embeddings, input_type_ids)     # [B, S, E]
    positions = tf.gather(self.position_embeddings, tf.range(seq_length))  # [S, E]
    x = words + types + tf.cast(positions, words.dtype)[tf.newaxis]   # [B, S, E]
    return self.dropout(self.layer_norm(x), training=training)

  def get_config(self):
    config = super().get_config()
    config.update(vocab_size=self.vocab_size, embedding_size=self.embedding_size,
                  max_position_embeddings=self.max_position_embeddings,
                  type_vocab_size=self.type_vocab_size, dropout_rate=self.dropout_rate,
                  initializer_range=self.initializer_range, layer_norm_eps=self.layer_norm_eps)
    return config
