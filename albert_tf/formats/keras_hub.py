"""KerasHub presets (Keras 3): `AlbertBackbone`, and `AlbertTextClassifier` tasks.

A preset directory holds `config.json` (the backbone's class and arguments),
`metadata.json`, `model.weights.h5`, `tokenizer.json` with
`assets/tokenizer/vocabulary.spm`, and for a task `task.json` + `task.weights.h5`.
`num_groups` / `num_inner_repetitions` are ALBERT's `num_hidden_groups` /
`inner_group_num` (KerasHub applies group g to layers g*L/G ... (g+1)*L/G - 1, which is
ALBERT's `int(i / L * G)` when G divides L); KerasHub computes the tanh GELU only and
every LayerNorm at epsilon 1e-12. Its attention kernels keep the heads apart
([H, heads, head_dim]); `_names` is the table to the original names.

The config is read from config.json alone; the weights are read and written through
keras_hub itself (`pip install 'albert_tf[keras_hub]'`). This module, named for
KerasHub, is the one place of the package that imports `keras` (3) and `keras_hub`.
"""

import json
import os
from typing import Callable, Dict, Optional, Tuple, Union

import numpy as np

from albert_tf.formats.base import ModelDirectory
from albert_tf.modeling.checkpoints import LoadReport, assign_by_original_name, variable_map
from albert_tf.modeling.config import AlbertConfig

NAME = "keras_hub"
CONFIG = "config.json"
TASK = "task.json"
METADATA = "metadata.json"   # KerasHub writes it and never reads it back; albert_tf adds a
                             # classifier's problem_type and labels to it
WEIGHTS = "model.weights.h5"
SPM = os.path.join("assets", "tokenizer", "vocabulary.spm")
BACKBONE = "AlbertBackbone"
CLASSIFIER = "AlbertTextClassifier"

# (KerasHub path under a block, original name under inner_group_k/) for each transformer tensor.
_BLOCK = {
    "self_attention_layer/query": "attention_1/self/query",
    "self_attention_layer/key": "attention_1/self/key",
    "self_attention_layer/value": "attention_1/self/value",
    "self_attention_layer/attention_output": "attention_1/output/dense",
    "self_attention_layer_norm": "LayerNorm",
    "feedforward_intermediate_dense": "ffn_1/intermediate/dense",
    "feedforward_output_dense": "ffn_1/intermediate/output/dense",
    "feedforward_layer_norm": "LayerNorm_1",
}
_FIXED = {
    "token_embedding/embeddings": "bert/embeddings/word_embeddings",
    "position_embedding/embeddings": "bert/embeddings/position_embeddings",
    "segment_embedding/embeddings": "bert/embeddings/token_type_embeddings",
    "embeddings_layer_norm/gamma": "bert/embeddings/LayerNorm/gamma",
    "embeddings_layer_norm/beta": "bert/embeddings/LayerNorm/beta",
    "embedding_projection/kernel": "bert/encoder/embedding_hidden_mapping_in/kernel",
    "embedding_projection/bias": "bert/encoder/embedding_hidden_mapping_in/bias",
    "pooled_dense/kernel": "bert/pooler/dense/kernel",
    "pooled_dense/bias": "bert/pooler/dense/bias",
    "logits/bias": "output_bias",
}
_TRANSPOSED = {"logits/kernel": "output_weights"}   # KerasHub [H, C]; the original [C, H]


def _names(config: AlbertConfig) -> Dict[str, Tuple[str, Callable, Callable]]:
  """{KerasHub weight path: (original name, to original layout, to KerasHub layout)}."""
  same = (lambda x: x, lambda x: x)
  heads, size = config.num_attention_heads, config.hidden_size // config.num_attention_heads
  out = {path: (name, *same) for path, name in _FIXED.items()}
  out.update({path: (name, np.transpose, np.transpose) for path, name in _TRANSPOSED.items()})
  for g in range(config.num_hidden_groups):
    for k in range(config.inner_group_num):
      for path, name in _BLOCK.items():
        for leaf in (("gamma", "beta") if path.endswith("norm") else ("kernel", "bias")):
          original = f"bert/encoder/transformer/group_{g}/inner_group_{k}/{name}/{leaf}"
          kh = f"group_{g}_inner_layer_{k}/{path}/{leaf}"
          if path.endswith(("query", "key", "value")):      # [H, N, d] / [N, d] <-> [H, N*d] / [N*d]
            shape = (-1, heads, size) if leaf == "kernel" else (heads, size)
            merged = (lambda x: x.reshape(x.shape[0], -1)) if leaf == "kernel" else np.ravel
            out[kh] = (original, merged, lambda x, s=shape: x.reshape(s))
          elif path.endswith("attention_output") and leaf == "kernel":   # [N, d, H] <-> [N*d, H]
            out[kh] = (original, lambda x: x.reshape(-1, x.shape[-1]),
                       lambda x: x.reshape(heads, size, -1))
          else:
            out[kh] = (original, *same)
  return out


