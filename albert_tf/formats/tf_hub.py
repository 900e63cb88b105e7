"""TF2 TF-Hub encoder SavedModels: albert_tf's own exports and tf-models-official's.

Two kinds of module load here, told apart by what they carry:

- albert_tf's (`hub_export/export.py`): an `albert_config_file` asset, the vocabulary
  (`sp_model_file` or `vocab_file`), `do_lower_case`, and the encoder's variables in the
  order `functional_models` saves them (read back into a model of the same config).
- tf-models-official's (`official.nlp.tools.export_tfhub_lib.export_model` with an
  `albert` EncoderConfig: Google's `albert_en_base/3` ... `albert_en_xxlarge/3`): no
  config, only the `sp_model_file` asset and Keras variables by name. The config comes
  from the variables' shapes (vocab, E, H, I, positions, types; attention kernels are
  [H, heads, head_dim]), the layer count from the traced `encoder_outputs`, the
  activation from the Keras metadata where it is kept (else tf-models' tanh GELU: what
  those modules compute), and `_TF_MODELS` maps each name to the original one.
  Their preprocessor lower-cases and strips accents, so `do_lower_case` is True.

A SavedModel runs its graph's ops when loaded: load only modules you trust.
"""

import json
import os
import re
from typing import Dict, Optional, Tuple

import numpy as np
import tensorflow as tf
import tf_keras as keras

from albert_tf.formats.base import ModelDirectory
from albert_tf.modeling.checkpoints import LoadReport, assign_by_original_name, variable_map
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.encoder import INPUT_KEYS
from albert_tf.modeling.models import AlbertPretrainer

NAME = "tf_hub"
FROM_TF_HUB = "from_tf_hub"   # --spm_model_file / --vocab_file value: the SavedModel's vocabulary

# ----------------------------------------------------------------------------- albert_tf's exports


def _inputs(with_positions: bool = False) -> Dict[str, keras.Input]:
  keys = INPUT_KEYS + (("masked_lm_positions",) if with_positions else ())
  return {k: keras.Input(shape=(None,), dtype=tf.int32, name=k) for k in keys}


def _with_default(outputs):
  outputs = dict(outputs)
  outputs["default"] = outputs["pooled_output"]
  return outputs


def functional_models(pretrainer: AlbertPretrainer):
  """(encoder, masked-LM, sentence-order) functional Keras models over the pretrainer:
  what an albert_tf export saves, and so the order of its variables."""
  encoder = pretrainer.encoder
  inputs = _inputs()
  core = keras.Model(inputs, _with_default(encoder(inputs)), name="albert_encoder")
  mlm_inputs = _inputs(with_positions=True)
  mlm = keras.Model(mlm_inputs, _with_default(pretrainer(mlm_inputs)), name="albert_mlm")
  sop_inputs = _inputs()
  sop_outputs = dict(encoder(sop_inputs))
  sop_outputs["sop_logits"] = pretrainer.sentence_order(sop_outputs["pooled_output"])
  sop = keras.Model(sop_inputs, _with_default(sop_outputs), name="albert_sop")
  return core, mlm, sop


def exported_variables(core, mlm, sop):
  """The export's `variables` (the encoder's) and `head_variables`, in their saved order."""
  encoder_ids = {id(v) for v in core.variables}
  return list(core.variables), [v for v in mlm.variables + sop.variables
                                if id(v) not in encoder_ids]


def exported_encoder_variables(pretrainer: AlbertPretrainer):
  """The pretrainer's encoder variables in the order an export of it saves them (the order
  of `hub.KerasLayer(export).variables`)."""
  return exported_variables(*functional_models(pretrainer))[0]


def load_encoder_export(pretrainer: AlbertPretrainer, export_path: str) -> None:
  """Reads the weights of an albert_tf encoder SavedModel into a pretrainer of the same
  config (every variable must match, in shape too)."""
  variables, head_variables = exported_variables(*functional_models(pretrainer))
  prefix = os.path.join(export_path, "variables", "variables")
  status = tf.train.Checkpoint(variables=variables, head_variables=head_variables).read(prefix)
  try:
    status.assert_existing_objects_matched()
  except AssertionError as e:
    raise ValueError(f"{export_path} is not an encoder export of this model: {e}") from None
  status.expect_partial()


# ----------------------------------------------------------------------------- tf-models' modules

