"""Original TF1 ALBERT checkpoints <-> Keras weights.

The table below names every variable of the original graph
(google-research/albert `modeling.py` and `run_pretraining.py`) and the Keras
weight it maps to. Keras weights keep the original layouts, so no tensor is
transposed; every tensor's shape is checked before anything is assigned.
"""

import dataclasses
import os
import re
from typing import Dict, List, Optional

from absl import logging
import numpy as np
import tensorflow as tf

from albert_tf.files import atomic_checkpoint, reading_checkpoint
from albert_tf.modeling.encoder import AlbertEncoder
from albert_tf.modeling.models import AlbertPretrainer

# Checkpoint entries that are not model weights: optimizer slots and counters.
_IGNORED = re.compile(r"(^|/)(adam_[mv]|Adam(_\d+)?|lamb_[mv]|Momentum|global_step|"
                      r"good_steps|loss_scale|_CHECKPOINTABLE_OBJECT_GRAPH)$")
# Prefix of the variables inside the original TF1 hub modules.
_HUB_PREFIX = "module/"


def _dense(prefix: str, layer) -> Dict[str, tf.Variable]:
  return {f"{prefix}/kernel": layer.kernel, f"{prefix}/bias": layer.bias}


def _layer_norm(prefix: str, layer) -> Dict[str, tf.Variable]:
  return {f"{prefix}/gamma": layer.gamma, f"{prefix}/beta": layer.beta}


def encoder_variable_map(encoder: AlbertEncoder) -> Dict[str, tf.Variable]:
  """Original TF1 name -> Keras variable, for every weight of the encoder."""
  emb = encoder.embeddings
  names = {
      "bert/embeddings/word_embeddings": emb.word_embeddings,
      "bert/embeddings/position_embeddings": emb.position_embeddings,
      "bert/embeddings/token_type_embeddings": emb.token_type_embeddings,
      **_layer_norm("bert/embeddings/LayerNorm", emb.layer_norm),
  }
  if encoder.embedding_projection is not None:
    names.update(_dense("bert/encoder/embedding_hidden_mapping_in", encoder.embedding_projection))
  for g, group in enumerate(encoder.groups):
    for k, block in enumerate(group):
      p = f"bert/encoder/transformer/group_{g}/inner_group_{k}"
      names.update({
          **_dense(f"{p}/attention_1/self/query", block.query),
          **_dense(f"{p}/attention_1/self/key", block.key),
          **_dense(f"{p}/attention_1/self/value", block.value),
          **_dense(f"{p}/attention_1/output/dense", block.attention_output),
          **_layer_norm(f"{p}/LayerNorm", block.attention_layer_norm),
          **_dense(f"{p}/ffn_1/intermediate/dense", block.intermediate),
          **_dense(f"{p}/ffn_1/intermediate/output/dense", block.output_dense),
          **_layer_norm(f"{p}/LayerNorm_1", block.output_layer_norm),
      })
  names.update(_dense("bert/pooler/dense", encoder.pooler))
  return names


def pretrainer_head_variable_map(model: AlbertPretrainer) -> Dict[str, tf.Variable]:
  """Original TF1 name -> Keras variable, for the masked-LM and sentence-order heads."""
  mlm, sop = model.masked_lm, model.sentence_order
  return {
      **_dense("cls/predictions/transform/dense", mlm.dense),
      **_layer_norm("cls/predictions/transform/LayerNorm", mlm.layer_norm),
      "cls/predictions/output_bias": mlm.output_bias,
      "cls/seq_relationship/output_weights": sop.output_weights,
      "cls/seq_relationship/output_bias": sop.output_bias,
  }


def variable_map(model) -> Dict[str, tf.Variable]:
  """Every original-named variable of an AlbertEncoder, AlbertPretrainer or task model
  (a task model's head too when it has `original_head_variables`)."""
  if isinstance(model, AlbertPretrainer):
    return {**encoder_variable_map(model.encoder), **pretrainer_head_variable_map(model)}
  if isinstance(model, AlbertEncoder):
    return encoder_variable_map(model)
  encoder = getattr(model, "encoder", None)
  if isinstance(encoder, AlbertEncoder):
    heads = getattr(model, "original_head_variables", None)
    return {**encoder_variable_map(encoder), **(heads() if heads else {})}
  raise TypeError(f"cannot map original checkpoint names onto {type(model).__name__}")


