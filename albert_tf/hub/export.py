"""TF-Hub SavedModels of ALBERT: the encoder (with `.mlm`, `.sop`) and the preprocessor.

`export_encoder` writes the encoder SavedModel, `export_preprocessor` the
text-preprocessing SavedModel; `hub_export/export.py` is the command line.

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
import dataclasses
import json
import os
import shutil
import tempfile
from typing import Dict, Iterator, Optional, Tuple

from absl import logging
import tensorflow as tf
from tensorflow.python.saved_model import save_context  # pylint: disable=g-direct-tensorflow-import
import tf_keras as keras

from albert_tf.cli import Checked, Original, option
from albert_tf.files import process_alive, writing
from albert_tf import formats
from albert_tf.formats.tf_hub import exported_variables, functional_models
from albert_tf.hub.loading import EXPORT_RECORD
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.encoder import INPUT_KEYS, AlbertEncoder
from albert_tf.modeling.layers.dropout import random_generators
from albert_tf.modeling.models import AlbertPretrainer
from albert_tf.modeling.tracing import inference_only
from albert_tf.text.preprocessing import AlbertTokenizer, pack_segments
from albert_tf.text.tokenization import FullTokenizer
from albert_tf.modeling import precision

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
  caller reads, most of an export's time (a tiny model: 12 s -> 7 s).
  """
  core, mlm, sop = functional_models(pretrainer)
  # Traced in the context the save runs in (its options are part of a trace's key), the
  # save reuses these traces; traced outside, it traces every function again: a 5-layer
  # grouped tiny model's export 22.7 -> 15 s, each trace made once.
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
    # graph, not more copies of the model (a tiny model's export 5.5 -> 4.4 s).
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


