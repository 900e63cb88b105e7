"""hub_export/export_tflite.py: a run_classifier.py output directory to a TFLite file.

Reads what the run recorded (run_config.json: task, model, vocabulary, sequence
length; its best checkpoint), checks it, and converts with `albert_tf.hub.tflite`.
"""

import dataclasses
import json
import os
import tempfile
from typing import Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from albert_tf.cli import Checked, option
from albert_tf.data import glue
from albert_tf.files import reading_checkpoint
from albert_tf.hub.tflite import QUANTIZATIONS, LiteClassifier, convert, latency_ms
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.encoder import AlbertEncoder
from albert_tf.modeling.models import AlbertClassifier
from albert_tf.text.tokenization import FullTokenizer
from albert_tf.training.trainer import BEST_PREFIX

RUN_CONFIG = "run_config.json"


@dataclasses.dataclass
class ClassifierRun:
  """What a run_classifier.py output directory holds, read back for export."""
  model_dir: str
  task: glue.GlueTask
  config: AlbertConfig
  tokenizer: FullTokenizer
  max_seq_length: int
  checkpoint: str
  hub_handle: Optional[str] = None   # the encoder SavedModel of a run fine-tuned from one

  @property
  def text_fields(self) -> List[str]:
    """The serving signature's inputs: GLUE's names for the task's text columns."""
    pairs = any(s.text_b is not None for s in self.task.splits.values())
    return ["sentence1", "sentence2"] if pairs else ["sentence"]

  def build_model(self) -> AlbertClassifier:
    """The classifier with the run's best (else latest) weights."""
    if self.hub_handle:
      import tensorflow_hub as hub  # pylint: disable=g-import-not-at-top
      encoder = hub.KerasLayer(self.hub_handle, trainable=True, name="albert_hub")
    else:
      encoder = AlbertEncoder(self.config)
    model = AlbertClassifier(encoder, self.task.num_labels)
    with reading_checkpoint(self.checkpoint):
      tf.train.Checkpoint(**model.checkpoint_items).read(self.checkpoint).expect_partial()
    return model


def read_classifier_run(model_dir: str) -> ClassifierRun:
  """Reads and checks a run_classifier.py --output_dir; every error names what is wrong."""
  path = os.path.join(model_dir, RUN_CONFIG)
  if not os.path.isdir(model_dir):
    raise FileNotFoundError(f"--model_dir={model_dir} is not a directory")
  if not os.path.exists(path):
    raise ValueError(f"--model_dir={model_dir} is not a run_classifier.py output directory "
                     f"(no {RUN_CONFIG})")
  with open(path) as f:
    record = json.load(f)
  task_name = record.get("task")
  if task_name is None or task_name.lower() not in glue.TASKS:
    raise ValueError(f"--model_dir={model_dir} holds a {task_name!r} run, not a "
                     "run_classifier.py (GLUE) run")
  missing = [k for k in ("model", "max_seq_length") if k not in record]
  if missing:
    raise ValueError(f"{path} lacks {', '.join(missing)}: not written by run_classifier.py")
  hub_handle = record.get("hub")
  if hub_handle and not os.path.isdir(hub_handle):
    raise FileNotFoundError(f"the encoder SavedModel --model_dir={model_dir} was fine-tuned "
                            f"from, {hub_handle} (from its {RUN_CONFIG}), is missing")
  if "spm_model_file" not in record:
    raise ValueError(f"--model_dir={model_dir} uses the WordPiece vocabulary "
                     f"{record.get('vocab_file')}; TFLite export supports SentencePiece "
                     "models (raw text in) only so far")
  spm_model_file = record["spm_model_file"]
  if not os.path.exists(spm_model_file):
    raise FileNotFoundError(f"the vocabulary of --model_dir={model_dir}, {spm_model_file} "
                            f"(from its {RUN_CONFIG}), is missing")
  checkpoint = os.path.join(model_dir, BEST_PREFIX)
  if not tf.io.gfile.exists(checkpoint + ".index"):
    checkpoint = tf.train.latest_checkpoint(model_dir)
  if not checkpoint:
    raise ValueError(f"--model_dir={model_dir} holds no checkpoint ({BEST_PREFIX} or "
                     "another): train it first")
  config = AlbertConfig.from_dict(record["model"])
  tokenizer = FullTokenizer(spm_model_file=spm_model_file,
                            do_lower_case=record.get("do_lower_case", True))
  if tokenizer.vocab_size != config.vocab_size:
    raise ValueError(f"the vocabulary of --model_dir={model_dir}, {spm_model_file}, has "
                     f"{tokenizer.vocab_size} pieces but its model's vocab_size is "
                     f"{config.vocab_size}")
  return ClassifierRun(os.path.abspath(model_dir), glue.get_task(task_name), config, tokenizer,
                       int(record["max_seq_length"]), checkpoint, hub_handle)