# tf-models-official's Keras name (AlbertEncoder, BertPretrainerV2's MaskedLM) -> original name.
_ENCODER = "bert/encoder/transformer/group_0/inner_group_0/"
_TF_MODELS = {
    "word_embeddings/embeddings": "bert/embeddings/word_embeddings",
    "position_embedding/embeddings": "bert/embeddings/position_embeddings",
    "type_embeddings/embeddings": "bert/embeddings/token_type_embeddings",
    "embeddings/layer_norm/gamma": "bert/embeddings/LayerNorm/gamma",
    "embeddings/layer_norm/beta": "bert/embeddings/LayerNorm/beta",
    "embedding_projection/kernel": "bert/encoder/embedding_hidden_mapping_in/kernel",
    "embedding_projection/bias": "bert/encoder/embedding_hidden_mapping_in/bias",
    **{f"transformer/self_attention/{p}/{leaf}": f"{_ENCODER}attention_1/self/{p}/{leaf}"
       for p in ("query", "key", "value") for leaf in ("kernel", "bias")},
    "transformer/self_attention/attention_output/kernel": f"{_ENCODER}attention_1/output/dense/kernel",
    "transformer/self_attention/attention_output/bias": f"{_ENCODER}attention_1/output/dense/bias",
    "transformer/self_attention_layer_norm/gamma": f"{_ENCODER}LayerNorm/gamma",
    "transformer/self_attention_layer_norm/beta": f"{_ENCODER}LayerNorm/beta",
    "transformer/intermediate/kernel": f"{_ENCODER}ffn_1/intermediate/dense/kernel",
    "transformer/intermediate/bias": f"{_ENCODER}ffn_1/intermediate/dense/bias",
    "transformer/output/kernel": f"{_ENCODER}ffn_1/intermediate/output/dense/kernel",
    "transformer/output/bias": f"{_ENCODER}ffn_1/intermediate/output/dense/bias",
    "transformer/output_layer_norm/gamma": f"{_ENCODER}LayerNorm_1/gamma",
    "transformer/output_layer_norm/beta": f"{_ENCODER}LayerNorm_1/beta",
    "pooler_transform/kernel": "bert/pooler/dense/kernel",
    "pooler_transform/bias": "bert/pooler/dense/bias",
    "cls/predictions/transform/dense/kernel": "cls/predictions/transform/dense/kernel",
    "cls/predictions/transform/dense/bias": "cls/predictions/transform/dense/bias",
    "cls/predictions/transform/LayerNorm/gamma": "cls/predictions/transform/LayerNorm/gamma",
    "cls/predictions/transform/LayerNorm/beta": "cls/predictions/transform/LayerNorm/beta",
    "cls/predictions/output_bias/bias": "cls/predictions/output_bias",
}
# The attention's EinsumDense tensors keep the heads apart; the original's are flat:
# Q/K/V kernel [H, N, d] -> [H, N*d], their bias [N, d] -> [N*d], output kernel [N, d, H] -> [N*d, H].
_MERGE_HEADS = {
    **{f"transformer/self_attention/{p}/kernel": lambda s: (s[0], int(np.prod(s[1:])))
       for p in ("query", "key", "value")},
    **{f"transformer/self_attention/{p}/bias": lambda s: (int(np.prod(s)),)
       for p in ("query", "key", "value")},
    "transformer/self_attention/attention_output/kernel": lambda s: (int(np.prod(s[:-1])), s[-1]),
}
_KEY = re.compile("(?:^|/)(" + "|".join(re.escape(k) for k in sorted(_TF_MODELS, key=len,
                                                                     reverse=True)) + r")$")
# Keras' serialized activations -> AlbertConfig.hidden_act.
_ACTIVATIONS = {"Text>gelu": "gelu", "gelu": "gelu_exact", "relu": "relu", "tanh": "tanh",
                "swish": "silu", "silu": "silu", "linear": "linear"}

_cache: Dict[str, object] = {}   # the last module loaded, by path: read_directory, then load


def _named_variables(loaded) -> Dict[str, tf.Variable]:
  """The module's variables (and its `.mlm`'s) by Keras name, without ':0'."""
  out = {}
  for v in list(loaded.variables) + list(getattr(getattr(loaded, "mlm", None), "variables", [])):
    out.setdefault(v.name.split(":")[0], v)
  return out


def _tf_models_tensors(loaded) -> Tuple[Dict[str, tf.Variable], list]:
  """({tf-models table key: variable}, names of the module that are not in the table)."""
  found, other = {}, []
  for name, variable in _named_variables(loaded).items():
    match = _KEY.search(name)
    if match:
      found[match.group(1)] = variable
    else:
      other.append(name)
  return found, other