def _attach_vocabulary(root, staging: str, spm_model_file: Optional[str],
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
    _attach_vocabulary(model, staging, spm_model_file, vocab_file)
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
    _attach_vocabulary(root, staging, spm_model_file, vocab_file)
    tf.saved_model.save(root, saved, signatures={"serving_default": root.__call__},
                        options=options)
  logging.info("Exported the ALBERT preprocessor SavedModel to %s", export_path)
  return export_path


class _ServingClassifier(tf.Module):
  """Raw sentences -> tokenizer -> packer -> classifier -> probabilities (or scores)."""

  def __init__(self, model, tokenizer: AlbertTokenizer, seq_length: int,
               labels: Optional[Tuple[str, ...]], threshold: Optional[float] = None):
    super().__init__(name="albert_classifier")
    # Saved: what `classify` reads (the variables, the dropout generators made now, since one
    # made in the first trace traces it twice, and the tokenizer's tensorflow-text
    # tokenizers), not the Keras model and layer, whose own saving traces their calls
    # again for metadata no server reads (a tiny classifier's export 3.0 -> 1.0 s).
    self.model_variables = list(model.variables)
    self.random_generators = random_generators(model)
    self.text_tokenizers = tokenizer.text_tokenizers
    self._logits = lambda segments: model(pack_segments(
        [tokenizer(s) for s in segments], seq_length, tokenizer.cls_id, tokenizer.sep_id,
        tokenizer.pad_id), training=False)
    self._threshold, self._labels = threshold, labels

  def classify(self, segments):
    logits = self._logits(segments)                                          # [B, C]
    if self._labels is None:
      outputs = {"score": logits[:, 0]}                                      # [B]
    else:
      label_ids = tf.argmax(logits, -1, output_type=tf.int32)                # [B]
      outputs = {"probabilities": tf.nn.softmax(logits, axis=-1),            # [B, C]
                 "label_ids": label_ids,
                 "labels": tf.gather(tf.constant(self._labels), label_ids)}
    if self._threshold is not None:  # the original's --threshold_to_export, served along
      outputs["threshold"] = tf.fill(tf.shape(logits)[:1], self._threshold)  # [B]
    return outputs


def export_classifier(model, export_path: str, tokenizer: FullTokenizer, seq_length: int,
                      labels: Optional[Tuple[str, ...]], pairs: bool = True,
                      overwrite: bool = False, threshold: Optional[float] = None,
                      record: Optional[dict] = None) -> str:
  """Writes an end-to-end classifier SavedModel that takes raw text.

  `serving_default` (also the root `__call__`) takes string [B] `sentence1`
  and, for sentence-pair tasks, `sentence2`; it tokenizes in-graph (the ids
  of `tokenizer`), packs at `seq_length` and returns `probabilities` [B, C],
  `label_ids` [B] and `labels` [B] (the label strings), or `score` [B] for
  regression (`labels=None`), and `threshold` [B] when one is given. Loading
  it needs `import tensorflow_text`. `record` (what the export was made from)
  is written beside saved_model.pb as albert_tf_export.json.
  """
  export_path = os.path.abspath(export_path)
  with atomic_export(export_path, overwrite) as (saved, staging):
    root = _ServingClassifier(model, AlbertTokenizer(tokenizer.spm_model_file,
                                                     tokenizer.do_lower_case,
                                                     tokenizer.vocab_file),
                              seq_length, labels, threshold)
    spec = lambda name: tf.TensorSpec([None], tf.string, name=name)
    if pairs:
      root.__call__ = tf.function(lambda sentence1, sentence2: root.classify([sentence1, sentence2]),
                                  input_signature=[spec("sentence1"), spec("sentence2")],
                                  autograph=False)
    else:
      root.__call__ = tf.function(lambda sentence1: root.classify([sentence1]),
                                  input_signature=[spec("sentence1")], autograph=False)
    save_serving(root, saved, staging, tokenizer, dict(kind="classifier", **(record or {})))
  logging.info("Exported the classifier SavedModel to %s", export_path)
  return export_path


def save_serving(root: tf.Module, saved: str, staging: str, tokenizer: FullTokenizer,
                 record: dict) -> None:
  """Saves an end-to-end `root` (its `__call__` a tf.function of strings, traced here once,
  for inference) with the vocabulary as an asset, and `record` beside saved_model.pb."""
  _attach_vocabulary(root, staging, tokenizer.spm_model_file, tokenizer.vocab_file)
  options = tf.saved_model.SaveOptions()
  with save_context.save_context(options), inference_only():   # traced once, for serving
    root.__call__.get_concrete_function()
  tf.saved_model.save(root, saved, signatures={"serving_default": root.__call__},
                      options=options)
  with open(os.path.join(saved, EXPORT_RECORD), "w") as f:
    json.dump(record, f, indent=2, sort_keys=True)


# ----------------------------------------------------------------------------- the command

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


def export_from_sources(export_path: Optional[str] = None,
                        export_preprocessing_path: Optional[str] = None, *,
                        albert_directory: Optional[str] = None,
                        albert_config_file: Optional[str] = None,
                        init_checkpoint: Optional[str] = None,
                        spm_model_file: Optional[str] = None,
                        vocab_file: Optional[str] = None,
                        checkpoint_name: str = "model.ckpt-best", do_lower_case: bool = True,
                        default_seq_length: Optional[int] = None,
                        overwrite: bool = False, dtype: str = "float32") -> Dict[str, str]:
  """What `hub_export/export.py` does; arguments are its flags.

  Files default to those of `albert_directory`: a released one
  (`albert_config.json`, `30k-clean.model` or, in the Chinese releases,
  `vocab_chinese.txt`, and `checkpoint_name`) or a Hugging Face one
  (`config.json`, `model.safetensors`, `spiece.model` or `vocab.txt`, and
  `do_lower_case` from its tokenizer_config.json); explicit ones take precedence.
  At most one of `spm_model_file` and `vocab_file`. `init_checkpoint="none"` exports fresh weights.
  Every input is checked, and both targets, before anything is written.
  `dtype="bfloat16"` writes an encoder that computes in bfloat16 (float32
  variables, float32 outputs): where the CPU has fast bfloat16 matmuls (amx_bf16, and
  avx512_bf16 on AMD EPYC) several times faster, within bfloat16 precision of the float32
  export (docs/tf_hub.md gives the measured speed and difference); `dtype="auto"` measures
  which of the two is faster here (`training.precision`).
  `default_seq_length` (the preprocessor's packing length) defaults to 128, or
  the model's max_position_embeddings when that is smaller; a larger value is
  refused. An encoder exported without a vocabulary is written with a warning.

  Returns:
    {"encoder": path, "preprocessor": path} for what was written.
  """
  if not (export_path or export_preprocessing_path):
    raise ValueError("nothing to do: pass --export_path and/or --export_preprocessing_path")
  config = None
  albert_directory = formats.resolve(albert_directory, "--albert_directory")
  init_checkpoint = formats.resolve(init_checkpoint, "--init_checkpoint")
  if albert_directory:
    if not os.path.isdir(albert_directory):
      raise FileNotFoundError(f"--albert_directory={albert_directory} is not a directory")
    found = formats.read_model_directory(albert_directory, checkpoint_name=checkpoint_name)
    if found.layout == formats.tf1.NAME:
      albert_config_file = albert_config_file or os.path.join(albert_directory,
                                                              formats.RELEASED_CONFIG)
      if not (spm_model_file or vocab_file):
        spm_model_file, vocab_file = found.spm_model_file, found.vocab_file
    else:
      config = None if albert_config_file else found.config
      if not (spm_model_file or vocab_file) and not found.vocabulary_error:
        spm_model_file, vocab_file = found.spm_model_file, found.vocab_file
        do_lower_case = found.do_lower_case
    init_checkpoint = init_checkpoint or found.checkpoint
  for flag, path in (("export_path", export_path),
                     ("export_preprocessing_path", export_preprocessing_path)):
    if path:
      check_export_target(path, overwrite, f"--{flag}")
  if spm_model_file and vocab_file:
    raise ValueError("pass one of --spm_model_file (SentencePiece) and --vocab_file "
                     "(WordPiece), not both")
  if export_preprocessing_path and not (spm_model_file or vocab_file):
    raise ValueError("--export_preprocessing_path needs --spm_model_file or --vocab_file (or "
                     "--albert_directory)")
  if export_path and not ((albert_config_file or config) and init_checkpoint):
    raise ValueError("--export_path needs --albert_config_file and --init_checkpoint (or "
                     "--albert_directory); --init_checkpoint=none exports random weights")

  if albert_config_file:
    config = AlbertConfig.from_json_file(albert_config_file)
  config_source = albert_config_file or os.path.join(str(albert_directory), "config.json")
  if config is not None and export_preprocessing_path:
    limit = config.max_position_embeddings
    if default_seq_length is not None and default_seq_length > limit:
      raise ValueError(f"--default_seq_length={default_seq_length} exceeds the model's "
                       f"max_position_embeddings={limit} ({config_source})")
    default_seq_length = default_seq_length or min(128, limit)
  default_seq_length = default_seq_length or 128
  if export_path and not (spm_model_file or vocab_file):
    message = (f"exporting {export_path} without a vocabulary (no --spm_model_file): "
               "--spm_model_file=from_tf_hub (or --vocab_file=from_tf_hub) cannot be used "
               "with it")
    logging.warning(message)
    print(f"Warning: {message}")
  tokenizer = None
  if spm_model_file or vocab_file:
    tokenizer = FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case,
                              spm_model_file=spm_model_file)
  written = {}
  if export_path:
    if tokenizer is not None:
      tokenizer.check_fits(config.vocab_size, config_source)
    dtype = precision.resolve(dtype, precision.probe_shape(config, default_seq_length))
    with compute_dtype(dtype):
      model = AlbertPretrainer(config)
      if init_checkpoint.lower() == "none":
        logging.warning("--init_checkpoint=none: exporting freshly initialized weights")
      else:
        try:
          report = formats.load_checkpoint(model, init_checkpoint)
        except tf.errors.OpError as e:
          raise ValueError(f"cannot read checkpoint {init_checkpoint}: {e.message}") from None
        logging.info("Restored %d variables from %s", len(report.loaded), report.path)
      written["encoder"] = export_encoder(model, export_path, spm_model_file=spm_model_file,
                                          do_lower_case=do_lower_case, overwrite=overwrite,
                                          vocab_file=vocab_file)
  if export_preprocessing_path:
    written["preprocessor"] = export_preprocessor(
        spm_model_file, export_preprocessing_path, do_lower_case=do_lower_case,
        default_seq_length=default_seq_length, overwrite=overwrite, vocab_file=vocab_file)
  return written


