"""TF-Hub SavedModels of ALBERT: the encoder (with `.mlm`, `.sop`) and the preprocessor.

`export_encoder` writes the encoder SavedModel, `export_preprocessor` the
text-preprocessing SavedModel (`albert_tf.commands.export_tf_hub` is hub_export/export.py's
command); `atomic_export` is how every SavedModel export appears whole or not at all.

The encoder SavedModel follows the TF-Hub BERT/ALBERT encoder convention: the
root takes a dict of int32 [batch, seq] `input_word_ids`, `input_mask`,
`input_type_ids` (int64 ids are cast) and returns `pooled_output`, `sequence_output`,
`encoder_outputs` and `default` (= pooled_output); it loads with
`hub.KerasLayer(path, trainable=True)`. `obj.mlm` additionally takes
`masked_lm_positions` and adds `mlm_logits`; `obj.sop` adds `sop_logits`.
It carries `albert_config_file` and its vocabulary, `sp_model_file` (a
SentencePiece model) or `vocab_file` (a WordPiece vocabulary), as assets, and
`do_lower_case` (a variable).

The preprocessor SavedModel follows the TF-Hub text-preprocessing convention:
the root maps a batch of strings [B] to the three int32 inputs at
`default_seq_length`; `obj.tokenize(strings)` returns ids [B, (T)];
`obj.tokenize.get_special_tokens_dict()` returns `vocab_size`,
`start_of_sequence_id` ([CLS]), `end_of_segment_id` ([SEP]), `padding_id`
(<pad>, or [PAD] = 0 for WordPiece) and `mask_id` ([MASK]); `obj.bert_pack_inputs([a] or [a, b],
seq_length=N)` packs one or two tokenized segments.
"""

import contextlib
import os
import shutil
import tempfile
from typing import Dict, Iterator, Optional, Tuple

from absl import logging
import tensorflow as tf
from tensorflow.python.saved_model import save_context  # pylint: disable=g-direct-tensorflow-import
import tf_keras as keras

from albert_tf.files import process_alive, writing
from albert_tf.formats.tf_hub import exported_variables, functional_models
from albert_tf.modeling.encoder import INPUT_KEYS, AlbertEncoder
from albert_tf.modeling.layers.dropout import random_generators
from albert_tf.modeling.models import AlbertPretrainer
from albert_tf.modeling.tracing import inference_only
from albert_tf.text.preprocessing import AlbertTokenizer, pack_segments

# ----------------------------------------------------------------------------- encoder

def build_hub_model(pretrainer: AlbertPretrainer,
                    options: Optional[tf.saved_model.SaveOptions] = None):
  """The root object saved as the encoder SavedModel (a reusable SavedModel), its
  functions traced for `tf.saved_model.save(..., options=options)`.

  The root's `__call__` (the encoder), `mlm` and `sop` are tf.functions over
  functional Keras models of the pretrainer, each traced for `training=True`,
  `False` and `None` (leaving `training` out, or None, means False); `__call__` also takes int64 ids
  (cast to int32). `variables` / `trainable_variables` (what
  `hub.KerasLayer(..., trainable=True)` trains) are exactly the encoder's; the
  heads' variables are tracked as `head_variables`. No Keras object is saved
  itself: that would trace every layer's call again for Keras metadata no TF-Hub
  caller reads, most of an export's time.
  """
  core, mlm, sop = functional_models(pretrainer)
  # Traced in the context the save runs in (its options are part of a trace's key), the
  # save reuses these traces; traced outside, it would trace every function again.
  with save_context.save_context(options or tf.saved_model.SaveOptions()):
    return _traced_root(pretrainer, core, mlm, sop)


