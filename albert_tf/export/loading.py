"""Reading albert_tf's raw-text serving exports: what one was made from
(`albert_tf_export.json`), and everything it answers with (`Answering`, as a run's owner
hands over a run's: `albert_tf.runs.Run.answering`).

Reading encoder SavedModels (config, vocabulary, weights) is `albert_tf.formats.tf_hub`'s.
"""

import dataclasses
import importlib
import json
import os
import tempfile
from typing import Callable, List, Optional

import tensorflow as tf

from albert_tf import problems
from albert_tf.text.tokenization import FullTokenizer

EXPORT_RECORD = "albert_tf_export.json"   # beside saved_model.pb: what an export was made from
# The raw-text serving exports, as their record names them (and runs.Kind.export).
CLASSIFIER, TAGGER = "classifier", "tagger"
SERVING_KINDS = (CLASSIFIER, TAGGER)


@dataclasses.dataclass(frozen=True)
class ServingRecord:
  """What a raw-text serving export says it is: its kind ("classifier" or "tagger"), a
  classifier's problem type (None: an older albert_tf's export, which did not say), labels
  and text inputs, and the length it packs."""
  kind: Optional[str]
  problem_type: Optional[str] = None
  labels: List[str] = dataclasses.field(default_factory=list)
  inputs: List[str] = dataclasses.field(default_factory=list)
  seq_length: int = 512
  multi_label_threshold: object = None   # multi-label's: a number, or one per label

  @classmethod
  def of(cls, record: Optional[dict]) -> "ServingRecord":
    record = record or {}
    threshold = record.get("multi_label_threshold")
    return cls(record.get("kind"), record.get("problem_type"), list(record.get("labels") or []),
               list(record.get("inputs") or []), int(record.get("seq_length") or 512),
               tuple(threshold) if isinstance(threshold, list) else threshold)


def export_record(export_path: str) -> Optional[dict]:
  """What the albert_tf classifier export in `export_path` was made from, or None."""
  try:
    with tf.io.gfile.GFile(os.path.join(export_path, EXPORT_RECORD)) as f:
      return json.load(f)
  except (OSError, ValueError, tf.errors.OpError):
    return None


@dataclasses.dataclass
class Answering:
  """Everything a trained model answers new text with, handed over in one piece (to
  `albert_tf.predictor.Predictor`): how it answers (`runs.Kind.answered_as`), what an
  example holds (`fields`, in order), its tokenizer, where it is (for messages), and

  forward: packed inputs (NumPy, named as the ONNX export's) -> named outputs, for a
    run's model under its runtime; strings: sentences (string tensors) -> outputs, for a
    serving export or a kind that answers through its own graph (the tagger's);
  recorded: the kind's settings the run recorded (windows, strides; None for an export);
  problem, seq_length, version_2: a classifier's problem, the length it packs, SQuAD v2.0;
  legacy: names older albert_tf gave the same fields; multi_label_threshold: its own
    (tuned, else 0.5), used when the caller gives none.
  """
  kind: str
  fields: List[str]
  tokenizer: Optional[FullTokenizer]
  where: str
  recorded: object = None
  forward: Optional[Callable] = None
  strings: Optional[Callable] = None
  problem: Optional[problems.Problem] = None
  seq_length: int = 512
  version_2: bool = False
  legacy: List[List[str]] = dataclasses.field(default_factory=list)
  multi_label_threshold: object = None


def serving_answering(path: str, flag: str = "--model", runtime: str = "tensorflow",
                      dtype: str = "float32", load_model: bool = True) -> Optional[Answering]:
  """What the raw-text serving export (a classifier's or tagger's) in `path` answers with,
  loaded with `tf.saved_model.load` as a server would, or None when `path` holds no such
  export. It runs as it was saved: `runtime` auto is TensorFlow, another runtime or dtype
  is refused. `load_model=False`: without the model, which then cannot answer."""
  record = ServingRecord.of(export_record(path))
  if record.kind not in SERVING_KINDS or not tf.io.gfile.exists(
      os.path.join(path, "saved_model.pb")):
    return None
  for name, value, taken in (("runtime", runtime, "tensorflow"), ("dtype", dtype, "float32")):
    if value == "auto":
      print(f"--{name}=auto: {taken} ({flag}={path} is a serving export, which runs as it "
            "was saved)")
  runtime = "tensorflow" if runtime == "auto" else runtime
  dtype = "float32" if dtype == "auto" else dtype
  if runtime != "tensorflow" or dtype != "float32":
    raise ValueError(f"{flag}={path} is a serving export, which runs as it was saved "
                     "(TensorFlow, float32); give its run directory for --runtime or --dtype")
  loaded = load_export(path) if load_model else None
  tokenizer = export_tokenizer(path)
  if record.kind == TAGGER:
    # (A closure over the loaded object keeps its variables alive: its restored __call__
    # alone does not, and once the object was collected every call failed.)
    return Answering("token_classification", ["text"], tokenizer, path,
                     strings=(lambda texts: loaded(texts)) if loaded is not None else None)
  if record.problem_type is None:
    raise ValueError(f"{flag}={path} is a classifier export of an older albert_tf, which "
                     "does not say its labels; export it again (run_classifier.py "
                     "--export_dir), or give its run directory")
  inputs, strings = list(record.inputs), None
  if loaded is not None:
    signature = loaded.signatures["serving_default"]
    strings = lambda texts: signature(**dict(zip(inputs, texts)))
  return Answering("classification", inputs, tokenizer, path, strings=strings,
                   problem=problems.Problem.of(record.problem_type, record.labels),
                   seq_length=record.seq_length,   # (older albert_tf read one input as `text`)
                   legacy=[["text"]] if len(inputs) == 1 and inputs != ["text"] else [],
                   multi_label_threshold=record.multi_label_threshold)


def load_export(path: str):
  """The SavedModel in `path`, its tokenizer's ops registered (tensorflow_text)."""
  importlib.import_module("tensorflow_text")
  return tf.saved_model.load(path)


def export_tokenizer(path: str) -> Optional[FullTokenizer]:
  """The FullTokenizer of a serving export's vocabulary asset."""
  assets = os.path.join(path, "assets")
  names = tf.io.gfile.listdir(assets) if tf.io.gfile.isdir(assets) else []
  spm = [n for n in names if n.endswith(".model")]
  words = [n for n in names if n.endswith(".txt")]
  return (FullTokenizer(spm_model_file=_local(os.path.join(assets, spm[0]))) if spm else
          FullTokenizer(vocab_file=_local(os.path.join(assets, words[0]))) if words else None)


def _local(path: str) -> str:
  """`path`, or a local copy of it when it is on another filesystem (gs://...)."""
  if "://" not in path:
    return path
  copy = os.path.join(tempfile.mkdtemp(prefix="albert_tf_"), os.path.basename(path))
  tf.io.gfile.copy(path, copy)
  return copy