# Flags of the original export_to_tfhub.py that are not options here.
ORIGINAL_FLAGS = {
    "use_einsum": Original(bool, True, "ignored: the encoder always computes its dense layers "
                           "as tf.matmul on [batch * seq, width] (what --use_einsum=false chose)"),
}


@dataclasses.dataclass(kw_only=True)
class ExportOptions(Checked):
  """hub_export/export.py's flags."""
  albert_directory: Optional[str] = option(
      None, "A model directory: a released one (albert_config.json, 30k-clean.model or "
      "vocab_chinese.txt, and the checkpoint named by --checkpoint_name), a Hugging Face one "
      "(config.json, model.safetensors, spiece.model or vocab.txt) or its repo id, a KerasHub "
      "preset, or a TF-Hub encoder SavedModel or handle. Explicit file flags take precedence.")
  checkpoint_name: str = option("model.ckpt-best", "Checkpoint prefix in --albert_directory.")
  albert_config_file: Optional[str] = option(None, "albert_config.json of the model.")
  init_checkpoint: Optional[str] = option(
      None, "Checkpoint (prefix or directory), original TF1 names or albert_tf's own; 'none' "
      "exports freshly initialized weights.")
  spm_model_file: Optional[str] = option(None, "SentencePiece model of the vocabulary.")
  vocab_file: Optional[str] = option(None, "WordPiece vocabulary (vocab_chinese.txt), instead "
                                     "of --spm_model_file.")
  export_path: Optional[str] = option(None, "Directory for the encoder SavedModel.")
  export_preprocessing_path: Optional[str] = option(None, "Directory for the preprocessor "
                                                    "SavedModel.")
  do_lower_case: bool = option(True, "Lower-case the input text (the released models do).")
  default_seq_length: Optional[int] = option(None, "Sequence length of the preprocessor's root "
                                             "call (default: 128, or the model's "
                                             "max_position_embeddings if smaller).",
                                             at_least=3)
  overwrite: bool = option(False, "Replace an earlier export (a directory with "
                           "saved_model.pb), nothing else.")
  dtype: str = option("float32", "The encoder's compute dtype: float32, bfloat16 (float32 "
                      "variables and outputs), or auto: the faster of the two on this machine, "
                      "measured at the model's shapes in about a second.",
                      choices=("float32", "bfloat16", precision.AUTO))


def run(opts: ExportOptions) -> Dict[str, str]:
  """What hub_export/export.py does: the exports the flags ask for; prints where they went."""
  kwargs = dataclasses.asdict(opts)
  written = export_from_sources(kwargs.pop("export_path"), kwargs.pop("export_preprocessing_path"),
                                **kwargs)
  for kind, path in written.items():
    print(f"{kind} SavedModel: {path}")
  return written
