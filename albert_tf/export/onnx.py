"""ONNX files of albert_tf models, through tf2onnx, with the vocabulary beside them.

`write_onnx` converts a model's inference call with `tf2onnx.convert.from_function`
(opset 17), dynamic batch and sequence axes, inputs `input_word_ids`, `input_mask`,
`input_type_ids` (int32 [B, S]; [B, C, S] for multiple choice) and the outputs named as
the SavedModels name them: `pooled_output` and `sequence_output` (an encoder), `logits`
(a classifier, RACE), `start_logits` and `end_logits` (SQuAD v1.1), the v2.0 head's beam
outputs (with a `p_mask` input). The shared block's weights are captured once, so each is
stored once however many layers apply it. `quantization="dynamic_int8"` writes
onnxruntime's dynamic int8 quantization of that file (int8 weights for MatMul and Gather).

Beside the file go the vocabulary (`spiece.model` or `vocab.txt`) and `<file>.json`
(inputs, outputs, do_lower_case, special ids, labels), so a client outside Python can
tokenize; a classifier's labels and problem type are also in the file's own metadata
(`custom_metadata_map` in ONNX Runtime). Everything is written to temporaries and moved
into place last.
"""

import json
import os
import shutil
import tempfile
from typing import Dict, Optional, Sequence

import tensorflow as tf

from albert_tf.files import writing
from albert_tf.modeling.encoder import INPUT_KEYS, AlbertEncoder
from albert_tf.modeling.layers.dropout import random_generators
from albert_tf.modeling.tracing import inference_only

QUANTIZATIONS = ("none", "dynamic_int8")
OPSET = 17


def inference_function(model):
  """(tf.function, input signature, output names) of `model`'s inference call: what the
  model class declares (its inputs' rank, inputs besides the encoder's, its outputs), or
  an encoder's pooled and sequence outputs."""
  target = model.encoder if getattr(model, "EXPORTS_ENCODER", False) else model
  rank = getattr(target, "EXPORT_RANK", 2)
  spec = [tf.TensorSpec([None] * rank, tf.int32, name=k) for k in INPUT_KEYS]
  if hasattr(target, "export_inputs"):
    spec += [tf.TensorSpec([None, None], dtype, name=name)
             for name, dtype in target.export_inputs().items()]
  random_generators(model)   # made now: one made in the first trace traces it twice

  def call(*tensors):
    inputs = dict(zip([s.name for s in spec], tensors))
    if isinstance(target, AlbertEncoder):   # both outputs: no second first-token path
      outputs = target(inputs, training=False, uses_sequence_output=True)
    else:
      outputs = target(inputs, training=False)
    if hasattr(target, "export_outputs"):
      return target.export_outputs(outputs)
    return {k: outputs[k] for k in ("pooled_output", "sequence_output")}   # an encoder
  function = tf.function(call, input_signature=spec, autograph=False)
  with inference_only():   # the graph tf2onnx reads: no custom gradients' IdentityN ops
    names = sorted(function.get_concrete_function().structured_outputs)
  return function, spec, names


def _sidecar(tokenizer, inputs: Sequence[str], outputs: Sequence[str],
             labels: Optional[Sequence[str]], extra: Dict[str, object]) -> dict:
  special = {token: tokenizer.special_ids[token] for token in sorted(tokenizer.special_ids)}
  return dict(inputs=list(inputs), outputs=list(outputs), do_lower_case=tokenizer.do_lower_case,
              vocabulary=_vocabulary_name(tokenizer),
              tokenizer="sentencepiece" if tokenizer.spm_model_file else "wordpiece",
              special_ids=special, pad_id=tokenizer.pad_id, cls_id=tokenizer.cls_id,
              sep_id=tokenizer.sep_id, labels=list(labels) if labels else None, **extra)


def _vocabulary_name(tokenizer) -> str:
  return "spiece.model" if tokenizer.spm_model_file else "vocab.txt"


