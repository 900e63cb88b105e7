"""hub_export/export_tflite.py: a run_classifier.py or run_ner.py output directory (or a bare
encoder) to a TFLite file.

`--model` (its old names `--model_dir`, `--albert_directory` and `--hub_module` still
work) is read by `albert_tf.sources`: a run through `albert_tf.runs` (its task, model,
vocabulary, sequence length and best checkpoint) gives the task's signature; any other
model directory, encoder SavedModel or name gives the bare encoder's. It is checked, then
converted with `albert_tf.export.tflite`.
"""

import dataclasses
import json
import os
from typing import Dict, List, Optional, Sequence

import numpy as np

from albert_tf import runs, sources
from albert_tf.cli import Checked, option
from albert_tf.data import glue
from albert_tf.files import atomic_open, atomic_path, writing
from albert_tf.export.tflite import (PROBABILITY_CHANGE, QUANTIZATIONS, LiteClassifier,
                                     LiteEncoder, convert, label_agreement, latency_ms)

OLD_NAMES = ("model_dir", "albert_directory", "hub_module")
# The run kinds with a TFLite signature (`runs.Kind.lite`).
LITE_KINDS = [name for name, kind in runs.KINDS.items() if kind.lite is not None]


def representative_examples(texts: Sequence[Sequence[str]], module, count: int = 100,
                            seed: int = 0) -> List[Dict[str, np.ndarray]]:
  """`count` of the examples' texts (drawn with `seed`) as `module`'s inputs."""
  order = np.random.default_rng(seed).permutation(len(texts))[:count]
  return [module.example(list(texts[i])) for i in order]


def example_inputs(example: glue.InputExample, text_fields: Sequence[str]
                   ) -> Dict[str, np.ndarray]:
  """One GLUE example as the TFLite signature's string [1] inputs."""
  texts = [example.text_a, example.text_b][:len(text_fields)]
  return {f: np.array([t.encode("utf-8")], dtype=object) for f, t in zip(text_fields, texts)}


# ----------------------------------------------------------------------------- the command

@dataclasses.dataclass(kw_only=True)
class TFLiteOptions(Checked):
  """hub_export/export_tflite.py's flags."""
  model: Optional[str] = sources.model_option("A run_classifier.py or run_ner.py run gives "
                                              "its task's signature (its model.ckpt-best, "
                                              "record and vocabulary); any other the bare "
                                              "encoder's.")
  model_dir: Optional[str] = sources.old_name_option()
  albert_directory: Optional[str] = sources.old_name_option()
  hub_module: Optional[str] = sources.old_name_option()
  segments: int = option(1, "Bare encoder: text inputs, 1 (sentence) or 2 (sentence1, "
                         "sentence2).", at_least=1, at_most=2)
  output_file: str = option(help="The .tflite file to write; must not exist.")
  quantization: str = option("dynamic_int8", "none (float32), float16 (weights), dynamic_int8 "
                             "(int8 weights, activations quantized on the fly) or int8 (int8 "
                             "matmuls, calibrated on the run's training data or "
                             "--calibration_file; the most sensitive kept in float32 until "
                             "the file gives float32's answers on those examples, "
                             "probabilities within 0.003 on average).",
                             choices=QUANTIZATIONS)
  max_seq_length: Optional[int] = option(None, "Packed length (default: the run's; 128 for "
                                         "a bare encoder).", at_least=3)
  calibration_file: Optional[str] = option(
      None, "--quantization=int8: the examples that calibrate the activation ranges, in the "
      "run's own format (your own files: .csv, .tsv, .jsonl with the run's text columns, or "
      ".txt, a text a line; NER: CoNLL). Default: the run's own training data.")
  data_dir: Optional[str] = option(None, "The task's data directory (GLUE's, or run_ner.py's), "
                                   "as --calibration_file: its train.tsv (train.txt).")
  num_threads: int = option(1, "Threads of the latency check.", at_least=1)


