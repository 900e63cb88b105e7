"""The original TF1 layout: released directories and checkpoints in the original names.

A released directory (google-research/albert's downloads, and what `convert_checkpoint.py
--output_format=tf1` writes) holds `albert_config.json`, `30k-clean.model` (or the Chinese
releases' `vocab_chinese.txt`) and `model.ckpt-best`. Checkpoints of the original
`run_pretraining.py` / `run_classifier.py` and the `variables/` of the original TF1 hub
modules (names under `module/`) read the same way. The names are the model's own
(`modeling.checkpoints.variable_map`), so nothing is renamed or transposed.
"""

import os
import re
from typing import Optional, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from albert_tf.files import atomic_checkpoint, reading_checkpoint
from albert_tf.formats.base import ModelDirectory
from albert_tf.modeling.checkpoints import LoadReport, assign_by_original_name, variable_map
from albert_tf.modeling.config import AlbertConfig

NAME = "tf1"
RELEASED_CONFIG = "albert_config.json"
RELEASED_CHECKPOINT = "model.ckpt-best"
# Checkpoint entries that are not model weights: optimizer slots and counters.
_IGNORED = re.compile(r"(^|/)(adam_[mv]|Adam(_\d+)?|lamb_[mv]|Momentum|global_step|"
                      r"good_steps|loss_scale|_CHECKPOINTABLE_OBJECT_GRAPH)$")
# Prefix of the variables inside the original TF1 hub modules.
_HUB_PREFIX = "module/"


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




def _names(path: str):
  """{original name: (stored name, shape)} of a checkpoint prefix, optimizer state left out."""
  try:
    reader = tf.train.load_checkpoint(path)
  except tf.errors.OpError as e:   # a damaged or truncated index: one line, naming it
    raise ValueError(f"cannot read checkpoint {path}: {e.message}") from None
  stored = {}
  for raw_name, shape in reader.get_variable_to_shape_map().items():
    name = raw_name[len(_HUB_PREFIX):] if raw_name.startswith(_HUB_PREFIX) else raw_name
    if not _IGNORED.search(name):
      stored[name] = (raw_name, tuple(shape))
  return reader, stored


def is_original_checkpoint(checkpoint_path: str) -> bool:
  """True for checkpoints in the original TF1 names (`bert/...`, possibly under `module/`)."""
  names = tf.train.load_checkpoint(resolve_checkpoint_path(checkpoint_path)
                                   ).get_variable_to_shape_map()
  return any(n.startswith("bert/") or n.startswith(_HUB_PREFIX + "bert/") for n in names)



def recognize(path: str) -> bool:
  """A checkpoint in the original names: a prefix, a released directory's, a TF1 hub
  module's (a run_pretraining.py output directory has an albert_config.json too, but
  albert_tf's own checkpoints: `native`'s)."""
  try:
    return is_original_checkpoint(path)
  except (FileNotFoundError, ValueError, tf.errors.OpError):
    return False


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
  reader, names = _names(path)
  with reading_checkpoint(path):
    return assign_by_original_name(
        model, {name: (shape, lambda raw=raw: reader.get_tensor(raw))
                for name, (raw, shape) in names.items()}, path, init_from_group0)


def load(model, path: str, init_from_group0: bool = False) -> LoadReport:
  """The layout interface's reader: `load_original_checkpoint`."""
  return load_original_checkpoint(model, path, init_from_group0)


def save_original_checkpoint(model, checkpoint_prefix: str, global_step: Optional[int] = None,
                             overwrite: bool = False, skip=()) -> str:
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
    skip: original names not to write (heads the model never held).

  Returns:
    The prefix written.
  """
  targets = {n: v for n, v in variable_map(model).items() if n not in set(skip)}
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



def released_vocabulary(albert_directory: str) -> Tuple[Optional[str], Optional[str]]:
  """(spm_model_file, vocab_file) of a released model directory: `vocab_chinese.txt` where
  a Chinese release has it, else `30k-clean.model` (the English releases; a missing one is
  reported when it is read)."""
  chinese = os.path.join(albert_directory, "vocab_chinese.txt")
  english = os.path.join(albert_directory, "30k-clean.model")
  if os.path.exists(chinese) and not os.path.exists(english):
    return None, chinese
  return english, None


def read_directory(path: str, flag: str = "--albert_directory",
                   checkpoint_name: str = RELEASED_CHECKPOINT) -> ModelDirectory:
  """A released directory: its config, checkpoint prefix and vocabulary."""
  config_file = os.path.join(path, RELEASED_CONFIG)
  checkpoint = os.path.join(path, checkpoint_name)
  if not tf.io.gfile.exists(checkpoint + ".index"):
    raise FileNotFoundError(f"{flag}={path} has no checkpoint {checkpoint_name} "
                            f"({checkpoint}.index not found)")
  spm_model_file, vocab_file = released_vocabulary(path)
  _, names = _names(checkpoint)
  heads = [head for head, prefix in (("mlm", "cls/predictions/"), ("sop", "cls/seq_relationship/"),
                                     ("classifier", "output_weights"), ("squad", "cls/squad/"),
                                     ("squad_v2", "start_logits/"))
           if any(n.startswith(prefix) for n in names)]
  num_labels = int(names["output_weights"][1][0]) if "output_weights" in names else None
  return ModelDirectory(path, NAME, AlbertConfig.from_json_file(config_file), checkpoint,
                        spm_model_file, vocab_file, None, num_labels=num_labels, heads=heads)
