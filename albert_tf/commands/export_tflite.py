"""hub_export/export_tflite.py: a run_classifier.py or run_ner.py output directory (or a bare
encoder) to a TFLite file.

Reads the run through `albert_tf.runs` (its task, model, vocabulary, sequence length and
best checkpoint), or a released model directory or an encoder SavedModel, checks it,
and converts with `albert_tf.export.tflite`.
"""

import dataclasses
import os
from typing import Dict, List, Optional, Sequence

import numpy as np

from albert_tf import runs
from albert_tf.cli import Checked, option
from albert_tf.data import glue, ner
from albert_tf.files import atomic_path, writing
from albert_tf.formats import load_checkpoint, read_model_directory, resolve
from albert_tf.export.tflite import QUANTIZATIONS, LiteEncoder, convert, latency_ms
from albert_tf.modeling.models import AlbertPretrainer
from albert_tf.text.tokenization import FullTokenizer

# The run kinds with a TFLite signature (`runs.Kind.lite`).
LITE_KINDS = [name for name, kind in runs.KINDS.items() if kind.lite is not None]


def representative_examples(data_dir: str, task: Optional[glue.GlueTask], module,
                            count: int = 100, seed: int = 0) -> List[Dict[str, np.ndarray]]:
  """`count` examples of the task's train split (drawn with `seed`) as `module`'s inputs;
  with no GLUE task, sentences of a run_ner.py --data_dir's train.txt (words joined by
  spaces)."""
  if task is None:
    texts = [[" ".join(s.words)] for s in ner.read_sentences(os.path.join(data_dir, "train.txt"))]
  else:
    texts = [[e.text_a, e.text_b][:len(module.text_fields)]
             for e in glue.read_examples(data_dir, task, "train")]
  order = np.random.default_rng(seed).permutation(len(texts))[:count]
  return [module.example(texts[i]) for i in order]


def example_inputs(example: glue.InputExample, text_fields: Sequence[str]
                   ) -> Dict[str, np.ndarray]:
  """One GLUE example as the TFLite signature's string [1] inputs."""
  texts = [example.text_a, example.text_b][:len(text_fields)]
  return {f: np.array([t.encode("utf-8")], dtype=object) for f, t in zip(text_fields, texts)}


def read_encoder(albert_directory: Optional[str], hub_module: Optional[str]):
  """(encoder, FullTokenizer, AlbertConfig) of a model directory in any layout
  (`albert_tf.formats`: released, Hugging Face, KerasHub) or an encoder SavedModel (an
  albert_tf export or a tf-models-official module, with its vocabulary asset); names are
  resolved first (hub handles, Hugging Face repo ids). The encoder is albert_tf's own,
  with the source's weights."""
  flag = "--hub_module" if hub_module else "--albert_directory"
  source = resolve(hub_module or albert_directory, flag)
  found = read_model_directory(source, flag)
  found.require_vocabulary("a directory with one")
  config = found.config
  tokenizer = FullTokenizer(vocab_file=found.vocab_file, spm_model_file=found.spm_model_file,
                            do_lower_case=True if found.do_lower_case is None
                            else found.do_lower_case)
  tokenizer.check_fits(config.vocab_size, f"{flag}={hub_module or albert_directory}")
  pretrainer = AlbertPretrainer(config)  # the checkpoint holds the pretraining heads too
  load_checkpoint(pretrainer, found.checkpoint)
  return pretrainer.encoder, tokenizer, config


# ----------------------------------------------------------------------------- the command