def run(opts: TFLiteOptions) -> Dict[str, Dict[str, float]]:
  """What export_tflite.py does: checks everything, converts, writes, checks latency."""
  output_file = os.path.abspath(opts.output_file)
  for target in (output_file, output_file + ".json"):     # (the file, a classifier's sidecar)
    if os.path.exists(target):
      raise FileExistsError(f"--output_file={opts.output_file}: {target} exists; choose "
                            "another name")
  value, flag = sources.model_flag(opts, OLD_NAMES)
  path = sources.locate(value, flag)
  is_run = runs.Run.exists(path)
  if opts.calibration_file and opts.data_dir:
    raise ValueError("pass --calibration_file or --data_dir, not both")
  calibration = opts.calibration_file or opts.data_dir
  if opts.quantization == "int8" and not is_run:
    raise ValueError(f"--quantization=int8 needs a fine-tuning run as {flag} (its training "
                     "data, or --calibration_file, calibrates the activation ranges)")
  if is_run:
    run_ = runs.Run.read(path, flag, LITE_KINDS)
    config, text_fields = run_.config, run_.fields
    tokenizer = run_.tokenizer()   # read and checked against the model before converting
    seq_length = opts.max_seq_length or run_.max_seq_length
    if not seq_length:
      raise ValueError(f"{flag}={value} records no max_seq_length; pass --max_seq_length")
  else:
    source = sources.read(path, flag, require_vocabulary=True)
    encoder, tokenizer, config = source.encoder, source.tokenizer, source.config
    text_fields = ["sentence"] if opts.segments == 1 else ["sentence1", "sentence2"]
    seq_length = opts.max_seq_length or min(128, config.max_position_embeddings)
  if seq_length > config.max_position_embeddings:
    raise ValueError(f"--max_seq_length={seq_length} exceeds the model's "
                     f"max_position_embeddings={config.max_position_embeddings}")
  representative, examples = None, None
  if is_run:
    module = run_.lite_module(seq_length, tokenizer)
    if calibration or opts.quantization == "int8":
      try:
        examples = representative_examples(run_.texts(calibration), module)
      except (ValueError, FileNotFoundError) as e:
        given = "--calibration_file" if opts.calibration_file else "--data_dir"
        raise type(e)(f"{given}={calibration}: {e}" if calibration else
                      f"--quantization=int8: {e} (--calibration_file)") from None
      representative = lambda: iter(examples)
    what = f"{run_.checkpoint} ({run_.task}"
  else:
    module = LiteEncoder(encoder, tokenizer, seq_length, text_fields)
    what = f"the encoder of {value} ({len(text_fields)} segment(s)"
  print(f"Converting {what}, seq {seq_length}, --quantization={opts.quantization})")
  converted = convert(module, opts.quantization, representative)
  blob = converted.blob
  if converted.kept_in_float:
    print(f"int8: kept {len(converted.kept_in_float)} of the {converted.quantizable} dense "
          f"layers and embedding tables in float32 (the most sensitive first), so that the "
          f"file gives float32's answers on all {len(examples)} calibration examples, with "
          f"probabilities within {PROBABILITY_CHANGE} on average")
  with writing(output_file, needed=len(blob)):
    os.makedirs(os.path.dirname(output_file), exist_ok=True)
  with atomic_path(output_file) as temporary, writing(output_file, needed=len(blob)):
    with open(temporary, "wb") as f:
      f.write(blob)
  sample = examples[0] if examples else module.example(["ALBERT runs on the device."] *
                                                        len(text_fields))
  ms = latency_ms(output_file, sample, opts.num_threads)
  size_mb = len(blob) / 2**20
  print(f"Wrote {output_file}: {size_mb:.1f} MiB; {ms:.1f} ms per example on "
        f"{opts.num_threads} thread(s) (LiteRT)")
  written = {"size_mb": size_mb, "latency_ms": ms}
  if opts.quantization == "int8":
    written["kept_in_float"] = list(converted.kept_in_float)
  if isinstance(module, LiteClassifier):
    written["sidecar"] = _write_sidecar(output_file, run_)
    if opts.quantization != "none":
      written["agreement"] = _agreement(output_file, module, examples, run_, calibration)
  return {"tflite": written}


def _write_sidecar(output_file: str, run_) -> str:
  """`<file>.json` beside a classifier's .tflite: its inputs, labels (in the order of its
  `probabilities`), problem type and, for a multi-label run with tuned thresholds,
  `multi_label_thresholds` {label: threshold} (docs/on_device.md)."""
  path = output_file + ".json"
  with atomic_open(path, encoding="utf-8") as f:
    json.dump(dict(inputs=run_.text_inputs, labels=run_.labels, max_seq_length=run_.max_seq_length,
                   **run_.export_metadata()), f, indent=2, ensure_ascii=False)
  return path


def _agreement(output_file, module, examples, run_, calibration) -> Optional[float]:
  """A quantized classifier's labels against float32's on the calibration examples (or
  100 of the run's training examples), printed with a warning under 0.99."""
  if examples is None:
    try:
      examples = representative_examples(run_.texts(calibration), module)
    except (ValueError, FileNotFoundError):
      return None        # (a run that records no training data: nothing to compare on)
  agreement = label_agreement(output_file, module, examples)
  if agreement is not None:
    print(f"Labels as the float32 model's on {agreement:.3f} of {len(examples)} training "
          f"examples" + ("" if agreement >= 0.99 else
                         " (under 0.99: --quantization=dynamic_int8 or none keep more; "
                         "docs/on_device.md)"))
  return agreement