def resolve_checkpoint_path(path: str) -> str:
  """A checkpoint prefix from a prefix, a directory, or a TF1 hub module directory."""
  if tf.io.gfile.exists(path + ".index"):
    return path
  if tf.io.gfile.isdir(path):
    for candidate in (tf.train.latest_checkpoint(path),
                      os.path.join(path, "variables", "variables"),
                      os.path.join(path, "model.ckpt-best")):
      if candidate and tf.io.gfile.exists(candidate + ".index"):
        return candidate
    indexes = sorted(tf.io.gfile.glob(os.path.join(path, "*.index")))
    if len(indexes) == 1:
      return indexes[0][:-len(".index")]
    if indexes:
      raise ValueError(f"{path} holds several checkpoints "
                       f"({', '.join(os.path.basename(i) for i in indexes)}); name one by its prefix")
  raise FileNotFoundError(f"no checkpoint at {path} (looked for {path}.index, a 'checkpoint' "
                          "file, variables/variables and model.ckpt-best)")


@dataclasses.dataclass
class LoadReport:
  """What `load_original_checkpoint` did."""
  path: str
  loaded: List[str]                 # model variables restored, by original name
  freshly_initialized: List[str]    # head variables the checkpoint lacked (kept as initialized)
  unused: List[str]                 # checkpoint variables outside `bert/` the model has no use for

  def logged(self) -> "LoadReport":
    """Logs what was restored, left fresh and not used; returns itself."""
    logging.info("Restored %d variables from %s", len(self.loaded), self.path)
    if self.freshly_initialized:
      logging.warning("Not in %s, left freshly initialized: %s", self.path,
                      ", ".join(self.freshly_initialized))
    if self.unused:
      logging.info("Not used from %s: %s", self.path, ", ".join(self.unused))
    return self


def _is_head(name: str) -> bool:
  return not name.startswith("bert/")


def load_original_checkpoint(model, checkpoint_path: str,
                             init_from_group0: bool = False) -> LoadReport:
  """Restores an original-format ALBERT checkpoint into an AlbertEncoder or AlbertPretrainer.

  Reads the released `model.ckpt-best`, the `variables/` of original TF1 hub
  modules (names under `module/`) and checkpoints of the original
  `run_pretraining.py` (optimizer slots and `global_step` are ignored).

  Every encoder variable (`bert/...`) must be present with the right shape and
  every `bert/...` variable of the checkpoint must belong to the model;
  otherwise a ValueError lists all missing, unexpected and mis-shaped
  variables and nothing is assigned. Head variables (`cls/...`) that the
  checkpoint lacks stay freshly initialized and are reported; checkpoint
  variables outside `bert/` that the model does not use are reported as unused.

  Args:
    model: AlbertEncoder, AlbertPretrainer, or a task model with an `encoder`.
    checkpoint_path: prefix, directory, or TF1 hub module directory.
    init_from_group0: the original's `--init_from_group0`: a group the checkpoint
      lacks (`group_<g>`) starts from the checkpoint's `group_0` (a model with
      more groups than the one it continues).

  Returns:
    A LoadReport.
  """
  path = resolve_checkpoint_path(checkpoint_path)
  reader = tf.train.load_checkpoint(path)
  stored = {}
  for raw_name, shape in reader.get_variable_to_shape_map().items():
    name = raw_name[len(_HUB_PREFIX):] if raw_name.startswith(_HUB_PREFIX) else raw_name
    if not _IGNORED.search(name):
      stored[name] = (raw_name, tuple(shape))

  targets = variable_map(model)
  if init_from_group0:
    for name in targets:
      group0 = re.sub(r"/group_\d+/", "/group_0/", name)
      if name not in stored and group0 in stored:
        stored[name] = stored[group0]
  missing = sorted(n for n in targets if n not in stored)
  unexpected = sorted(n for n in stored if n not in targets and not _is_head(n))
  misshaped = sorted(
      f"{n}: checkpoint {list(stored[n][1])} vs model {targets[n].shape.as_list()}"
      for n in targets if n in stored and stored[n][1] != tuple(targets[n].shape.as_list()))
  missing_required = [n for n in missing if not _is_head(n)]
  if missing_required or unexpected or misshaped:
    lines = [f"checkpoint {path} does not match the model "
             f"({type(model).__name__}, {len(targets)} variables):"]
    for title, items in (("missing from the checkpoint", missing_required),
                         ("unexpected in the checkpoint", unexpected),
                         ("shape mismatch", misshaped)):
      if items:
        lines.append(f"  {title} ({len(items)}):")
        lines.extend(f"    {item}" for item in items)
    raise ValueError("\n".join(lines))

  with reading_checkpoint(path):  # every tensor read before any is assigned
    values = {name: reader.get_tensor(stored[name][0]) for name in targets if name in stored}
  loaded = []
  for name, value in values.items():
    targets[name].assign(value.astype(targets[name].dtype.as_numpy_dtype))
    loaded.append(name)
  return LoadReport(path=path, loaded=loaded, freshly_initialized=missing,
                    unused=sorted(n for n in stored if n not in targets)).logged()