@dataclasses.dataclass(kw_only=True)
class TFLiteOptions(Checked):
  """hub_export/export_tflite.py's flags."""
  model_dir: Optional[str] = option(None, "A run_classifier.py or run_ner.py --output_dir: its "
                                    "model.ckpt-best (else latest checkpoint), "
                                    "run record and vocabulary.")
  albert_directory: Optional[str] = option(None, "Instead of --model_dir, a bare encoder: any "
                                           "model directory albert_tf reads (released, "
                                           "Hugging Face, KerasHub) or a Hugging Face repo id.")
  hub_module: Optional[str] = option(None, "Instead of --model_dir, a bare encoder: an "
                                     "encoder SavedModel (hub_export/export.py's, or a "
                                     "TF-Hub ALBERT module of tf-models-official), or its "
                                     "handle.")
  segments: int = option(1, "Bare encoder: text inputs, 1 (sentence) or 2 (sentence1, "
                         "sentence2).", at_least=1, at_most=2)
  output_file: str = option(help="The .tflite file to write; must not exist.")
  quantization: str = option("dynamic_int8", "none (float32), float16 (weights), dynamic_int8 "
                             "(int8 weights, activations quantized on the fly) or int8 (int8 "
                             "matmuls, calibrated on --data_dir).", choices=QUANTIZATIONS)
  max_seq_length: Optional[int] = option(None, "Packed length (default: the run's; 128 for "
                                         "a bare encoder).", at_least=3)
  data_dir: Optional[str] = option(None, "The task's data directory (GLUE's, or run_ner.py's): "
                                   "train.tsv (train.txt) gives the representative examples "
                                   "of --quantization=int8.")
  num_threads: int = option(1, "Threads of the latency check.", at_least=1)


def run(opts: TFLiteOptions) -> Dict[str, Dict[str, float]]:
  """What export_tflite.py does: checks everything, converts, writes, checks latency."""
  output_file = os.path.abspath(opts.output_file)
  if os.path.exists(output_file):
    raise FileExistsError(f"--output_file={opts.output_file} exists; choose another name")
  sources = [f"--{k}" for k in ("model_dir", "albert_directory", "hub_module")
             if getattr(opts, k)]
  if len(sources) != 1:
    raise ValueError("pass exactly one of --model_dir (a fine-tuned classifier), "
                     "--albert_directory or --hub_module (a bare encoder)"
                     + (f"; got {', '.join(sources)}" if sources else ""))
  if opts.quantization == "int8" and not (opts.model_dir and opts.data_dir):
    raise ValueError("--quantization=int8 needs --model_dir and --data_dir (the task's data: "
                     "its train.tsv calibrates the activation ranges)")
  if opts.model_dir:
    run_ = runs.Run.read(opts.model_dir, "--model_dir", LITE_KINDS)
    config, text_fields = run_.config, run_.text_fields
    tokenizer = run_.tokenizer()   # read and checked against the model before converting
    seq_length = opts.max_seq_length or run_.max_seq_length
    if not seq_length:
      raise ValueError(f"--model_dir={opts.model_dir} records no max_seq_length; pass "
                       "--max_seq_length")
  else:
    encoder, tokenizer, config = read_encoder(opts.albert_directory, opts.hub_module)
    text_fields = ["sentence"] if opts.segments == 1 else ["sentence1", "sentence2"]
    seq_length = opts.max_seq_length or min(128, config.max_position_embeddings)
  if seq_length > config.max_position_embeddings:
    raise ValueError(f"--max_seq_length={seq_length} exceeds the model's "
                     f"max_position_embeddings={config.max_position_embeddings}")
  representative, examples = None, None
  if opts.model_dir:
    module = run_.lite_module(seq_length, tokenizer)
    if opts.data_dir:
      examples = representative_examples(opts.data_dir, run_.glue_task, module)
      representative = lambda: iter(examples)
    source = f"{run_.checkpoint} ({run_.task}"
  else:
    module = LiteEncoder(encoder, tokenizer, seq_length, text_fields)
    source = f"the encoder of {opts.albert_directory or opts.hub_module} ({len(text_fields)} segment(s)"
  print(f"Converting {source}, seq {seq_length}, --quantization={opts.quantization})")
  blob = convert(module, opts.quantization, representative)
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
  return {"tflite": {"size_mb": size_mb, "latency_ms": ms}}