def _read_json(path: str) -> dict:
  try:
    with open(path, encoding="utf-8") as f:
      data = json.load(f)
  except (OSError, ValueError) as e:
    raise ValueError(f"{path}: not a readable JSON file ({e})") from None
  if not isinstance(data, dict):
    raise ValueError(f"{path}: not a JSON object")
  return data


def recognize(path) -> bool:
  """A directory whose config.json names a KerasHub class (`keras_hub>...`)."""
  file = os.path.join(str(path), CONFIG)
  if not (os.path.isdir(path) and os.path.isfile(file)):
    return False
  try:
    data = _read_json(file)
  except ValueError:
    return False
  return (str(data.get("registered_name", "")).startswith("keras_hub>")
          or str(data.get("module", "")).startswith("keras_hub."))


def read_config(path: str) -> AlbertConfig:
  """The AlbertConfig of a preset's config.json; another model's preset is refused."""
  file = os.path.join(path, CONFIG)
  data = _read_json(file)
  if data.get("class_name") != BACKBONE:
    raise ValueError(f"{file}: a KerasHub {data.get('class_name')!r} preset, not ALBERT "
                     f"(class_name {BACKBONE!r}); albert_tf reads ALBERT models only")
  c = data.get("config")
  if not isinstance(c, dict):
    raise ValueError(f"{file}: no 'config' object")
  try:
    return AlbertConfig(
        vocab_size=c["vocabulary_size"], embedding_size=c["embedding_dim"],
        hidden_size=c["hidden_dim"], num_hidden_layers=c["num_layers"],
        num_hidden_groups=c.get("num_groups", 1),
        inner_group_num=c.get("num_inner_repetitions", 1),
        num_attention_heads=c["num_heads"], intermediate_size=c["intermediate_dim"],
        hidden_act="gelu", hidden_dropout_prob=c.get("dropout", 0.0),
        attention_probs_dropout_prob=c.get("dropout", 0.0),
        max_position_embeddings=c.get("max_sequence_length", 512),
        type_vocab_size=c.get("num_segments", 2))
  except KeyError as e:
    raise ValueError(f"{file}: the AlbertBackbone config lacks {e}") from None
  except (TypeError, ValueError) as e:
    raise ValueError(f"{file}: {e}") from None


def _task(path: str) -> Optional[dict]:
  file = os.path.join(path, TASK)
  return _read_json(file) if os.path.isfile(file) else None


def read_directory(path: str, flag: str = "--albert_directory") -> ModelDirectory:
  """A preset: its config, tokenizer and (an AlbertTextClassifier's) label count."""
  config = read_config(path)
  task = _task(path)
  heads, num_labels = [], None
  labels = problem_type = None
  if task and task.get("class_name") == CLASSIFIER:
    heads, num_labels = ["classifier"], int(task["config"]["num_classes"])
    metadata = os.path.join(path, METADATA)
    if os.path.isfile(metadata):
      written = _read_json(metadata)
      labels, problem_type = written.get("labels"), written.get("problem_type")
      if labels is not None and len(labels) != num_labels:
        raise ValueError(f"{metadata}: {len(labels)} labels for a classifier of "
                         f"{num_labels} classes ({TASK})")
  spm = os.path.join(path, SPM)
  found = dict(heads=heads, num_labels=num_labels, labels=labels, problem_type=problem_type)
  if not os.path.exists(spm):
    return ModelDirectory(path, NAME, config, path, None, None, None, **found,
                          vocabulary_error=f"{flag}={path} has no tokenizer ({SPM} not found)")
  # KerasHub's tokenizer runs SentencePiece alone. albert_tf's presets carry ALBERT's
  # normalization in the model (`albert_tf.text.standalone`), which lower-casing again
  # leaves as it is; the releases' text is lower-cased first.
  return ModelDirectory(path, NAME, config, path, spm, None, True, **found)


def _keras_hub():
  try:
    import keras_hub  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ImportError("reading or writing KerasHub presets needs keras-hub: "
                      "pip install 'albert_tf[keras_hub]'") from None
  return keras_hub


