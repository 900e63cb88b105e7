"""Reading what hub_export wrote: a SavedModel, and the config and vocabulary inside it."""

import json
import os
from typing import Optional, Tuple

import tensorflow as tf

from albert_tf.modeling.config import AlbertConfig

FROM_TF_HUB = "from_tf_hub"   # --spm_model_file / --vocab_file value: the SavedModel's vocabulary


def load_saved_model(handle):
  """`tf.saved_model.load(handle)` with a clear error; a loaded object is passed through."""
  if not isinstance(handle, (str, os.PathLike)):
    return handle
  if not tf.io.gfile.exists(os.path.join(handle, "saved_model.pb")):
    raise FileNotFoundError(f"{handle} is not a SavedModel directory (no saved_model.pb)")
  return tf.saved_model.load(handle)


def vocabulary_from_hub(handle, path: Optional[str] = None
                        ) -> Tuple[Optional[str], Optional[str], bool]:
  """(SentencePiece model, WordPiece vocabulary, do_lower_case) stored in an exported
  SavedModel (a path, or the object `load_saved_model` returned; `path` names it in
  errors): one of the two files is None, the `sp_model_file` or `vocab_file` asset.

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


def config_from_hub(handle) -> AlbertConfig:
  """The AlbertConfig stored in an exported encoder SavedModel (path or loaded object)."""
  loaded = load_saved_model(handle)
  if not hasattr(loaded, "albert_config_file"):
    raise ValueError(f"the SavedModel {handle} has no albert_config_file asset")
  return AlbertConfig.from_json_file(loaded.albert_config_file.asset_path.numpy().decode())


EXPORT_RECORD = "albert_tf_export.json"   # beside saved_model.pb: what an export was made from


def export_record(export_path: str) -> Optional[dict]:
  """What the albert_tf classifier export in `export_path` was made from, or None."""
  try:
    with open(os.path.join(export_path, EXPORT_RECORD)) as f:
      return json.load(f)
  except (OSError, ValueError):
    return None