def _keras_metadata(path: str) -> Dict[str, dict]:
  """{layer class name: config} from keras_metadata.pb, where the module keeps it."""
  file = os.path.join(path, "keras_metadata.pb")
  if not os.path.exists(file):
    return {}
  try:
    from tf_keras.protobuf import saved_metadata_pb2  # pylint: disable=g-import-not-at-top
    metadata = saved_metadata_pb2.SavedMetadata()
    with open(file, "rb") as f:
      metadata.ParseFromString(f.read())
    out = {}
    for node in metadata.nodes:
      data = json.loads(node.metadata)
      if isinstance(data.get("config"), dict):
        out.setdefault(str(data.get("class_name")), data["config"])
    return out
  except Exception:  # pylint: disable=broad-except  (metadata only refines the defaults)
    return {}


def _activation(value) -> Optional[str]:
  if isinstance(value, dict):
    value = value.get("config")
  return _ACTIVATIONS.get(str(value)) if value is not None else None


def _tf_models_config(loaded, path: str) -> AlbertConfig:
  """The AlbertConfig of a tf-models module, from its variables' shapes and traced outputs."""
  found, other = _tf_models_tensors(loaded)
  needed = ("word_embeddings/embeddings", "transformer/self_attention/query/kernel",
            "transformer/intermediate/kernel", "position_embedding/embeddings",
            "type_embeddings/embeddings")
  if any(k not in found for k in needed):
    sample = ", ".join(sorted(other)[:4])
    raise ValueError(
        f"{path} is not an ALBERT encoder module: it has no albert_config_file asset (an "
        "albert_tf export) and not the shared block of tf-models' AlbertEncoder "
        f"(transformer/self_attention/query/kernel); its variables are {sample}, ... "
        "(a BERT encoder has one block per layer, transformer/layer_0/...)")
  shape = lambda key: [int(d) for d in found[key].shape]
  vocab_size, embedding_size = shape("word_embeddings/embeddings")
  hidden_size, heads, _ = shape("transformer/self_attention/query/kernel")
  layers = None
  for function in getattr(getattr(loaded, "__call__", None), "concrete_functions", []):
    outputs = function.structured_outputs
    if isinstance(outputs, dict) and "encoder_outputs" in outputs:
      layers = len(outputs["encoder_outputs"])
      break
  if not layers:
    raise ValueError(f"{path}: its call returns no encoder_outputs, so its layer count is "
                     "unknown (not a TF-Hub text encoder)")
  meta = _keras_metadata(path)
  block = meta.get("Text>TransformerEncoderBlock", {})
  encoder = meta.get("Text>AlbertEncoder", {})
  act = _activation(block.get("inner_activation")) or _activation(encoder.get("activation"))
  return AlbertConfig(
      vocab_size=vocab_size, embedding_size=embedding_size, hidden_size=hidden_size,
      num_hidden_layers=layers, num_hidden_groups=1, inner_group_num=1,
      num_attention_heads=heads, intermediate_size=shape("transformer/intermediate/kernel")[1],
      hidden_act=act or "gelu",
      hidden_dropout_prob=float(encoder.get("dropout_rate", 0.0)),
      attention_probs_dropout_prob=float(encoder.get("attention_dropout_rate", 0.0)),
      max_position_embeddings=shape("position_embedding/embeddings")[0],
      type_vocab_size=shape("type_embeddings/embeddings")[0],
      layer_norm_eps=float(block.get("norm_epsilon", 1e-12)))


# ----------------------------------------------------------------------------- the interface


def recognize(path) -> bool:
  """A TF2 SavedModel directory (TF1 hub modules, with tfhub_module.pb, are `tf1`'s)."""
  return (isinstance(path, (str, os.PathLike)) and os.path.isdir(path)
          and os.path.exists(os.path.join(path, "saved_model.pb"))
          and not os.path.exists(os.path.join(path, "tfhub_module.pb")))


def load_saved_model(handle):
  """`tf.saved_model.load(handle)` with a clear error; a loaded object is passed through.
  The last module loaded is kept, so reading its config and then its weights loads it once."""
  if not isinstance(handle, (str, os.PathLike)):
    return handle
  handle = str(handle)
  if not tf.io.gfile.exists(os.path.join(handle, "saved_model.pb")):
    raise FileNotFoundError(f"{handle} is not a SavedModel directory (no saved_model.pb)")
  key = os.path.realpath(handle)
  if key not in _cache:
    _cache.clear()
    _cache[key] = tf.saved_model.load(handle)
  return _cache[key]


def is_albert_tf_export(loaded) -> bool:
  return hasattr(loaded, "albert_config_file")