def representative_examples(data_dir: str, task: glue.GlueTask, text_fields: Sequence[str],
                            count: int = 100, seed: int = 0) -> List[Dict[str, np.ndarray]]:
  """`count` examples of the task's train split (drawn with `seed`) as serving inputs."""
  examples = glue.read_examples(data_dir, task, "train")
  order = np.random.default_rng(seed).permutation(len(examples))[:count]
  return [example_inputs(examples[i], text_fields) for i in order]


def example_inputs(example: glue.InputExample, text_fields: Sequence[str]
                   ) -> Dict[str, np.ndarray]:
  """One GLUE example as the TFLite signature's string [1] inputs."""
  texts = [example.text_a, example.text_b][:len(text_fields)]
  return {f: np.array([t.encode("utf-8")], dtype=object) for f, t in zip(text_fields, texts)}


# ----------------------------------------------------------------------------- the command

@dataclasses.dataclass(kw_only=True)
class TFLiteOptions(Checked):
  """hub_export/export_tflite.py's flags."""
  model_dir: str = option(help="A run_classifier.py --output_dir: its model.ckpt-best (else "
                          "latest checkpoint), run_config.json and vocabulary.")
  output_file: str = option(help="The .tflite file to write; must not exist.")
  quantization: str = option("dynamic_int8", "none (float32), float16 (weights), dynamic_int8 "
                             "(int8 weights, activations quantized on the fly) or int8 (int8 "
                             "matmuls, calibrated on --data_dir).", choices=QUANTIZATIONS)
  max_seq_length: Optional[int] = option(None, "Packed length (default: the run's).",
                                         at_least=3)
  data_dir: Optional[str] = option(None, "The task's GLUE data directory: train.tsv gives "
                                   "the representative examples of --quantization=int8.")
  num_threads: int = option(1, "Threads of the latency check.", at_least=1)


def run(opts: TFLiteOptions) -> Dict[str, Dict[str, float]]:
  """What export_tflite.py does: checks everything, converts, writes, checks latency."""
  output_file = os.path.abspath(opts.output_file)
  if os.path.exists(output_file):
    raise FileExistsError(f"--output_file={opts.output_file} exists; choose another name")
  if opts.quantization == "int8" and not opts.data_dir:
    raise ValueError("--quantization=int8 needs --data_dir (the task's data: its train.tsv "
                     "calibrates the activation ranges)")
  run_ = read_classifier_run(opts.model_dir)
  seq_length = opts.max_seq_length or run_.max_seq_length
  if seq_length > run_.config.max_position_embeddings:
    raise ValueError(f"--max_seq_length={seq_length} exceeds the model's "
                     f"max_position_embeddings={run_.config.max_position_embeddings}")
  representative = None
  if opts.data_dir:
    examples = representative_examples(opts.data_dir, run_.task, run_.text_fields)
    representative = lambda: iter(examples)
  module = LiteClassifier(run_.build_model(), run_.tokenizer, seq_length, run_.text_fields,
                          run_.task.is_regression)
  print(f"Converting {run_.checkpoint} ({run_.task.name}, seq {seq_length}, "
        f"--quantization={opts.quantization})")
  blob = convert(module, opts.quantization, representative)
  os.makedirs(os.path.dirname(output_file), exist_ok=True)
  with tempfile.NamedTemporaryFile(dir=os.path.dirname(output_file), suffix=".tflite",
                                   delete=False) as f:
    try:
      f.write(blob)
    except OSError:
      os.remove(f.name)
      raise
  os.replace(f.name, output_file)
  sample = examples[0] if opts.data_dir else {
      f: np.array([b"ALBERT runs on the device."], dtype=object) for f in run_.text_fields}
  ms = latency_ms(output_file, sample, opts.num_threads)
  size_mb = len(blob) / 2**20
  print(f"Wrote {output_file}: {size_mb:.1f} MiB; {ms:.1f} ms per example on "
        f"{opts.num_threads} thread(s) (LiteRT)")
  return {"tflite": {"size_mb": size_mb, "latency_ms": ms}}
