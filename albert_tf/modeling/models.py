"""Task models: an AlbertEncoder plus a head."""

from typing import Dict, Optional, Union

import tensorflow as tf
import tf_keras as keras

from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.encoder import AlbertEncoder
from albert_tf.modeling.heads import (AlbertClassificationHead, AlbertMaskedLMHead,
                             AlbertSentenceOrderHead, AlbertSpanHead, AlbertSpanV2Head)
from albert_tf.modeling.tracing import plain_python

ENCODER_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")


def _as_encoder(encoder_or_config) -> AlbertEncoder:
  if isinstance(encoder_or_config, AlbertEncoder):
    return encoder_or_config
  return AlbertEncoder(encoder_or_config)


def _hidden_size(encoder) -> int:
  """H of an AlbertEncoder, or of an encoder layer (such as hub.KerasLayer) by calling it."""
  if isinstance(encoder, AlbertEncoder):
    return encoder.config.hidden_size
  return int(encoder({k: tf.zeros([1, 2], tf.int32) for k in ENCODER_INPUTS}
                     )["pooled_output"].shape[-1])


class _TaskModel(keras.Model):
  """An encoder plus a head. The encoder is an AlbertEncoder (or a config / preset to
  build one), or a layer with its dict interface such as `hub.KerasLayer` of an
  exported encoder SavedModel (such a model is saved as a SavedModel, not a config)."""

  # What the model is to the modules that write it elsewhere (one place per model class):
  HF_ARCHITECTURE = "AlbertModel"   # the transformers class holding the same weights
  HF_POOLED = True                  # whether that class holds the pooler
  KERAS_HUB_TASK = None             # the KerasHub task class a preset of it loads as
  EXPORTS_ENCODER = False           # an inference export is of its encoder alone
  EXPORT_RANK = 2                   # rank of the id inputs an export takes ([B, S])

  def __init__(self, encoder, **kwargs):
    super().__init__(**kwargs)
    self.encoder = encoder if isinstance(encoder, keras.layers.Layer) else _as_encoder(encoder)

  def hf_architecture(self, skip=()) -> str:
    """The transformers class that holds what this model holds, less the heads in `skip`
    (original variable names of heads never trained)."""
    del skip
    return self.HF_ARCHITECTURE

  def export_inputs(self) -> Dict[str, tf.dtypes.DType]:
    """Inputs an inference export takes besides the encoder's three int32 ones."""
    return {}

  def export_outputs(self, outputs) -> Dict[str, tf.Tensor]:
    """What an inference export (ONNX, SavedModel) returns of `call`'s outputs."""
    return {"logits": outputs}

  def _config(self, **head_config):
    if not isinstance(self.encoder, AlbertEncoder):
      raise NotImplementedError(f"get_config needs an AlbertEncoder; save a {type(self).__name__} "
                                "with another encoder as a SavedModel instead")
    return dict(encoder=self.encoder.config.to_dict(), name=self.name, **head_config)

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**config)