def _traced_root(pretrainer, core, mlm, sop):
  """`build_hub_model`'s root, traced in the current context."""

  def traced(model, keys, dtypes=(tf.int32,)):
    """`model` as a tf.function traced for each id dtype, training and not; float
    outputs are float32 whatever the compute dtype."""
    def call(inputs, training=False):
      outputs = model(inputs, training=training)
      return tf.nest.map_structure(
          lambda t: tf.cast(t, tf.float32) if t.dtype.is_floating else t, outputs)
    graph = tf.function(call, autograph=False)

    # `training=None` (what wrappers pass on when a caller leaves it out) means False, and
    # int64 ids are cast: traces of their own that call the int32 training / inference
    # graph, not more copies of the model.
    def call_with_default(inputs, training=None):
      return graph({k: tf.cast(v, tf.int32) for k, v in inputs.items()},
                   training=bool(training))
    function = tf.function(call_with_default, autograph=False)
    specs = {k: tf.TensorSpec([None, None], tf.int32, name=k) for k in keys}
    # The inference traces without custom gradients (fine-tuning calls the training ones).
    for training in (True, False):
      with contextlib.nullcontext() if training else inference_only():
        graph.get_concrete_function(specs, training=training)
    for dtype in dtypes:
      specs = {k: tf.TensorSpec([None, None], dtype, name=k) for k in keys}
      for training in (None, True, False):
        with contextlib.nullcontext() if training else inference_only():
          function.get_concrete_function(specs, training=training)
    return function

  root = tf.__internal__.tracking.AutoTrackable()
  root.__call__ = traced(core, INPUT_KEYS, (tf.int32, tf.int64))
  root.mlm = traced(mlm, INPUT_KEYS + ("masked_lm_positions",))
  root.sop = traced(sop, INPUT_KEYS)
  root.variables, root.head_variables = exported_variables(core, mlm, sop)
  root.trainable_variables = list(core.trainable_variables)
  root.random_generators = random_generators(pretrainer)  # the dropout masks' state
  root.regularization_losses = []
  return root


def _serving_signature(encoder: AlbertEncoder, num_layers: int):
  """`serving_default` for TF Serving: flat named outputs (float32), encoder_outputs_{i}
  per layer. It returns the sequence output, so the pooler takes the last layer's first
  row (`uses_sequence_output`) instead of a first-token path of its own."""
  specs = [tf.TensorSpec([None, None], tf.int32, name=k) for k in INPUT_KEYS]

  @tf.function(input_signature=specs, autograph=False)
  def serve(input_word_ids, input_mask, input_type_ids):
    outputs = encoder(dict(input_word_ids=input_word_ids, input_mask=input_mask,
                           input_type_ids=input_type_ids), training=False,
                      uses_sequence_output=True)
    outputs = tf.nest.map_structure(lambda t: tf.cast(t, tf.float32), outputs)
    result = {k: outputs[k] for k in ("pooled_output", "sequence_output")}
    result["default"] = outputs["pooled_output"]
    assert len(outputs["encoder_outputs"]) == num_layers
    for i, layer_output in enumerate(outputs["encoder_outputs"]):
      result[f"encoder_outputs_{i}"] = layer_output
    return result

  return serve


# ----------------------------------------------------------------------------- preprocessor

class _Tokenize(tf.Module):
  """`preprocessor.tokenize`: strings [B] -> int32 ids [B, (T)]."""

  def __init__(self, tokenizer: AlbertTokenizer):
    super().__init__(name="tokenize")
    self._tokenizer = tokenizer
    self._special = dict(vocab_size=tokenizer.vocab_size, start_of_sequence_id=tokenizer.cls_id,
                         end_of_segment_id=tokenizer.sep_id, padding_id=tokenizer.pad_id,
                         mask_id=tokenizer.mask_id)
    self.get_special_tokens_dict = tf.function(
        lambda: {k: tf.constant(v, tf.int32) for k, v in self._special.items()},
        input_signature=[], autograph=False)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
  def __call__(self, strings):
    return self._tokenizer(strings)


