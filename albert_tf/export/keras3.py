"""Keras 3 layers over this project's TF-Hub exports (the only module importing `keras`).

TensorFlow 2.20's own `keras` is Keras 3, where `hub.KerasLayer` cannot run;
its way in to a SavedModel is `keras.layers.TFSMLayer`. Two things keep that
from working on the exports as they are, and these layers mend them:

* `AlbertEncoderLayer`: TFSMLayer calls its endpoint with the inputs dict and
  nothing else, so training mode never reaches the encoder; this layer calls
  the export's `__call__` with `training`. And TFSMLayer names the Keras
  variables it makes after the SavedModel's (`word_embeddings:0`), which Keras
  3's optimizers cannot build slots from (`'word_embeddings:0_momentum' is not
  a valid scope name`); here they are named without the `:0`. The Keras
  variables wrap the SavedModel's own, so fine-tuning trains the encoder.
* `AlbertPreprocessorLayer`: the preprocessor has no variables (TFSMLayer
  looks for them and fails); this plain layer tokenizes one or two string
  segments [B] and packs them at `seq_length`, as `preprocessor.tokenize` and
  `preprocessor.bert_pack_inputs` do.

  import keras
  from albert_tf.export.keras3 import AlbertEncoderLayer, AlbertPreprocessorLayer
  text = keras.Input(shape=(), dtype="string")
  inputs = AlbertPreprocessorLayer("hub/albert_preprocess", seq_length=128)([text])
  pooled = AlbertEncoderLayer("hub/albert_base")(inputs)["pooled_output"]
  model = keras.Model(text, keras.layers.Dense(2)(pooled))
"""

from typing import Optional, Sequence

import keras
import tensorflow as tf

_KEYS = ("input_mask", "input_type_ids", "input_word_ids")   # the encoder's inputs, sorted


class AlbertEncoderLayer(keras.layers.TFSMLayer):
  """An encoder SavedModel of `hub_export/export.py` as a Keras 3 layer: a dict of int32
  [B, S] `input_word_ids`, `input_mask`, `input_type_ids` -> `pooled_output` [B, H],
  `sequence_output` [B, S, H], `encoder_outputs`, `default`."""

  def __init__(self, filepath: str, trainable: bool = True, **kwargs):
    kwargs.pop("call_endpoint", None)
    super().__init__(filepath, call_endpoint="__call__", trainable=trainable, **kwargs)

  def _add_existing_weight(self, weight):
    """Tracks a SavedModel variable under a name Keras 3 accepts (no ":0")."""
    variable = keras.Variable(initializer=weight, trainable=weight.trainable,
                              dtype=weight.dtype, shape=weight.shape,
                              name=weight.name.split(":")[0].replace("/", "_"))
    self._track_variable(variable)

  def call(self, inputs, training=False):
    return self.call_endpoint_fn(dict(inputs), training=bool(training))

  def get_config(self):
    config = super().get_config()
    config.pop("call_endpoint", None)
    config.pop("call_training_endpoint", None)
    return config


class AlbertPreprocessorLayer(keras.layers.Layer):
  """A preprocessor SavedModel of `hub_export/export.py` as a Keras 3 layer: a list of
  one or two string tensors [B] -> the encoder's inputs at `seq_length`."""

  def __init__(self, filepath: str, seq_length: Optional[int] = None, **kwargs):
    super().__init__(trainable=False, **kwargs)
    self.filepath, self.seq_length = filepath, seq_length
    self._preprocessor = tf.saved_model.load(filepath)

  def call(self, segments: Sequence[tf.Tensor]):
    if not isinstance(segments, (list, tuple)):
      segments = [segments]
    tokens = [self._preprocessor.tokenize(tf.reshape(s, [-1])) for s in segments]
    if self.seq_length is None:
      packed = self._preprocessor.bert_pack_inputs(tokens)
    else:
      packed = self._preprocessor.bert_pack_inputs(tokens, seq_length=self.seq_length)
    return {k: packed[k] for k in _KEYS}   # in the order of compute_output_spec

  def compute_output_spec(self, segments):
    if not isinstance(segments, (list, tuple)):
      segments = [segments]
    shape = (segments[0].shape[0], self.seq_length)
    return {k: keras.KerasTensor(shape, dtype="int32") for k in _KEYS}   # one each

  def get_config(self):
    config = super().get_config()
    config.update(filepath=self.filepath, seq_length=self.seq_length)
    return config