@keras.utils.register_keras_serializable(package="albert_tf")
class AlbertPretrainer(_TaskModel):
  """AlbertEncoder + masked-LM head (tied to the word embeddings) + sentence-order head.

  Called with the encoder's inputs and, optionally, `masked_lm_positions`
  [B, P] int32, it returns the encoder's outputs plus `sop_logits` [B, 2]
  and, when positions are given, `mlm_logits` [B, P, V] (both float32).

  Args:
    encoder: an AlbertEncoder to reuse, or an AlbertConfig / dict / preset
      name to build one from.
  """

  def __init__(self, encoder: Union[AlbertEncoder, AlbertConfig, dict, str], **kwargs):
    super().__init__(_as_encoder(encoder), **kwargs)
    c = self.encoder.config
    self.masked_lm = AlbertMaskedLMHead(c.vocab_size, c.embedding_size, c.hidden_act,
                                        c.initializer_range, c.layer_norm_eps,
                                        name="predictions")
    self.sentence_order = AlbertSentenceOrderHead(2, c.initializer_range, name="seq_relationship")
    self.masked_lm.build([None, None, c.hidden_size])
    self.sentence_order.build([None, c.hidden_size])
    self.built = True

  HF_ARCHITECTURE = "AlbertForPreTraining"
  EXPORTS_ENCODER = True

  @property
  def config(self) -> AlbertConfig:
    return self.encoder.config

  def hf_architecture(self, skip=()) -> str:
    if any(n.startswith("cls/seq_relationship/") for n in skip):
      return "AlbertForMaskedLM"      # without its sentence-order head
    return self.HF_ARCHITECTURE

  @plain_python
  def call(self, inputs: Dict[str, tf.Tensor], training=None) -> Dict[str, tf.Tensor]:
    outputs = dict(self.encoder(inputs, training=training))
    outputs["sop_logits"] = self.sentence_order(outputs["pooled_output"])            # [B, 2]
    positions = inputs.get("masked_lm_positions")
    if positions is not None:
      masked = tf.gather(outputs["sequence_output"], positions, batch_dims=1)        # [B, P, H]
      outputs["mlm_logits"] = self.masked_lm(masked, self.encoder.embedding_table)  # [B, P, V]
    return outputs

  @property
  def checkpoint_items(self):
    """Objects to track in a tf.train.Checkpoint; `encoder` alone restores fine-tuning models."""
    return dict(encoder=self.encoder, masked_lm=self.masked_lm,
                sentence_order=self.sentence_order)

  def get_config(self):
    return self._config()


@keras.utils.register_keras_serializable(package="albert_tf")
class AlbertClassifier(_TaskModel):
  """An encoder + the original classification head (`output_weights`, `output_bias`).

  Called with the encoder's inputs it returns float32 logits [B, num_classes]
  (num_classes=1: a regression score). The encoder is an AlbertEncoder or any
  layer with the same dict interface, such as `hub.KerasLayer` of an exported
  encoder SavedModel.

  Args:
    encoder: an AlbertEncoder (or config / preset to build one) or a layer
      mapping the three int32 inputs to a dict with `pooled_output`.
    num_classes: number of labels.
    dropout_rate: dropout on the pooled output in training.
    initializer_range: stddev of the head's initializer.
    seed: seed of the head's initializer.
  """

  HF_ARCHITECTURE = "AlbertForSequenceClassification"
  KERAS_HUB_TASK = "AlbertTextClassifier"

  def __init__(self, encoder, num_classes: int, dropout_rate: float = 0.1,
               initializer_range: float = 0.02, seed=None, **kwargs):
    super().__init__(encoder, **kwargs)
    self.num_classes = num_classes
    self.classifier = AlbertClassificationHead(num_classes, dropout_rate, initializer_range,
                                               seed=seed, name="classifier")
    self.classifier.build([None, _hidden_size(self.encoder)])
    self.built = True

  @plain_python
  def call(self, inputs: Dict[str, tf.Tensor], training=None) -> tf.Tensor:
    encoder_inputs = {k: inputs[k] for k in ENCODER_INPUTS}
    pooled = self.encoder(encoder_inputs, training=training)["pooled_output"]    # [B, H]
    return self.classifier(pooled, training=training)                             # [B, C]

  @property
  def checkpoint_items(self):
    return dict(encoder=self.encoder, classifier=self.classifier)

  def original_head_variables(self) -> Dict[str, tf.Variable]:
    """The head's variables under the original run_classifier.py names."""
    return {"output_weights": self.classifier.output_weights,
            "output_bias": self.classifier.output_bias}

  def get_config(self):
    return self._config(num_classes=self.num_classes, dropout_rate=self.classifier.dropout_rate,
                        initializer_range=self.classifier.initializer_range,
                        seed=self.classifier.seed)