def config_from_hub(handle, path: Optional[str] = None) -> AlbertConfig:
  """The AlbertConfig of an encoder SavedModel (path or loaded object): albert_tf's
  `albert_config_file` asset, or derived from a tf-models module's variables."""
  loaded = load_saved_model(handle)
  where = path or (handle if isinstance(handle, (str, os.PathLike)) else "the SavedModel")
  if is_albert_tf_export(loaded):
    return AlbertConfig.from_json_file(loaded.albert_config_file.asset_path.numpy().decode())
  return _tf_models_config(loaded, str(where))


def vocabulary_from_hub(handle, path: Optional[str] = None
                        ) -> Tuple[Optional[str], Optional[str], bool]:
  """(SentencePiece model, WordPiece vocabulary, do_lower_case) stored in an encoder
  SavedModel (a path, or the object `load_saved_model` returned; `path` names it in
  errors): one of the two files is None, the `sp_model_file` or `vocab_file` asset.
  tf-models' modules store no do_lower_case; their preprocessors lower-case (True).

  This is what `--spm_model_file=from_tf_hub` (or `--vocab_file=from_tf_hub`) resolves to.
  """
  loaded = load_saved_model(handle)
  if not (hasattr(loaded, "sp_model_file") or hasattr(loaded, "vocab_file")):
    where = path or (handle if isinstance(handle, str) else "the encoder SavedModel")
    raise ValueError(f"{where} holds no vocabulary (it was exported without "
                     "--spm_model_file or --vocab_file); pass --spm_model_file=PATH or "
                     "--vocab_file=PATH instead of from_tf_hub")
  do_lower_case = bool(loaded.do_lower_case.numpy()) if hasattr(loaded, "do_lower_case") else True
  files = [getattr(loaded, name).asset_path.numpy().decode() if hasattr(loaded, name) else None
           for name in ("sp_model_file", "vocab_file")]
  return files[0], files[1], do_lower_case


def spm_model_from_hub(handle, path: Optional[str] = None) -> Tuple[str, bool]:
  """(SentencePiece model, do_lower_case) of an export; refused for a WordPiece one."""
  spm_model_file, vocab_file, do_lower_case = vocabulary_from_hub(handle, path)
  if not spm_model_file:
    raise ValueError(f"{path or 'the SavedModel'} holds a WordPiece vocabulary ({vocab_file}), "
                     "not a SentencePiece model: use --vocab_file=from_tf_hub")
  return spm_model_file, do_lower_case


def read_directory(path: str, flag: str = "--albert_hub_module_handle") -> ModelDirectory:
  """An encoder SavedModel: its config, vocabulary and heads (`mlm`, and `sop` in albert_tf's)."""
  loaded = load_saved_model(path)
  config = config_from_hub(loaded, path)
  heads = [h for h in ("mlm", "sop") if hasattr(loaded, h)]
  try:
    spm_model_file, vocab_file, do_lower_case = vocabulary_from_hub(loaded, f"{flag}={path}")
  except ValueError as e:
    return ModelDirectory(path, NAME, config, path, None, None, None,
                          vocabulary_error=str(e), heads=heads)
  return ModelDirectory(path, NAME, config, path, spm_model_file, vocab_file, do_lower_case,
                        heads=heads)


def original_tensors(path: str) -> Dict[str, np.ndarray]:
  """{original name: float32 array} of every weight the module holds."""
  loaded = load_saved_model(path)
  if is_albert_tf_export(loaded):
    pretrainer = AlbertPretrainer(config_from_hub(loaded, path))
    load_encoder_export(pretrainer, path)
    names = variable_map(pretrainer)
    if not hasattr(loaded, "mlm"):
      names = {n: v for n, v in names.items() if n.startswith("bert/")}
    return {n: v.numpy() for n, v in names.items()}
  found, _ = _tf_models_tensors(loaded)
  out = {}
  for key, variable in found.items():
    value = variable.numpy().astype(np.float32)
    if key in _MERGE_HEADS:
      value = value.reshape(_MERGE_HEADS[key](value.shape))
    out[_TF_MODELS[key]] = value
  return out


def load(model, path: str) -> LoadReport:
  """Loads an encoder SavedModel's weights (and its masked-LM head, where it has `.mlm`)
  into any albert_tf model of its config; every tensor's shape is checked."""
  tensors = original_tensors(path)
  return assign_by_original_name(
      model, {n: (v.shape, lambda v=v: v) for n, v in tensors.items()}, path,
      noun="TF-Hub module")