class _PackInputs(tf.Module):
  """`preprocessor.bert_pack_inputs(segments, seq_length=N)` for one or two segments."""

  def __init__(self, special: Dict[str, int], default_seq_length: int):
    super().__init__(name="bert_pack_inputs")
    self._special = special
    self._default_seq_length = default_seq_length

  @tf.function(autograph=False)
  def __call__(self, inputs, seq_length=None):
    if seq_length is None:
      seq_length = self._default_seq_length
    return pack_segments(inputs, seq_length, self._special["start_of_sequence_id"],
                         self._special["end_of_segment_id"], self._special["padding_id"])

  def trace(self) -> None:
    """Traces the one- and two-segment cases, with and without `seq_length`."""
    segment = tf.RaggedTensorSpec([None, None], tf.int32, ragged_rank=1)
    for n in (1, 2):
      self.__call__.get_concrete_function([segment] * n)
      self.__call__.get_concrete_function([segment] * n, tf.TensorSpec([], tf.int32))


class _Preprocessor(tf.Module):
  """The preprocessor SavedModel's root: strings [B] -> the encoder's three inputs."""

  def __init__(self, spm_model_file: Optional[str], do_lower_case: bool,
               default_seq_length: int, vocab_file: Optional[str] = None):
    super().__init__(name="albert_preprocessor")
    self.tokenize = _Tokenize(AlbertTokenizer(spm_model_file, do_lower_case, vocab_file))
    self.bert_pack_inputs = _PackInputs(self.tokenize._special, default_seq_length)
    self.bert_pack_inputs.trace()
    self.do_lower_case = tf.Variable(do_lower_case, trainable=False, name="do_lower_case")

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
  def __call__(self, strings):
    return self.bert_pack_inputs([self.tokenize(strings)])


# ----------------------------------------------------------------------------- writing

def check_export_target(path: str, overwrite: bool, what: str = "export path") -> None:
  """Refuses a target that exists and is not empty, unless `overwrite` and it holds an
  earlier export (a SavedModel: saved_model.pb); anything else is never replaced."""
  path = os.path.abspath(path)
  if not os.path.exists(path):
    return
  if not os.path.isdir(path):
    raise FileExistsError(f"{what} {path} exists and is not a directory")
  if not os.listdir(path):
    return
  if not overwrite:
    raise FileExistsError(f"{what} {path} exists and is not empty; pass --overwrite to replace "
                          "it (an earlier export only)")
  if not os.path.exists(os.path.join(path, "saved_model.pb")):
    raise FileExistsError(f"{what} {path} holds files that are not a SavedModel export (no "
                          "saved_model.pb); --overwrite only replaces an earlier export, so "
                          "nothing was changed")


def _remove_stale_temporaries(parent: str) -> None:
  """Removes the `.export_<pid>_*` directories of exports whose process is gone (killed)."""
  for name in os.listdir(parent):
    if not name.startswith(".export_"):
      continue
    pid = name[len(".export_"):].split("_")[0]
    if pid.isdigit() and process_alive(int(pid)):
      continue  # an export still running
    shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
    logging.warning("Removed %s, left by an export that did not finish", name)


@contextlib.contextmanager
def atomic_export(export_path: str, overwrite: bool) -> Iterator[Tuple[str, str]]:
  """Yields (saved_model_dir, assets_staging_dir) in a temporary directory beside
  `export_path`; on success moves the SavedModel into place, so an export
  that fails halfway never replaces (or removes) what was there.
  """
  export_path = os.path.abspath(export_path)
  check_export_target(export_path, overwrite)
  parent = os.path.dirname(export_path)
  with writing(export_path):
    os.makedirs(parent, exist_ok=True)
    _remove_stale_temporaries(parent)
    tmp = tempfile.mkdtemp(prefix=f".export_{os.getpid()}_", dir=parent)
  try:
    with writing(export_path):
      saved, staging = os.path.join(tmp, "saved_model"), os.path.join(tmp, "staging")
      os.makedirs(staging)
      yield saved, staging
      if os.path.exists(export_path):
        os.replace(export_path, os.path.join(tmp, "previous"))
      os.replace(saved, export_path)
  finally:
    shutil.rmtree(tmp, ignore_errors=True)


def _asset(path: str, staging: str) -> tf.saved_model.Asset:
  local = os.path.join(staging, os.path.basename(path))
  shutil.copyfile(path, local)
  return tf.saved_model.Asset(local)