@keras.utils.register_keras_serializable(package="albert_tf")
class AlbertQuestionAnswerer(_TaskModel):
  """An encoder + the original SQuAD head: v1.1 span logits, or the v2.0 head with
  answer verification.

  Called with the encoder's inputs it returns (float32):
  - v1.1: start_logits, end_logits [B, S];
  - v2.0 (inputs also hold `p_mask` [B, S]): with `start_positions` [B] in the
    inputs (training), start_log_probs, end_log_probs [B, S] and cls_logits
    [B]; without, the top-k outputs of AlbertSpanV2Head.

  Args:
    encoder: an AlbertEncoder (or config / preset) or a layer with the same
      dict interface returning `sequence_output` (e.g. hub.KerasLayer).
    version_2_with_negative: use the v2.0 head.
    start_n_top, end_n_top: beam sizes of the v2.0 head at inference.
    dropout_rate: dropout in the v2.0 answer-class branch.
    initializer_range: stddev of the head's initializers.
    seed: seed of the head's initializers.
  """

  HF_ARCHITECTURE = "AlbertForQuestionAnswering"

  def __init__(self, encoder, version_2_with_negative: bool = False, start_n_top: int = 5,
               end_n_top: int = 5, dropout_rate: float = 0.1, initializer_range: float = 0.02,
               seed=None, **kwargs):
    super().__init__(encoder, **kwargs)
    self.version_2_with_negative = version_2_with_negative
    hidden = _hidden_size(self.encoder)
    if version_2_with_negative:
      self.span = AlbertSpanV2Head(hidden, start_n_top, end_n_top, dropout_rate,
                                   initializer_range, seed=seed, name="squad_v2")
    else:
      self.span = AlbertSpanHead(initializer_range, seed=seed, name="squad")
    self.span.build([None, None, hidden])
    self._kwargs = dict(start_n_top=start_n_top, end_n_top=end_n_top, dropout_rate=dropout_rate,
                        initializer_range=initializer_range, seed=seed)
    self.built = True

  @plain_python
  def call(self, inputs: Dict[str, tf.Tensor], training=None) -> Dict[str, tf.Tensor]:
    sequence = self.encoder({k: inputs[k] for k in ENCODER_INPUTS},
                            training=training)["sequence_output"]            # [B, S, H]
    if not self.version_2_with_negative:
      return self.span(sequence)
    return self.span(sequence, inputs["p_mask"], inputs.get("start_positions"),
                     training=training)

  @property
  def checkpoint_items(self):
    return dict(encoder=self.encoder, squad=self.span)

  def hf_architecture(self, skip=()) -> str:
    # transformers has no v2.0 head: such a model is written as its encoder.
    return "AlbertModel" if self.version_2_with_negative else self.HF_ARCHITECTURE

  def export_inputs(self) -> Dict[str, tf.dtypes.DType]:
    return {"p_mask": tf.float32} if self.version_2_with_negative else {}

  def export_outputs(self, outputs) -> Dict[str, tf.Tensor]:
    return dict(outputs)                                  # the span heads' named outputs

  def original_head_variables(self) -> Dict[str, tf.Variable]:
    """The head's variables under the original squad_utils.py names."""
    if not self.version_2_with_negative:
      return {"cls/squad/output_weights": self.span.output_weights,
              "cls/squad/output_bias": self.span.output_bias}
    head = self.span
    names = {}
    for scope, layer in (("start_logits/dense", head.start_dense),
                         ("end_logits/dense_0", head.end_dense_0),
                         ("end_logits/dense_1", head.end_dense_1),
                         ("answer_class/dense_0", head.answer_dense_0),
                         ("answer_class/dense_1", head.answer_dense_1)):
      names[scope + "/kernel"] = layer.kernel
      if layer.use_bias:
        names[scope + "/bias"] = layer.bias
    names["end_logits/LayerNorm/gamma"] = head.end_layer_norm.gamma
    names["end_logits/LayerNorm/beta"] = head.end_layer_norm.beta
    return names

  def get_config(self):
    return self._config(version_2_with_negative=self.version_2_with_negative, **self._kwargs)


# How AlbertWindowsClassifier pools a text's windows (--window_pooling): the max of their
# [CLS] vectors (pooled outputs) before the classifier, or the max or mean of their logits.
WINDOW_POOLINGS = ("cls_max", "max", "mean")