def save_original_checkpoint(model, checkpoint_prefix: str, global_step: Optional[int] = None,
                             overwrite: bool = False) -> str:
  """Writes the model's weights under the original TF1 names.

  The result reads in the original TF1 code (`init_checkpoint`), in other tools
  that read released ALBERT checkpoints, and in `load_original_checkpoint`.
  Files are written to a temporary directory and moved into place, so an
  interrupted save never leaves a half-written checkpoint under the prefix.

  Args:
    model: AlbertEncoder, AlbertPretrainer, or a task model with an `encoder`.
    checkpoint_prefix: e.g. `out/model.ckpt-best`.
    global_step: if given, saved as the int64 `global_step` the original writes.
    overwrite: replace an existing checkpoint with that prefix.

  Returns:
    The prefix written.
  """
  targets = variable_map(model)
  existing = tf.io.gfile.glob(checkpoint_prefix + ".*")
  if existing and not overwrite:
    raise FileExistsError(f"a checkpoint already exists at {checkpoint_prefix} "
                          f"({', '.join(sorted(existing))}); pass overwrite=True to replace it")
  names = sorted(targets)
  tensors = [tf.convert_to_tensor(targets[n].numpy().astype(np.float32)) for n in names]
  if global_step is not None:
    names.append("global_step")
    tensors.append(tf.constant(global_step, tf.int64))
  with atomic_checkpoint(checkpoint_prefix) as tmp_prefix:
    tf.raw_ops.SaveV2(prefix=tmp_prefix, tensor_names=names,
                      shape_and_slices=[""] * len(names), tensors=tensors)
  logging.info("Wrote %d variables in the original TF1 names to %s", len(targets), checkpoint_prefix)
  return checkpoint_prefix


def is_original_checkpoint(checkpoint_path: str) -> bool:
  """True for checkpoints in the original TF1 names (`bert/...`, possibly under `module/`)."""
  names = tf.train.load_checkpoint(resolve_checkpoint_path(checkpoint_path)
                                   ).get_variable_to_shape_map()
  return any(n.startswith("bert/") or n.startswith(_HUB_PREFIX + "bert/") for n in names)


def load_checkpoint(model, checkpoint_path: str, init_from_group0: bool = False) -> LoadReport:
  """Restores weights from any of the layouts: a Hugging Face directory (config.json +
  model.safetensors, see `huggingface.load_hf_weights`), an original TF1 checkpoint
  (a released directory, a TF1 hub module, a prefix) or a native albert_tf one.

  Native checkpoints are `tf.train.Checkpoint(**model.checkpoint_items, ...)`
  object checkpoints (what albert_tf's training scripts write). Their
  `encoder` must be present and match; heads the checkpoint lacks stay
  freshly initialized and are reported. On a mismatch a ValueError names the
  checkpoint; the model's weights may then be partly overwritten.
  """
  from albert_tf.modeling import huggingface  # pylint: disable=g-import-not-at-top (it imports this)
  if huggingface.is_hf_directory(checkpoint_path):
    if init_from_group0:
      raise ValueError(f"--init_from_group0 reads original checkpoints (bert/... names); "
                       f"{checkpoint_path} is a Hugging Face directory")
    return huggingface.load_hf_weights(model, checkpoint_path)
  path = resolve_checkpoint_path(checkpoint_path)
  if is_original_checkpoint(path):
    return load_original_checkpoint(model, path, init_from_group0)
  if init_from_group0:
    raise ValueError(f"--init_from_group0 reads original checkpoints (bert/... names); {path} "
                     "is an albert_tf checkpoint")
  keys = tf.train.load_checkpoint(path).get_variable_to_shape_map()
  roots = {k.split("/")[0] for k in keys if k.endswith(".ATTRIBUTES/VARIABLE_VALUE")}
  items = model.checkpoint_items
  if "encoder" not in roots:
    raise ValueError(f"checkpoint {path} holds neither original ALBERT variables (bert/...) nor "
                     f"an albert_tf `encoder` (it has: {', '.join(sorted(roots)) or 'nothing'})")
  present = sorted(n for n in items if n in roots)
  with reading_checkpoint(path):
    try:
      status = tf.train.Checkpoint(**{n: items[n] for n in present}).read(path)
      status.assert_existing_objects_matched()
    except (AssertionError, ValueError, tf.errors.NotFoundError) as e:
      raise ValueError(f"checkpoint {path} does not match the model "
                       f"({type(model).__name__}): {e}") from e
  status.expect_partial()
  report = LoadReport(path=path, loaded=sorted(k for k in keys if k.split("/")[0] in present),
                      freshly_initialized=sorted(set(items) - set(present)),
                      unused=sorted(roots - set(items)))
  logging.info("Restored %s from %s", ", ".join(present), path)
  if report.freshly_initialized:
    logging.warning("Not in %s, left freshly initialized: %s", path,
                    ", ".join(report.freshly_initialized))
  return report