def load(model, path: str) -> LoadReport:
  """Loads a preset's backbone (and an AlbertTextClassifier's head) into `model`."""
  config = read_config(path)
  keras_hub = _keras_hub()
  task = _task(path)
  if task and task.get("class_name") == CLASSIFIER and "output_weights" in variable_map(model):
    source = keras_hub.models.AlbertTextClassifier.from_preset(path, preprocessor=None)
  else:
    source = keras_hub.models.Backbone.from_preset(path)
  names = _names(config)
  stored, unexpected = {}, []
  for weight in source.weights:
    key = weight.path.split("albert_backbone/", 1)[-1]
    if key not in names:
      unexpected.append(key)
      continue
    original, to_original, _ = names[key]
    value = to_original(np.asarray(weight.numpy(), np.float32))
    stored[original] = (value.shape, lambda v=value: v)
  if config.embedding_size == config.hidden_size:
    # albert_tf, as the original, has no projection when E == H: KerasHub's must be identity.
    kernel = stored.pop("bert/encoder/embedding_hidden_mapping_in/kernel")[1]()
    bias = stored.pop("bert/encoder/embedding_hidden_mapping_in/bias")[1]()
    if not (np.array_equal(kernel, np.eye(len(kernel))) and not bias.any()):
      raise ValueError(f"{path}: embedding_dim == hidden_dim with a trained embedding "
                       "projection, which ALBERT (and albert_tf) does not have")
  return assign_by_original_name(model, stored, path, unexpected=tuple(unexpected),
                                 noun="KerasHub preset")


def check_writable(config: AlbertConfig) -> None:
  """A ValueError naming the field when KerasHub's AlbertBackbone cannot compute `config`."""
  if config.hidden_act.lower() != "gelu":
    raise ValueError(f"hidden_act={config.hidden_act!r}: KerasHub's AlbertBackbone computes "
                     "only the tanh GELU (hidden_act 'gelu'), so no preset is written")
  if config.num_hidden_layers % config.num_hidden_groups:
    raise ValueError(f"num_hidden_groups={config.num_hidden_groups} does not divide "
                     f"num_hidden_layers={config.num_hidden_layers}: KerasHub's AlbertBackbone "
                     "requires it, so no preset is written")
  if abs(config.layer_norm_eps - 1e-12) > 1e-15:
    raise ValueError(f"layer_norm_eps={config.layer_norm_eps}: KerasHub's AlbertBackbone uses "
                     "1e-12, so no preset is written")


def write_preset(model, directory: str, spm_model: Optional[Union[str, bytes]] = None,
                 num_classes: Optional[int] = None, dropout: float = 0.1,
                 sequence_length: int = 512, activation: Optional[str] = None,
                 labels: Optional[list] = None, problem_type: Optional[str] = None,
                 extra: Optional[dict] = None) -> str:
  """Writes `model`'s backbone (and, with `num_classes`, its classifier head as an
  AlbertTextClassifier) as a KerasHub preset in `directory` (which must be empty), with
  the SentencePiece tokenizer when `spm_model` (a file, or a serialized model) is given.
  A classifier's `activation` ("sigmoid" for multi-label: KerasHub then returns each
  label's probability) goes to its config, its `labels` and `problem_type` to
  metadata.json. Returns the class written."""
  encoder = getattr(model, "encoder", model)
  config = encoder.config
  check_writable(config)
  keras_hub = _keras_hub()
  backbone = keras_hub.models.AlbertBackbone(
      vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers,
      num_heads=config.num_attention_heads, embedding_dim=config.embedding_size,
      hidden_dim=config.hidden_size, intermediate_dim=config.intermediate_size,
      num_groups=config.num_hidden_groups, num_inner_repetitions=config.inner_group_num,
      dropout=config.hidden_dropout_prob, max_sequence_length=config.max_position_embeddings,
      num_segments=config.type_vocab_size)
  tokenizer = keras_hub.models.AlbertTokenizer(proto=spm_model) if spm_model else None
  target = backbone
  if num_classes:
    preprocessor = (keras_hub.models.AlbertTextClassifierPreprocessor(
        tokenizer, sequence_length=sequence_length) if tokenizer else None)
    target = keras_hub.models.AlbertTextClassifier(backbone, num_classes=num_classes,
                                                   preprocessor=preprocessor, dropout=dropout,
                                                   activation=activation)
  values = {n: v.numpy() for n, v in variable_map(model).items()}
  if config.embedding_size == config.hidden_size:
    values["bert/encoder/embedding_hidden_mapping_in/kernel"] = np.eye(config.hidden_size)
    values["bert/encoder/embedding_hidden_mapping_in/bias"] = np.zeros(config.hidden_size)
  names = _names(config)
  for weight in target.weights:
    key = weight.path.split("albert_backbone/", 1)[-1]
    original, _, to_keras_hub = names[key]
    weight.assign(to_keras_hub(np.asarray(values[original], np.float32)))
  target.save_to_preset(directory)
  if tokenizer is not None and not num_classes:
    tokenizer.save_to_preset(directory)
  if num_classes and (labels or problem_type):
    metadata = _read_json(os.path.join(directory, METADATA))
    metadata.update({k: v for k, v in (("problem_type", problem_type),
                                       ("labels", list(labels) if labels else None)) if v})
    metadata.update(extra or {})     # a multi-label run's tuned thresholds
    with open(os.path.join(directory, METADATA), "w", encoding="utf-8") as f:
      json.dump(metadata, f, indent=4)
  return type(target).__name__