@keras.utils.register_keras_serializable(package="albert_tf")
class AlbertWindowsClassifier(AlbertClassifier):
  """An AlbertClassifier over each text's windows (run_classifier.py --long_text=windows).

  Called with the encoder's inputs shaped [B, K, S] (K windows of a text; a window whose
  `input_mask` is all 0 pads the batch and is left out) it returns float32 logits [B, C]:
  - `cls_max`: each feature of the windows' pooled outputs [B, K, H] at its largest over
    the windows, then the classifier. Every window can win some features, so the window
    that decides reaches the classifier from the first step (docs/own_data.md);
  - `max` / `mean`: the classifier on each window, then the max or the mean of the
    windows' logits [B, K, C]. The gradient reaches one window per class (max) or each
    window at 1/K (mean): past a few windows a randomly started head may never learn.
  Its variables are an AlbertClassifier's: one window's classifier, as every export
  that classifies one window (Hugging Face, KerasHub) holds it.

  Args:
    encoder, num_classes, dropout_rate, initializer_range, seed: as AlbertClassifier's.
    pooling: one of WINDOW_POOLINGS.
  """

  EXPORT_RANK = 3        # [B, K, S]

  def __init__(self, encoder, num_classes: int, pooling: str = "cls_max",
               dropout_rate: float = 0.1, initializer_range: float = 0.02, seed=None,
               **kwargs):
    if pooling not in WINDOW_POOLINGS:
      raise ValueError(f"pooling={pooling!r}: one of {', '.join(WINDOW_POOLINGS)}")
    super().__init__(encoder, num_classes, dropout_rate, initializer_range, seed, **kwargs)
    self.pooling = pooling

  @plain_python
  def call(self, inputs: Dict[str, tf.Tensor], training=None) -> tf.Tensor:
    shape = tf.shape(inputs["input_word_ids"])                                  # [B, K, S]
    flat = {k: tf.reshape(inputs[k], [-1, shape[-1]]) for k in ENCODER_INPUTS}  # [B*K, S]
    pooled = self.encoder(flat, training=training)["pooled_output"]             # [B*K, H]
    present = tf.reduce_any(inputs["input_mask"] > 0, axis=-1)[:, :, None]      # [B, K, 1]
    if self.pooling == "cls_max":
      pooled = tf.reshape(pooled, [shape[0], shape[1], -1])                     # [B, K, H]
      # (a pooled output is a tanh: -1 is below every present window's)
      pooled = tf.reduce_max(tf.where(present, pooled, tf.constant(-1, pooled.dtype)), 1)
      return self.classifier(pooled, training=training)                          # [B, C]
    logits = self.classifier(pooled, training=training)                          # [B*K, C]
    logits = tf.reshape(logits, [shape[0], shape[1], -1])                        # [B, K, C]
    if self.pooling == "max":
      return tf.reduce_max(tf.where(present, logits, logits.dtype.min), axis=1)  # [B, C]
    weights = tf.cast(present, logits.dtype)                                     # [B, K, 1]
    return tf.reduce_sum(logits * weights, 1) / tf.maximum(tf.reduce_sum(weights, 1), 1.0)

  def get_config(self):
    return dict(super().get_config(), pooling=self.pooling)


@keras.utils.register_keras_serializable(package="albert_tf")
class AlbertTokenClassifier(AlbertClassifier):
  """An encoder + a per-token classification head (named-entity recognition).

  The classifier's head (dropout, then `output_weights` [num_labels, H] and
  `output_bias`) applied to every position of the sequence output; Hugging Face's
  `AlbertForTokenClassification` holds the same (`classifier.weight` [num_labels, H],
  `classifier.bias`). Called with the encoder's inputs it returns float32 logits
  [B, S, num_labels].

  Args:
    encoder: an AlbertEncoder (or config / preset) or a layer with the same
      dict interface (e.g. hub.KerasLayer).
    num_labels: number of tags.
    dropout_rate, initializer_range, seed: the head's, as AlbertClassifier's.
  """

  HF_ARCHITECTURE = "AlbertForTokenClassification"
  HF_POOLED = False      # transformers' token classifier has no pooler (nor uses one)
  KERAS_HUB_TASK = None

  def __init__(self, encoder, num_labels: int, dropout_rate: float = 0.1,
               initializer_range: float = 0.02, seed=None, **kwargs):
    super().__init__(encoder, num_labels, dropout_rate, initializer_range, seed, **kwargs)
    self.num_labels = num_labels

  @plain_python
  def call(self, inputs: Dict[str, tf.Tensor], training=None) -> tf.Tensor:
    encoder_inputs = {k: inputs[k] for k in ENCODER_INPUTS}
    sequence = self.encoder(encoder_inputs, training=training)["sequence_output"]  # [B, S, H]
    shape = tf.shape(sequence)
    tokens = tf.reshape(sequence, [-1, sequence.shape[-1]])                         # [B*S, H]
    logits = self.classifier(tokens, training=training)                             # [B*S, C]
    return tf.reshape(logits, [shape[0], shape[1], self.num_labels])                # [B, S, C]

  def get_config(self):
    config = super().get_config()
    config["num_labels"] = config.pop("num_classes")
    return config


