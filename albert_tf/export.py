"""Writing TF-Hub SavedModels of an ALBERT encoder (with `.mlm` and `.sop` sub-objects).

The encoder SavedModel follows the TF-Hub BERT/ALBERT encoder convention: the
root takes a dict of int32 [batch, seq] `input_word_ids`, `input_mask`,
`input_type_ids` and returns `pooled_output`, `sequence_output`,
`encoder_outputs` and `default` (= pooled_output); it loads with
`hub.KerasLayer(path, trainable=True)`. `obj.mlm` additionally takes
`masked_lm_positions` and adds `mlm_logits`; `obj.sop` adds `sop_logits`.
"""

import os
import shutil
import tempfile
from typing import Optional

from absl import logging
import tensorflow as tf
import tf_keras as keras

from albert_tf.encoder import INPUT_KEYS
from albert_tf.models import AlbertPretrainer


def _inputs(with_positions: bool = False):
  keys = INPUT_KEYS + (("masked_lm_positions",) if with_positions else ())
  return {k: keras.Input(shape=(None,), dtype=tf.int32, name=k) for k in keys}


def _with_default(outputs):
  outputs = dict(outputs)
  outputs["default"] = outputs["pooled_output"]
  return outputs


def build_hub_model(pretrainer: AlbertPretrainer) -> keras.Model:
  """A functional Keras model of the encoder with `.mlm` and `.sop` Keras sub-models."""
  encoder = pretrainer.encoder
  inputs = _inputs()
  core = keras.Model(inputs, _with_default(encoder(inputs)), name="albert_encoder")
  mlm_inputs = _inputs(with_positions=True)
  mlm = keras.Model(mlm_inputs, _with_default(pretrainer(mlm_inputs)), name="albert_mlm")
  sop_inputs = _inputs()
  sop_outputs = dict(encoder(sop_inputs))
  sop_outputs["sop_logits"] = pretrainer.sentence_order(sop_outputs["pooled_output"])
  sop = keras.Model(sop_inputs, _with_default(sop_outputs), name="albert_sop")
  core.mlm, core.sop = mlm, sop
  return core


def _prepare_target(export_path: str, overwrite: bool) -> None:
  if tf.io.gfile.exists(export_path) and tf.io.gfile.listdir(export_path) and not overwrite:
    raise FileExistsError(f"export path {export_path} exists and is not empty; "
                          "pass --overwrite to replace it")


def _move_into_place(tmp_dir: str, export_path: str) -> None:
  """Replaces `export_path` by `tmp_dir`; the old export is removed only once the new one is in place."""
  backup = None
  if os.path.exists(export_path):
    backup = tempfile.mkdtemp(prefix=".old_", dir=os.path.dirname(export_path))
    os.rmdir(backup)
    os.replace(export_path, backup)
  os.replace(tmp_dir, export_path)
  if backup:
    shutil.rmtree(backup, ignore_errors=True)


def export_encoder(pretrainer: AlbertPretrainer, export_path: str,
                   spm_model_file: Optional[str] = None, do_lower_case: bool = True,
                   overwrite: bool = False) -> str:
  """Writes the TF-Hub encoder SavedModel of `pretrainer` to `export_path`.

  The SavedModel also carries `albert_config.json` and, when given, the
  SentencePiece model as assets (`sp_model_file`, `albert_config_file`) and
  `do_lower_case` as a variable. It is written next to `export_path` and
  moved into place, so a failed export never replaces a good one.
  """
  export_path = os.path.abspath(export_path)
  _prepare_target(export_path, overwrite)
  parent = os.path.dirname(export_path)
  os.makedirs(parent, exist_ok=True)
  tmp = tempfile.mkdtemp(prefix=".export_", dir=parent)
  try:
    model = build_hub_model(pretrainer)
    assets = os.path.join(tmp, "_source_assets")
    os.makedirs(assets)
    config_file = os.path.join(assets, "albert_config.json")
    pretrainer.config.to_json_file(config_file)
    model.albert_config_file = tf.saved_model.Asset(config_file)
    if spm_model_file:
      local_spm = os.path.join(assets, os.path.basename(spm_model_file))
      shutil.copyfile(spm_model_file, local_spm)
      model.sp_model_file = tf.saved_model.Asset(local_spm)
    model.do_lower_case = tf.Variable(do_lower_case, trainable=False, name="do_lower_case")
    saved = os.path.join(tmp, "saved_model")
    model.save(saved, include_optimizer=False, save_format="tf")
    shutil.rmtree(assets)
    _move_into_place(saved, export_path)
  finally:
    shutil.rmtree(tmp, ignore_errors=True)
  logging.info("Exported the ALBERT encoder SavedModel to %s", export_path)
  return export_path