def attach_vocabulary(root, staging: str, spm_model_file: Optional[str],
                       vocab_file: Optional[str]) -> None:
  """The vocabulary as an asset: `sp_model_file` (SentencePiece) or `vocab_file` (WordPiece)."""
  if spm_model_file:
    root.sp_model_file = _asset(spm_model_file, staging)
  elif vocab_file:
    root.vocab_file = _asset(vocab_file, staging)


def export_encoder(pretrainer: AlbertPretrainer, export_path: str,
                   spm_model_file: Optional[str] = None, do_lower_case: bool = True,
                   overwrite: bool = False, vocab_file: Optional[str] = None) -> str:
  """Writes the TF-Hub encoder SavedModel of `pretrainer` to `export_path`.

  Args:
    pretrainer: the model whose encoder and MLM/SOP heads are exported.
    export_path: target directory; refused if it exists and is not empty,
      unless `overwrite`.
    spm_model_file: the SentencePiece model, saved as the `sp_model_file` asset; or
    vocab_file: the WordPiece vocabulary, saved as the `vocab_file` asset.
    do_lower_case: saved as the `do_lower_case` variable.
    overwrite: replace an existing export (only once the new one is complete).

  Returns:
    The absolute export path.
  """
  export_path = os.path.abspath(export_path)
  options = tf.saved_model.SaveOptions()
  with atomic_export(export_path, overwrite) as (saved, staging):
    model = build_hub_model(pretrainer, options)
    config_file = os.path.join(staging, "albert_config.json")
    pretrainer.config.to_json_file(config_file)
    model.albert_config_file = tf.saved_model.Asset(config_file)
    attach_vocabulary(model, staging, spm_model_file, vocab_file)
    model.do_lower_case = tf.Variable(do_lower_case, trainable=False, name="do_lower_case")
    c = pretrainer.config
    serve = _serving_signature(pretrainer.encoder, c.num_hidden_layers * c.inner_group_num)
    with save_context.save_context(options), inference_only():
      serve.get_concrete_function()
    tf.saved_model.save(model, saved, signatures={"serving_default": serve}, options=options)
  logging.info("Exported the ALBERT encoder SavedModel to %s", export_path)
  return export_path


def export_preprocessor(spm_model_file: Optional[str], export_path: str,
                        do_lower_case: bool = True, default_seq_length: int = 128,
                        overwrite: bool = False, vocab_file: Optional[str] = None) -> str:
  """Writes the TF-Hub text-preprocessing SavedModel of a vocabulary to `export_path`.

  Ids are those of `tokenization.FullTokenizer(vocab_file, do_lower_case,
  spm_model_file)` (SentencePiece if `spm_model_file`, else WordPiece); packing
  is `packing.pack_inputs`.

  Returns:
    The absolute export path.
  """
  if default_seq_length < 3:
    raise ValueError(f"--default_seq_length must be at least 3, got {default_seq_length}")
  export_path = os.path.abspath(export_path)
  with atomic_export(export_path, overwrite) as (saved, staging):
    options = tf.saved_model.SaveOptions()
    with save_context.save_context(options):   # traced once, as build_hub_model's functions
      root = _Preprocessor(spm_model_file, do_lower_case, default_seq_length, vocab_file)
      root.__call__.get_concrete_function()
    attach_vocabulary(root, staging, spm_model_file, vocab_file)
    tf.saved_model.save(root, saved, signatures={"serving_default": root.__call__},
                        options=options)
  logging.info("Exported the ALBERT preprocessor SavedModel to %s", export_path)
  return export_path


@contextlib.contextmanager
def compute_dtype(dtype: str) -> Iterator[None]:
  """Models built inside compute in `dtype` ("float32" or "bfloat16", Keras'
  mixed_bfloat16: float32 variables); the global Keras policy is restored after."""
  policies = {"float32": "float32", "bfloat16": "mixed_bfloat16"}
  if dtype not in policies:
    raise ValueError(f"--dtype must be float32 or bfloat16, got {dtype!r}")
  before = keras.mixed_precision.global_policy()
  keras.mixed_precision.set_global_policy(policies[dtype])
  try:
    yield
  finally:
    keras.mixed_precision.set_global_policy(before)