@keras.utils.register_keras_serializable(package="albert_tf")
class AlbertMultipleChoice(AlbertClassifier):
  """An encoder + the original RACE head: one logit per choice from its pooled output.

  Called with the encoder's inputs shaped [B, C, S] it returns float32 logits
  [B, C] (softmax over the choices in the loss). The head is the
  classification head with one output (`output_weights` [1, H], as the
  original race_utils).

  Args:
    encoder: an AlbertEncoder (or config / preset) or a layer with the same
      dict interface (e.g. hub.KerasLayer).
    dropout_rate: dropout on the pooled output in training.
    initializer_range: stddev of the head's initializer.
    seed: seed of the head's initializer.
  """

  HF_ARCHITECTURE = "AlbertForMultipleChoice"
  KERAS_HUB_TASK = None
  EXPORT_RANK = 3        # [B, C, S]

  def __init__(self, encoder, dropout_rate: float = 0.1, initializer_range: float = 0.02,
               seed=None, **kwargs):
    super().__init__(encoder, 1, dropout_rate, initializer_range, seed, **kwargs)

  @plain_python
  def call(self, inputs: Dict[str, tf.Tensor], training=None) -> tf.Tensor:
    shape = tf.shape(inputs["input_word_ids"])                                  # [B, C, S]
    flat = {k: tf.reshape(inputs[k], [-1, shape[-1]]) for k in ENCODER_INPUTS}  # [B*C, S]
    logits = super().call(flat, training=training)                               # [B*C, 1]
    return tf.reshape(logits, [shape[0], shape[1]])                               # [B, C]

  def get_config(self):
    config = super().get_config()
    del config["num_classes"]
    return config


def for_hf_architecture(architecture: str, encoder, num_labels: Optional[int] = None,
                        dropout_rate: Optional[float] = None):
  """The albert_tf model of transformers class `architecture` over `encoder` (AlbertModel,
  or a class albert_tf has no model of: the encoder itself)."""
  head = dict(dropout_rate=dropout_rate or 0.1)
  builders = {
      "AlbertForPreTraining": lambda: AlbertPretrainer(encoder),
      "AlbertForMaskedLM": lambda: AlbertPretrainer(encoder),
      "AlbertForSequenceClassification": lambda: AlbertClassifier(encoder, num_labels or 2,
                                                                  **head),
      "AlbertForTokenClassification": lambda: AlbertTokenClassifier(encoder, num_labels or 2,
                                                                    **head),
      "AlbertForMultipleChoice": lambda: AlbertMultipleChoice(encoder, **head),
      "AlbertForQuestionAnswering": lambda: AlbertQuestionAnswerer(encoder),
  }
  return builders[architecture]() if architecture in builders else encoder


def for_heads(heads, config: AlbertConfig, num_labels: Optional[int] = None):
  """The albert_tf model that holds the heads a model directory holds (names as
  `albert_tf.formats` reports them: token_classifier, classifier, squad_v2, squad, mlm,
  sop), over a new encoder of `config`."""
  if "token_classifier" in heads:
    return AlbertTokenClassifier(config, num_labels or 2)
  if "classifier" in heads:
    return AlbertClassifier(config, num_labels or 2)
  if "squad_v2" in heads or "squad" in heads:
    return AlbertQuestionAnswerer(config, version_2_with_negative="squad_v2" in heads)
  if "mlm" in heads or "sop" in heads:
    return AlbertPretrainer(config)
  return AlbertEncoder(config)