def check_targets(output_file: str, overwrite: bool, tokenizer=None) -> None:
  """Refuses to replace anything: the file and its JSON unless `overwrite`, and a
  vocabulary beside it that is not this model's, ever."""
  if os.path.isdir(output_file):
    raise FileExistsError(f"--output_file={output_file} is a directory")
  existing = [t for t in (output_file, output_file + ".json") if os.path.exists(t)]
  if existing and not overwrite:
    raise FileExistsError(f"--output_file: {', '.join(existing)} already exist(s); pass "
                          "--overwrite to replace them; nothing was written")
  if tokenizer is not None:
    beside = os.path.join(os.path.dirname(output_file), _vocabulary_name(tokenizer))
    if os.path.exists(beside):
      with open(beside, "rb") as a, open(tokenizer.vocabulary_file, "rb") as b:
        if a.read() != b.read():
          raise FileExistsError(f"{beside} exists and is another vocabulary; write the ONNX "
                                "file to another directory; nothing was written")


def _write_metadata(path: str, values: Dict[str, object]) -> None:
  """Adds `values` (JSON-encoded) to the ONNX file's metadata_props, where ONNX Runtime's
  `session.get_modelmeta().custom_metadata_map` shows them: a classifier's labels and its
  problem, beside the sidecar JSON."""
  import onnx  # pylint: disable=g-import-not-at-top
  model = onnx.load(path)
  for key, value in values.items():
    if value is not None:
      entry = model.metadata_props.add()
      entry.key, entry.value = key, json.dumps(value)
  onnx.save(model, path)


def write_onnx(model, output_file: str, tokenizer=None, quantization: str = "none",
               labels: Optional[Sequence[str]] = None, overwrite: bool = False,
               extra: Optional[Dict[str, object]] = None) -> Dict[str, object]:
  """Writes `model` as an ONNX file (and its vocabulary and JSON beside it, with a
  `tokenizer`); returns what was written (file, size, outputs)."""
  import tf2onnx  # pylint: disable=g-import-not-at-top
  if quantization not in QUANTIZATIONS:
    raise ValueError(f"--quantization must be one of {', '.join(QUANTIZATIONS)}, "
                     f"got {quantization!r}")
  output_file = os.path.abspath(output_file)
  check_targets(output_file, overwrite, tokenizer)
  directory = os.path.dirname(output_file)
  os.makedirs(directory, exist_ok=True)
  function, spec, names = inference_function(model)
  with writing(output_file):
    tmp = tempfile.mkdtemp(prefix=".onnx_", dir=directory)
    try:
      float_file = os.path.join(tmp, "float32.onnx")
      tf2onnx.convert.from_function(function, input_signature=spec, opset=OPSET,
                                    output_path=float_file)
      written = float_file
      if quantization == "dynamic_int8":
        from onnxruntime.quantization import QuantType, quantize_dynamic  # pylint: disable=g-import-not-at-top
        written = os.path.join(tmp, "int8.onnx")
        # Weights per output channel: on the tests' learned multi-label model, the labels
        # of --do_predict on 0.985 of the rows, against 0.975 with one scale per tensor.
        quantize_dynamic(float_file, written, weight_type=QuantType.QInt8, per_channel=True)
      if labels or extra:
        _write_metadata(written, dict(labels=list(labels) if labels else None, **(extra or {})))
      moves = [(written, output_file)]
      if tokenizer is not None:
        vocabulary = os.path.join(tmp, _vocabulary_name(tokenizer))
        shutil.copyfile(tokenizer.vocabulary_file, vocabulary)
        sidecar = os.path.join(tmp, "sidecar.json")
        with open(sidecar, "w", encoding="utf-8") as f:
          json.dump(_sidecar(tokenizer, [s.name for s in spec], names, labels,
                             dict(quantization=quantization, **(extra or {}))), f, indent=2)
        moves += [(vocabulary, os.path.join(directory, os.path.basename(vocabulary))),
                  (sidecar, output_file + ".json")]
      for source, target in moves:   # the model file last: it appears whole, with its files
        if target != output_file:
          os.replace(source, target)
      os.replace(written, output_file)
    finally:
      shutil.rmtree(tmp, ignore_errors=True)
  return dict(file=output_file, bytes=os.path.getsize(output_file), outputs=names,
              inputs=[s.name for s in spec])
