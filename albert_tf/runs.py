"""A trained run: the one owner of a fine-tuning or pretraining script's --output_dir record.

A run directory holds, besides its checkpoints and logs, what the run is:

- `run_config.json`: the task, the model's config, where the weights came from (a TF-Hub
  encoder it was fine-tuned from), the vocabulary, the sequence length, the task's own
  settings (a tagger's tags and scheme) and the training flags (enforced on resume);
- `labels.txt`: the label names in id order, one per line (what a user reads);
- `model.ckpt-best` and `best_trial.txt`: the best evaluated weights and their step.

This module is the only code that reads or writes that record: the tasks claim and record
through `claim`, and everything that reads a trained run back (convert, the exporters,
predictions, tests, benchmarks) goes through `Run.read`, whose `model()` rebuilds the
task's model with its weights. Each task kind is declared once, in `KINDS`: its model, the
settings its record holds (a typed `Settings` dataclass, `Run.settings`), the fields of an
example it answers, its TFLite module, its serving export and how its example texts are
read; a classifier's problem is `albert_tf.problems`'. What is made from a run and kept
beside it (a serving export, an ONNX file) is `Run.kept`, remade when the weights change.
"""

import dataclasses
import json
import os
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import tensorflow as tf

from albert_tf import console, problems
from albert_tf.data import glue, ner, own
from albert_tf.files import (LOCK_NAME, atomic_open, fingerprint, lock_directory,
                             reading_checkpoint,
                             unlock_directory, write_json)
from albert_tf.export import runtimes
from albert_tf.export.loading import CLASSIFIER, TAGGER, Answering, serving_answering
from albert_tf.formats.tf_hub import exported_encoder_variables
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.encoder import AlbertEncoder
from albert_tf.modeling.models import (AlbertClassifier, AlbertMultipleChoice, AlbertPretrainer,
                                       AlbertQuestionAnswerer, AlbertTokenClassifier,
                                       AlbertWindowsClassifier)
from albert_tf.text.tokenization import FullTokenizer
from albert_tf.training.distribute import is_chief
from albert_tf.training.trainer import BEST_PREFIX

RECORD = "run_config.json"
MADE_FROM = "made_from.json"   # what the exports kept in a run were made from
SERVING = "serving"      # a classifier's or tagger's serving export, kept in its run directory
DATA = "data"        # the record's where-the-training-data-was: not what makes it another run
LABELS = "labels.txt"
THRESHOLDS = "thresholds.txt"   # a multi-label run's tuned thresholds: label<TAB>threshold
BEST_TRIAL = "best_trial.txt"


# ----------------------------------------------------------------------------- task settings

@dataclasses.dataclass(frozen=True)
class Settings:
  """What a kind records of a run besides the model and the vocabulary: the settings its
  inputs are read and its answers made with. A field missing from a record (an older
  albert_tf's) takes its default."""

  @classmethod
  def of_record(cls, record: dict) -> "Settings":
    values = {}
    for f in dataclasses.fields(cls):
      if record.get(f.name) is not None:
        value = record[f.name]
        values[f.name] = tuple(value) if isinstance(value, list) else value
    return cls(**values)

  def to_record(self) -> dict:
    return {k: list(v) if isinstance(v, tuple) else v
            for k, v in dataclasses.asdict(self).items()}


@dataclasses.dataclass(frozen=True)
class ClassifierSettings(Settings):
  """run_classifier.py on your own files (a GLUE run records none: its task says them)."""
  problem_type: Optional[str] = None
  labels: Tuple[str, ...] = ()
  text_columns: Tuple[str, ...] = ()
  label_column: str = "label"
  label_delimiter: Optional[str] = None
  # The loss's weights (--class_weight / --pos_weight=balanced), from the training rows.
  class_weight: Tuple[float, ...] = ()
  pos_weight: Tuple[float, ...] = ()
  # --long_text=windows: each text in windows of max_seq_length, doc_stride apart, at most
  # max_windows of them (None: all, as runs recorded before the flag), pooled by
  # window_pooling (AlbertWindowsClassifier's; "mean" for runs recorded before the field).
  long_text: str = "truncate"
  doc_stride: int = 64
  window_pooling: str = "mean"
  max_windows: Optional[int] = None

  LATER = ("class_weight", "pos_weight", "long_text", "doc_stride", "window_pooling",
           "max_windows")

  @property
  def windows(self) -> bool:
    return self.long_text == "windows"

  def to_record(self) -> dict:
    """As `Settings.to_record`, without the later fields at their defaults: a run recorded
    before them is the same run."""
    record = super().to_record()
    for f in dataclasses.fields(self):
      default = list(f.default) if isinstance(f.default, tuple) else f.default
      if f.name in self.LATER and record[f.name] == default:
        del record[f.name]
    return record


@dataclasses.dataclass(frozen=True)
class TaggerSettings(Settings):
  """run_ner.py: the tags (labels.txt), their scheme, the windows' stride, and whether a
  word is a character (the Chinese sets)."""
  labels: Tuple[str, ...] = ()
  tag_scheme: str = "BIO"
  doc_stride: int = 128
  per_character: bool = False


@dataclasses.dataclass(frozen=True)
class ReaderSettings(Settings):
  """run_squad.py: the context windows' stride and the longest question, in pieces."""
  doc_stride: int = 128
  max_query_length: int = 64


@dataclasses.dataclass(frozen=True)
class ChoiceSettings(Settings):
  """run_race.py: the levels trained on and the longest question-with-option."""
  levels: Tuple[str, ...] = ()
  max_qa_length: int = 128


# ----------------------------------------------------------------------------- task kinds

@dataclasses.dataclass(frozen=True)
class Kind:
  """What every other module asks of a task kind.

  name: the kind, as transformers' pipelines name it.
  script: the script whose --output_dir holds such a run (for messages).
  build: (encoder, run) -> the task model over `encoder` (an AlbertEncoder, or the
    hub.KerasLayer of the encoder SavedModel the run was fine-tuned from).
  lite: (model, run, seq_length, tokenizer) -> the TFLite module of the model, if it has one.
  settings: what its record holds besides the model (a `Settings` class).
  fields: what an example to answer holds, in order (None: a classifier's text columns;
    () for a kind that answers nothing).
  texts: (run, path) -> the text fields of each example of a data file or directory in
    the kind's own format (what int8 TFLite calibrates on), if it has a TFLite module.
  export: the `kind` its raw-text serving export records (albert_tf_export.json), if it
    has one; serving: (run, model, path, record) -> writes that export of `model` in
    `path` (replacing it), `record` added to its record.
  tasks: the task names its runs record (`run_config.json`'s "task", case-insensitive).
  answers: how `albert_tf.predictor` answers for it (the name of its `Answers`; None: the
    kind's own name).
  graph: (run, model, tokenizer) -> sentences (string tensors) -> outputs, for a kind that
    answers through its own TensorFlow graph (the tagger's), not a runtime's forward.
  command: (module, options class, the original's flags or None) of its training command,
    which `albert_tf.commands.table` lists as `script` without the `.py`.

  A new kind is its model (`modeling/models.py`), its training task (`tasks/`) and its
  entry here: docs/architecture.md, "A new task kind".
  """
  name: str
  script: str
  build: Callable
  settings: type = Settings
  fields: Optional[Tuple[str, ...]] = None
  lite: Optional[Callable] = None
  texts: Optional[Callable] = None
  export: Optional[str] = None
  serving: Optional[Callable] = None
  tasks: Tuple[str, ...] = ()
  answers: Optional[str] = None
  command: Optional[Tuple[str, str, Optional[str]]] = None
  graph: Optional[Callable] = None

  @property
  def answered_as(self) -> str:
    return self.answers or self.name


def refuse_windows(run: "Run", what: str) -> None:
  """One line for an export that classifies one window of a --long_text=windows run."""
  if run.long_text():
    raise ValueError(f"{run.flag}={run.path} was trained with --long_text=windows: {what} "
                     "classifies one window of --max_seq_length, not a text's windows pooled; "
                     "predict with predict.py (locally, or on Beam with "
                     "--runtime=onnxruntime), which windows and pools as the run does")


def windows_note(run: Optional["Run"], what: str, metadata: Optional[str],
                 pools: bool = False) -> Optional[str]:
  """The line an export of a --long_text=windows run prints: the model it writes
  classifies one window (or, `pools`, takes a text's windows and pools them), and
  `metadata` (where the export carries `long_text`, if it has a place) says how the run
  windows and pools. None for other runs."""
  windows = run.long_text().get("long_text") if run is not None else None
  if not windows:
    return None
  how = (f"--doc_stride={windows['doc_stride']}, at most --max_windows="
         f"{windows['max_windows']}, pooled by --window_pooling={windows['window_pooling']}")
  if pools:
    said = (f"{what} takes a text's windows of {windows['windows_of']} pieces [batch, "
            f"windows, {windows['windows_of']}] and pools them as the run does ({how})")
  else:
    said = (f"{what} classifies one window of {windows['windows_of']} pieces, and a longer "
            f"text answers as the run only windowed ({how}), as predict.py does")
  return (f"Note: {run.flag}={run.path} was trained with --long_text=windows: {said}"
          + (f"; {metadata} says so in `long_text`" if metadata else "") + " (docs/own_data.md)")


def _classifier(encoder, run: "Run") -> AlbertClassifier:
  """A classifier run's model: over each text's windows, pooled, for a --long_text=windows
  run."""
  settings = run.settings
  if getattr(settings, "windows", False):
    return AlbertWindowsClassifier(encoder, run.num_outputs, settings.window_pooling,
                                   dropout_rate=run.dropout)
  return AlbertClassifier(encoder, run.num_outputs, dropout_rate=run.dropout)


def _lite_classifier(model, run: "Run", seq_length: int, tokenizer: FullTokenizer):
  from albert_tf.export.tflite import LiteClassifier  # pylint: disable=g-import-not-at-top
  refuse_windows(run, "a TFLite file")
  return LiteClassifier(model, tokenizer, seq_length, run.text_inputs, run.problem,
                        run.multi_label_threshold or 0.5)


def _lite_tagger(model, run: "Run", seq_length: int, tokenizer: FullTokenizer):
  from albert_tf.export.tflite import LiteTagger  # pylint: disable=g-import-not-at-top
  return LiteTagger(model, tokenizer, seq_length)


def _serve_classifier(run: "Run", model, path: str, record: dict) -> None:
  from albert_tf.export.serving import export_classifier  # pylint: disable=g-import-not-at-top
  refuse_windows(run, "the serving export")
  problem = run.problem
  export_classifier(model, path, run.tokenizer(), run.max_seq_length, problem.export_labels,
                    inputs=run.text_inputs, overwrite=True, record=record,
                    multi_label_threshold=problem.serving_threshold(
                        run.multi_label_threshold))


def _serve_tagger(run: "Run", model, path: str, record: dict) -> None:
  from albert_tf.export.tagger import export_tagger  # pylint: disable=g-import-not-at-top
  settings = run.settings
  export_tagger(model, path, run.tokenizer(), run.max_seq_length, settings.doc_stride,
                run.labels, settings.tag_scheme, settings.per_character, overwrite=True,
                record=record)


def _tagger_graph(run: "Run", model, tokenizer: FullTokenizer) -> Callable:
  from albert_tf.export.tagger import tagger_module  # pylint: disable=g-import-not-at-top
  settings = run.settings
  return tagger_module(model, tokenizer, run.max_seq_length, settings.doc_stride, run.labels,
                       settings.tag_scheme, settings.per_character).__call__


def _classifier_texts(run: "Run", path: str) -> List[List[str]]:
  """A classifier's examples in `path`: a GLUE run's data directory (its train.tsv), a .txt
  file (a text a line), or a CSV, TSV or JSONL file's text columns (the run's own)."""
  task = run.glue_task
  if os.path.isdir(path):
    if task is None:
      raise ValueError(f"{path} is a directory; a run on your own files reads a .csv, .tsv, "
                       ".jsonl or .txt file")
    return [[e.text_a, e.text_b][:len(run.text_inputs)]
            for e in glue.read_examples(path, task, "train")]
  if not os.path.isfile(path):
    raise FileNotFoundError(f"{path} not found")
  if path.lower().endswith(".txt"):
    if len(run.text_inputs) != 1:
      raise ValueError(f"{path}: a .txt file holds one text a line, but {run.path} reads "
                       "sentence pairs; use .csv, .tsv or .jsonl")
    with open(path, encoding="utf-8-sig") as f:
      return [[line.rstrip("\r\n")] for line in f if line.strip()]
  columns, texts = run.text_inputs, []
  for line, record in own.records(path):
    missing = [c for c in columns if c not in record]
    if missing:
      raise ValueError(f"{path}:{line}: no column {', '.join(map(repr, missing))}; the run "
                       f"reads {', '.join(map(repr, columns))}")
    texts.append([str(record[c]) for c in columns])
  return texts


def _tagger_texts(run: "Run", path: str) -> List[List[str]]:
  """A tagger's sentences (words joined by spaces) of a CoNLL file, or of a run_ner.py
  data directory's train.txt."""
  del run
  return [[" ".join(s.words)] for s in ner.read_sentences(
      os.path.join(path, "train.txt") if os.path.isdir(path) else path)]


KINDS = {
    "classification": Kind(
        "classification", "run_classifier.py",
        _classifier, ClassifierSettings, None, _lite_classifier, _classifier_texts, CLASSIFIER,
        _serve_classifier, tasks=("classification", *(t.name for t in glue.TASKS.values())),
        command=("albert_tf.tasks.classification", "ClassifierOptions", "ORIGINAL_FLAGS")),
    "token_classification": Kind(
        "token_classification", "run_ner.py",
        lambda encoder, run: AlbertTokenClassifier(encoder, len(run.labels),
                                                   dropout_rate=run.dropout),
        TaggerSettings, ("text",), _lite_tagger, _tagger_texts, TAGGER, _serve_tagger,
        tasks=("NER",), command=("albert_tf.tasks.token_classification", "NerOptions", None),
        graph=_tagger_graph),
    "multiple_choice": Kind(
        "multiple_choice", "run_race.py",
        lambda encoder, run: AlbertMultipleChoice(encoder, dropout_rate=run.dropout),
        ChoiceSettings, ("article", "question", "options"), tasks=("RACE",),
        command=("albert_tf.tasks.multiple_choice", "RaceOptions", "ORIGINAL_FLAGS")),
    "question_answering": Kind(
        "question_answering", "run_squad.py",
        lambda encoder, run: AlbertQuestionAnswerer(
            encoder, version_2_with_negative=run.version_2),
        ReaderSettings, ("question", "context"), tasks=("SQuAD v1.1", "SQuAD v2.0"),
        command=("albert_tf.tasks.question_answering", "SquadOptions", "ORIGINAL_FLAGS")),
    "pretraining": Kind("pretraining", "run_pretraining.py",
                        lambda encoder, run: AlbertPretrainer(encoder), Settings, (),
                        tasks=("pretraining",),
                        command=("albert_tf.tasks.pretraining", "PretrainingOptions",
                                 "ORIGINAL_FLAGS")),
}


def answering() -> List[str]:
  """The kinds that answer new text (`albert_tf.predictor`): all but pretraining."""
  return [name for name, kind in KINDS.items() if kind.fields != ()]


def kind_of(task: str) -> Optional[Kind]:
  """The kind of a recorded task name (`Kind.tasks`: a GLUE task, NER, RACE, SQuAD v1.1 /
  v2.0, pretraining), or None."""
  task = str(task).lower()
  return next((k for k in KINDS.values() if task in (t.lower() for t in k.tasks)), None)


# ----------------------------------------------------------------------------- reading

@dataclasses.dataclass(frozen=True)
class Run:
  """A trained run's output directory, read back: what the run is and its best weights."""
  path: str
  record: dict
  flag: str = "--model_dir"      # how the caller named the directory, for messages

  @classmethod
  def exists(cls, path: str) -> bool:
    """Whether `path` is a run directory (holds a run record)."""
    return os.path.isfile(os.path.join(path, RECORD))

  @classmethod
  def read(cls, path: str, flag: str = "--model_dir", kinds: Optional[List[str]] = None
           ) -> "Run":
    """Reads and checks the run in `path`; `kinds` (names in KINDS) are those the caller
    can use. Every error names the flag, the directory or the file."""
    where = f"{flag}={path}"
    if not os.path.isdir(path):
      raise FileNotFoundError(f"{where} is not a directory")
    record_path = os.path.join(path, RECORD)
    scripts = " or ".join(KINDS[k].script for k in (kinds or KINDS))
    if not os.path.exists(record_path):
      raise ValueError(f"{where} is not a {scripts} output directory (no {RECORD})")
    with open(record_path, encoding="utf-8") as f:
      try:
        record = json.load(f)
      except json.JSONDecodeError as e:
        raise ValueError(f"{record_path}: not JSON ({e})") from None
    run = cls(os.path.abspath(path), record, flag)
    kind = kind_of(record.get("task"))
    if kind is None or (kinds and kind.name not in kinds):
      raise ValueError(f"{where} holds a {record.get('task')!r} run, not a {scripts} run")
    if "model" not in record:
      raise ValueError(f"{record_path} lacks the model's config: not written by albert_tf")
    if kind.name == "token_classification" and not record.get("labels"):
      raise ValueError(f"{record_path} lacks the tagger's labels")
    if run.hub and not os.path.isdir(run.hub):
      raise FileNotFoundError(f"the encoder SavedModel {where} was fine-tuned from, {run.hub} "
                              f"(from its {RECORD}), is missing")
    return run

  # -- what the run is

  @property
  def task(self) -> str:
    """The recorded task name: a GLUE task's, NER, RACE, SQuAD v1.1 / v2.0, pretraining."""
    return str(self.record.get("task"))

  @property
  def kind(self) -> Kind:
    return kind_of(self.task)

  @property
  def settings(self) -> Settings:
    """The kind's settings, as the run recorded them (`Kind.settings`)."""
    return self.kind.settings.of_record(self.record)

  @property
  def version_2(self) -> bool:
    """A SQuAD v2.0 run (it may answer that there is no answer)."""
    return self.task.endswith("v2.0")

  @property
  def do_lower_case(self) -> bool:
    return bool(self.record.get("do_lower_case", True))

  @property
  def trained_dtype(self) -> Optional[str]:
    """The compute dtype the run was trained in (None before any training)."""
    return self.training.get("dtype")

  @property
  def fields(self) -> List[str]:
    """What an example to answer holds, in order (a classifier's: its text columns)."""
    fields = self.kind.fields
    return list(self.text_inputs if fields is None else fields)

  @property
  def config(self) -> AlbertConfig:
    return AlbertConfig.from_dict(self.record["model"])

  @property
  def hub(self) -> Optional[str]:
    """The encoder SavedModel the run was fine-tuned from, if it was."""
    return self.record.get("hub")

  @property
  def max_seq_length(self) -> Optional[int]:
    value = self.record.get("max_seq_length")
    return int(value) if value is not None else None

  @property
  def training(self) -> dict:
    """The training flags the run was trained with ({} before any training)."""
    return self.record.get("training") or {}

  @property
  def dropout(self) -> float:
    return float(self.training.get("dropout_prob", 0.1))

  @property
  def glue_task(self) -> Optional[glue.GlueTask]:
    """The GLUE task of a run_classifier.py run on one (not on your own files)."""
    if self.kind.name != "classification" or self.task == "classification":
      return None
    return glue.get_task(self.task)

  @property
  def labels(self) -> Optional[List[str]]:
    """Label names in id order (a classifier's, a tagger's tags), or None."""
    if "labels" in self.record and hasattr(self.settings, "labels"):
      return list(self.settings.labels) or (["LABEL_0"] if self.num_outputs == 1 else [])
    task = self.glue_task
    if task is not None:
      return list(task.labels) if task.labels else ["LABEL_0"]
    return None

  @property
  def problem(self) -> Optional[problems.Problem]:
    """A classifier's problem (`albert_tf.problems`): your own files' recorded one, a GLUE
    task's; None for kinds whose settings are not a classifier's."""
    if not isinstance(self.settings, ClassifierSettings):
      return None
    task, settings = self.glue_task, self.settings
    if task is not None and not settings.problem_type:
      return problems.Problem.of_glue(task)
    return problems.Problem.of(settings.problem_type, settings.labels)

  @property
  def multi_label_threshold(self):
    """A multi-label run's thresholds: each label's tuned one (thresholds.txt, a tuple in
    label order), else 0.5; None for other problems."""
    problem = self.problem
    if problem is None or problem.type != problems.MULTI:
      return None
    return read_thresholds(self.path, problem.labels) or 0.5

  def export_metadata(self) -> Dict[str, object]:
    """What every export of a classifier run carries besides its labels: the problem type
    and, for a multi-label run with tuned thresholds, `multi_label_thresholds` {label:
    threshold}, for a --long_text=windows run `long_text` (docs/own_data.md)."""
    return dict(problem_type=self.problem_type, **self.export_extras())

  def export_extras(self) -> Dict[str, object]:
    """What an export whose format already says the problem (Hugging Face, KerasHub) adds
    to its metadata: the text inputs' names, the tuned thresholds and the windows, where
    the run has them."""
    return dict(text_inputs=self.text_inputs, **self.tuned_thresholds(), **self.long_text())

  def long_text(self) -> Dict[str, object]:
    """`long_text` {windows_of, doc_stride, window_pooling, max_windows} of a
    --long_text=windows run, as its exports carry it (their models classify one window of
    `windows_of` pieces; a text's first `max_windows` windows (None: all) start
    `doc_stride` apart, pooled by `window_pooling`);
    else nothing."""
    settings = self.settings
    if not getattr(settings, "windows", False):
      return {}
    return dict(long_text=dict(windows_of=self.max_seq_length, doc_stride=settings.doc_stride,
                               window_pooling=settings.window_pooling,
                               max_windows=settings.max_windows))

  def tuned_thresholds(self) -> Dict[str, object]:
    """`multi_label_thresholds` {label: threshold} of a multi-label run with tuned ones, as
    every export carries them; else nothing."""
    threshold = self.multi_label_threshold
    if not isinstance(threshold, tuple):
      return {}
    return dict(multi_label_thresholds=dict(zip(self.problem.labels, threshold)))

  @property
  def problem_type(self) -> Optional[str]:
    """transformers' name of a classifier's problem."""
    return self.problem.type if self.problem is not None else None

  @property
  def num_outputs(self) -> int:
    """A classifier's outputs: one per label, or one score."""
    return self.problem.num_outputs

  @property
  def text_inputs(self) -> List[str]:
    """A classifier's text inputs, by the one name each has through every door (the files
    predict.py and Beam read, the Predictor's examples, the serving and TFLite signatures,
    the ONNX, Hugging Face and KerasHub metadata): your own files' text columns, or the
    GLUE task's names for them (`glue.GlueTask.inputs`: `sentence` for SST-2)."""
    task = self.glue_task
    if task is not None:
      return list(task.inputs)
    return list(getattr(self.settings, "text_columns", ()) or ["text"])

  @property
  def legacy_inputs(self) -> List[List[str]]:
    """The names older albert_tf read a GLUE run's text inputs by in files and dicts
    (`text`, or `sentence1`, `sentence2`), where they are not the task's: still read, with
    a note. (Your own files' columns were always their own; a serving export keeps its
    older names in a signature of their own, `albert_tf.export.serving`.)"""
    task = self.glue_task
    older = ["text"] if len(self.text_inputs) == 1 else ["sentence1", "sentence2"]
    return [older] if task is not None and older != self.text_inputs else []

  @property
  def data(self) -> Dict[str, str]:
    """Where the run's training data was, as its flags named it ({"train_file": ...} or
    {"data_dir": ...}; {} before any training, or for a run of an older albert_tf)."""
    return dict(self.record.get(DATA) or {})

  def texts(self, path: Optional[str] = None) -> List[List[str]]:
    """The text fields of the examples of `path` (a file or directory in the task's own
    format), or of the run's own training data."""
    if self.kind.texts is None:
      raise ValueError(f"{self.flag}={self.path} holds a {self.task} run, which reads no "
                       "example texts here")
    if path is None:
      if not self.data:
        raise ValueError(f"{self.flag}={self.path} does not record its training data (a run "
                         "of an older albert_tf, or one never trained); give a file of texts")
      path = next(iter(self.data.values()))
      if not os.path.exists(path):
        raise FileNotFoundError(f"the training data of {self.flag}={self.path}, {path} (from "
                                f"its {RECORD}), is missing; give a file of texts")
    texts = self.kind.texts(self, path)
    if not texts:
      raise ValueError(f"{path}: no examples in it")
    return texts

  def vocabulary(self):
    """(spm_model_file, vocab_file) the run recorded (one of them None)."""
    return self.record.get("spm_model_file"), self.record.get("vocab_file")

  def tokenizer(self, spm_model_file: Optional[str] = None,
                vocab_file: Optional[str] = None) -> Optional[FullTokenizer]:
    """The run's FullTokenizer (or one of the vocabulary given instead), checked against
    the model's vocab_size; None when the run recorded none (pretraining)."""
    given = bool(spm_model_file or vocab_file)
    if not given:
      spm_model_file, vocab_file = self.vocabulary()
    path = spm_model_file or vocab_file
    if not path:
      return None
    if not os.path.exists(path):
      raise FileNotFoundError(f"the vocabulary of {self.flag}={self.path}, {path}"
                              + ("" if given else f" (from its {RECORD})") + ", is missing")
    tokenizer = FullTokenizer(vocab_file=vocab_file, spm_model_file=spm_model_file,
                              do_lower_case=self.do_lower_case)
    tokenizer.check_fits(self.config.vocab_size, f"{self.flag}={self.path}")
    return tokenizer

  # -- its weights

  @property
  def checkpoint(self) -> str:
    """model.ckpt-best, else the latest checkpoint."""
    found = checkpoint_of(self.path)
    if not found:
      raise ValueError(f"{self.flag}={self.path} holds no checkpoint ({BEST_PREFIX} or "
                       "another): train it first")
    return found

  def kept(self, name: str, write: Callable[[str], None], *settings) -> str:
    """`<run>/<name>`: what is made from the run's weights (`checkpoint`) with `settings`
    and kept beside it (a serving export, an ONNX file); see `made_once`."""
    return made_once(self.path, name, self.checkpoint, write, *settings)

  def own_checkpoint(self) -> str:
    """`checkpoint` in albert_tf's own layout: itself, or, for a run fine-tuned over an
    encoder SavedModel, its weights read into albert_tf's encoder (`model`) and kept as
    `own/model.ckpt` (what another run starts from, at any depth)."""
    if not self.hub:
      return self.checkpoint

    def write(path):
      os.makedirs(path, exist_ok=True)
      tf.train.Checkpoint(**self.model().checkpoint_items).write(os.path.join(path, "model.ckpt"))
    return os.path.join(self.kept("own", write), "model.ckpt")

  def best_step(self) -> Optional[int]:
    return best_step(self.path)

  def model(self, encoder=None):
    """The task's model with the run's weights (`checkpoint`), over albert_tf's own
    AlbertEncoder (a run fine-tuned from an encoder SavedModel is read over the SavedModel,
    then copied into one); `encoder`: read into this one instead."""
    kind, checkpoint = self.kind, self.checkpoint
    if self.hub and encoder is None:
      import tensorflow_hub as hub  # pylint: disable=g-import-not-at-top
      over_hub = kind.build(hub.KerasLayer(self.hub, trainable=True, name="albert_hub"), self)
      _read(over_hub, checkpoint)
      native = kind.build(AlbertEncoder(self.config), self)
      encoder_variables = exported_encoder_variables(AlbertPretrainer(native.encoder))
      pairs = list(zip(over_hub.encoder.variables, encoder_variables))
      for name, item in over_hub.checkpoint_items.items():
        if name != "encoder":
          pairs += list(zip(item.variables, native.checkpoint_items[name].variables))
      for source, target in pairs:
        if source.shape != target.shape:
          raise ValueError(f"the TF-Hub encoder's {source.name} {source.shape} does not fit "
                           f"{target.name} {target.shape}")
        target.assign(source)
      return native
    model = kind.build(encoder if encoder is not None else AlbertEncoder(self.config), self)
    _read(model, checkpoint)
    return model

  def lite_module(self, seq_length: Optional[int] = None,
                  tokenizer: Optional[FullTokenizer] = None):
    """The TFLite module of the run's model (`Kind.lite`), packing `seq_length` tokens
    (default the run's) with `tokenizer` (default the run's, read now)."""
    if self.kind.lite is None:
      raise ValueError(f"{self.flag}={self.path} holds a {self.task} run, which has no "
                       "TFLite signature")
    return self.kind.lite(self.model(), self, seq_length or self.max_seq_length,
                          tokenizer or self.tokenizer())


  # -- what it answers with

  def answering(self, runtime: str = "tensorflow", dtype: str = "float32",
                quantization: str = "none", load_model: bool = True) -> Answering:
    """Everything the run answers new text with, in one piece (`albert_tf.predictor`): its
    model under `runtime` in `dtype` (either may be `AUTO`: `forward_of`), or its kind's
    own graph; its tokenizer, fields, problem, thresholds and recorded settings (windows,
    strides). `load_model=False`: all but the model."""
    kind, tokenizer = self.kind, self.tokenizer()
    forward = strings = None
    if load_model and kind.graph is not None:
      why = f"{self.path} is a {kind.script} run, which answers through its own TensorFlow graph"
      if runtime == "onnxruntime":
        raise ValueError(f"{self.flag}={why}; --runtime=onnxruntime serves classifiers, SQuAD "
                         "and RACE runs")
      for flag, value, taken in (("runtime", runtime, "tensorflow"), ("dtype", dtype, "float32")):
        if value == runtimes.AUTO:
          print(f"--{flag}=auto: {taken} ({why})")
      from albert_tf.export.tf_hub import compute_dtype  # pylint: disable=g-import-not-at-top
      with compute_dtype("float32" if dtype == runtimes.AUTO else dtype):
        strings = kind.graph(self, self.model(), tokenizer)
    elif load_model:
      forward = self.forward_of(runtime, dtype, quantization)
    return Answering(kind.answered_as, self.fields, tokenizer, self.path, self.settings,
                     forward, strings, self.problem, self.max_seq_length, self.version_2,
                     self.legacy_inputs if kind.fields is None else [],
                     self.multi_label_threshold)

  def forward_of(self, runtime: str, dtype: str, quantization: str = "none"
                 ) -> runtimes.Forward:
    """The run's model under `runtime` in `dtype`. With `AUTO` in either: the pair
    (`runtimes.candidates`) `<run>/onnx/runtime.json` records for this CPU, these weights
    and these candidates, or, when it records none, every candidate timed on the first
    batch and the one `runtimes.choose` takes kept and recorded (`runtimes.measured_choice`)."""
    if quantization != "none":      # (int8 is ONNX Runtime's, and never auto's to take)
      runtime, dtype = "onnxruntime", "float32"
    pairs = runtimes.candidates(runtime, dtype)
    flag = " ".join(f"--{f}=auto" for f, v in (("runtime", runtime), ("dtype", dtype))
                    if v == runtimes.AUTO)
    if len(pairs) == 1:
      return self._forward(pairs[0], quantization)
    path, key = self._runtime_record(pairs)
    recorded = runtimes.recorded_choice(path, key, flag)
    if recorded:
      return self._forward(recorded)
    return runtimes.measured_choice({p: self._forward(p) for p in pairs}, path, key,
                                    self.agreement(), flag)

  def _forward(self, pair: str, quantization: str = "none") -> runtimes.Forward:
    runtime, dtype = pair.split("/")
    if runtime == "onnxruntime":
      return runtimes.onnx_forward(self.onnx_file(quantization))
    from albert_tf.export.tf_hub import compute_dtype  # pylint: disable=g-import-not-at-top
    with compute_dtype(dtype):
      return runtimes.tensorflow_forward(self.model())

  def agreement(self) -> runtimes.Agreement:
    """Whether a candidate's outputs give the float32 answers: a classifier's labels (its
    problem's, at the run's thresholds), else every span's and choice's argmax."""
    problem, threshold = self.problem, self.multi_label_threshold
    if problem is None:
      return runtimes.same_argmax
    return lambda reference, outputs: problem.same_answers(
        reference["logits"], outputs["logits"], 0.5 if threshold is None else threshold)

  def _runtime_record(self, pairs: Sequence[str]):
    """(where `auto` records its choice, what the choice holds for: this CPU, these
    weights, these candidates)."""
    return (os.path.join(self.path, "onnx", "runtime.json"),
            dict(host=runtimes.host_kind(), weights=weights_fingerprint(self.checkpoint),
                 candidates=list(pairs)))

  def recorded_pair(self, runtime: str, dtype: str) -> Optional[str]:
    """The pair `auto` chose among `runtime` and `dtype`'s candidates for these weights on
    this kind of CPU, or None when it has not measured them here."""
    return runtimes.recorded_choice(*self._runtime_record(runtimes.candidates(runtime, dtype)))

  def onnx_file(self, quantization: str = "none") -> str:
    """The run's ONNX export in `<run>/onnx/` (float32 or dynamic int8), kept beside the
    run (`kept`): written now if it is missing or was made from other weights."""
    from albert_tf.export.onnx import write_onnx  # pylint: disable=g-import-not-at-top
    name = "onnx/predict-int8.onnx" if quantization == "dynamic_int8" else "onnx/predict.onnx"
    return self.kept(name, lambda path: write_onnx(
        self.model(), path, self.tokenizer(), quantization,
        self.labels if self.problem else None, overwrite=True,
        extra=self.export_metadata()), quantization, self.multi_label_threshold)

  def serving_export(self) -> str:
    """The run's raw-text serving export (`<run>/serving`, kept beside the run) if its kind
    has one (made again when its thresholds are tuned), else the run's own directory."""
    if self.kind.serving is None:
      return self.path
    return self.kept(SERVING, lambda path: self.kind.serving(self, self.model(), path,
                                                             dict(output_dir=self.path)),
                     self.multi_label_threshold)


def answering_at(path: str, flag: str = "--model", runtime: str = "tensorflow",
                 dtype: str = "float32", quantization: str = "none",
                 load_model: bool = True) -> Answering:
  """What the run directory, or albert_tf serving export, in `path` answers with
  (`Run.answering`, `serving_answering`); errors name `flag`. A serving export runs as
  it was saved (TensorFlow, float32)."""
  if Run.exists(path):
    return Run.read(path, flag, kinds=answering()).answering(runtime, dtype, quantization,
                                                             load_model)
  served = serving_answering(path, flag, runtime, dtype, load_model)
  if served is not None:
    return served
  raise ValueError(f"{flag}={path} is neither a run directory (no {RECORD}) nor an "
                   "albert_tf serving export (saved_model.pb with albert_tf_export.json)")


def _read(model, checkpoint: str) -> None:
  """Reads `checkpoint` into `model`; every object the model has must be there."""
  with reading_checkpoint(checkpoint):
    status = tf.train.Checkpoint(**model.checkpoint_items).read(checkpoint)
    try:
      status.assert_existing_objects_matched()
    except AssertionError as e:
      raise ValueError(f"{checkpoint} does not match its {RECORD}: {e}") from None
    status.expect_partial()


def made_once(run_dir: str, target: str, weights: str, write: Callable[[str], None],
              *settings) -> str:
  """The one cache of what is made from a run: `target` (a name inside `run_dir`, or any
  path, such as a task's --export_dir) made from `weights` with `settings` by
  `write(path)`, now if it is missing or was made from other weights (a later best
  checkpoint) or settings, else kept. What each target was made from is recorded in
  `<run_dir>/made_from.json`. Returns the target's path."""
  path = os.path.abspath(os.path.join(run_dir, target))
  inside = os.path.commonpath([path, os.path.abspath(run_dir)]) == os.path.abspath(run_dir)
  key = os.path.relpath(path, run_dir) if inside else path
  made_from = weights_fingerprint(weights, *settings)
  record = os.path.join(run_dir, MADE_FROM)
  try:
    with open(record, encoding="utf-8") as f:
      made = json.load(f)
  except (OSError, ValueError):
    made = {}
  if made.get(key) == made_from and os.path.exists(path):
    return path
  print(f"Writing {path} from {weights} (once; kept for later runs)")
  write(path)
  write_json(record, dict(made, **{key: made_from}), indent=2, sort_keys=True)
  return path


def weights_fingerprint(checkpoint: str, *settings) -> str:
  """What an export of `checkpoint` made with `settings` was made from: the checkpoint's
  index (its tensors' checksums) and the settings. An export whose record holds another
  was made from other weights (the tasks' --export_dir, predict.py's ONNX and serving
  exports in a run directory)."""
  files = [checkpoint + ".index"] if tf.io.gfile.exists(checkpoint + ".index") else []
  return fingerprint(checkpoint, *settings, files=files)


def read_record(output_dir: str) -> dict:
  """What an earlier run in `output_dir` recorded (its run_config.json), or {}."""
  path = os.path.join(output_dir, RECORD)
  if not os.path.exists(path):
    return {}
  with open(path, encoding="utf-8") as f:
    return json.load(f)


def earlier_settings(output_dir: str, settings: type) -> Settings:
  """The `settings` (a `Settings` class) an earlier run in `output_dir` recorded, their
  defaults where it recorded none."""
  return settings.of_record(read_record(output_dir))


def earlier(output_dir: str) -> Optional[Run]:
  """The run an earlier invocation recorded in `output_dir` (a task resuming, evaluating
  or exporting it), unchecked; None when there is none."""
  record = read_record(output_dir)
  return Run(os.path.abspath(output_dir), record, "--output_dir") if record else None


def checkpoint_of(output_dir: str) -> Optional[str]:
  """The checkpoint a run's inference reads: model.ckpt-best, else the latest, else None."""
  best = os.path.join(output_dir, BEST_PREFIX)
  if tf.io.gfile.exists(best + ".index"):
    return best
  latest = tf.train.latest_checkpoint(output_dir)
  return latest if latest and tf.io.gfile.exists(latest + ".index") else None


def best_step(output_dir: str) -> Optional[int]:
  """The step of model.ckpt-best (best_trial.txt), or None before any."""
  path = os.path.join(output_dir, BEST_TRIAL)
  if not os.path.exists(path):
    return None
  with open(path, encoding="utf-8") as f:
    return int(f.readline().split("=")[1])


# ----------------------------------------------------------------------------- writing

def write_best_trial(output_dir: str, step: int, metric: str, value: float) -> None:
  """Records which step model.ckpt-best holds, and its dev metric."""
  with atomic_open(os.path.join(output_dir, BEST_TRIAL)) as f:
    f.write(f"global_step = {step}\n{metric} = {value}\n")


def write_labels(output_dir: str, labels: List[str]) -> None:
  """labels.txt: the label names in id order, one per line."""
  with atomic_open(os.path.join(output_dir, LABELS)) as f:
    f.write("\n".join(labels) + "\n")


def write_thresholds(output_dir: str, labels: List[str], thresholds: Tuple[float, ...]) -> str:
  """thresholds.txt: each label and its tuned threshold, in id order, tab-separated."""
  path = os.path.join(output_dir, THRESHOLDS)
  with atomic_open(path) as f:
    # (each float as Python writes it back exactly: predict.py reads the run's own values)
    f.write("".join(f"{label}\t{float(t)!r}\n" for label, t in zip(labels, thresholds)))
  return path


def remove_thresholds(output_dir: str) -> Optional[str]:
  """Removes thresholds.txt (a run that trains again without tuning: they were tuned for
  other weights); returns its path if there was one."""
  path = os.path.join(output_dir, THRESHOLDS)
  if not tf.io.gfile.exists(path):
    return None
  tf.io.gfile.remove(path)
  return path


def read_thresholds(output_dir: str, labels: List[str]) -> Optional[Tuple[float, ...]]:
  """The tuned thresholds of thresholds.txt, in `labels`' order, or None without one; an
  error names the file and line."""
  path = os.path.join(output_dir, THRESHOLDS)
  if not tf.io.gfile.exists(path):
    return None
  with tf.io.gfile.GFile(path) as f:
    lines = [line.rstrip("\n") for line in f]
  found = {}
  for n, line in enumerate(lines, 1):
    if not line.strip():
      continue
    name, _, value = line.rpartition("\t")
    try:
      t = float(value)
    except ValueError:
      t = float("nan")
    if not name or not 0 < t < 1:
      raise ValueError(f"{path}:{n}: expected a label, a tab and a threshold in (0, 1), "
                       f"got {line!r}")
    found[name] = t
  if sorted(found) != sorted(labels):
    raise ValueError(f"{path}: its labels ({', '.join(found)}) are not the run's "
                     f"({', '.join(labels)})")
  return tuple(found[label] for label in labels)


def write_run(output_dir: str, record: dict, model=None) -> str:
  """A run directory made outside a training script (tests, benchmarks, a model trained
  by other means): `record` (task, model config, vocabulary, max_seq_length, ...) and,
  given `model`, its weights as model.ckpt-best. Returns the directory."""
  os.makedirs(output_dir, exist_ok=True)
  if model is not None:
    tf.train.Checkpoint(**model.checkpoint_items).write(os.path.join(output_dir, BEST_PREFIX))
  write_json(os.path.join(output_dir, RECORD), record, indent=2, sort_keys=True)
  return output_dir


def training_settings(opts) -> Dict[str, object]:
  """The values of `opts`' fields marked `training=` (the flags that shape training)."""
  return {f.name: getattr(opts, f.name) for f in dataclasses.fields(opts)
          if f.metadata.get("training")}


def _may_grow(opts) -> List[str]:
  return [f.name for f in dataclasses.fields(opts) if f.metadata.get("training") == "may grow"]


def _holds_work(output_dir: str) -> bool:
  """Whether `output_dir` holds checkpoints, logs or results (not only its record,
  its lock and cached features, which a corrected rerun may replace or rebuild)."""
  for name in os.listdir(output_dir):
    if name in (RECORD, LOCK_NAME, console.LOG_NAME) or ".tf_record" in name or \
        name.endswith(".jsonl"):
      continue
    return True
  return False


def claim(output_dir: str, record: dict, strategy=None, opts=None,
          data: Optional[Dict[str, str]] = None) -> None:
  """Locks `output_dir` for this process and records what the run is in its
  run_config.json; refuses a directory that holds another run, or (when `opts`
  trains) the same run with other training flags than it was trained with: only
  flags marked `training="may grow"` (the step count) may grow, to continue.

  A directory with nothing but an earlier record (a run stopped by an input error
  before training) is taken over. Only the chief of a multi-worker cluster claims.
  `data`: where the training data is ({flag: path}), recorded when `opts` trains and
  not compared (a resumed run may read a moved copy).
  """
  if strategy is not None and not is_chief(strategy):
    return
  created = not os.path.isdir(output_dir)
  lock_directory(output_dir)
  try:
    _claim(output_dir, record, opts, data)
    console.write_log(output_dir)   # (the run's own now: its log.txt)
  except Exception:
    unlock_directory(output_dir)
    if created and not os.listdir(output_dir):
      os.rmdir(output_dir)
    raise


def _claim(output_dir: str, record: dict, opts, data: Optional[Dict[str, str]]) -> None:
  path = os.path.join(output_dir, RECORD)
  record = json.loads(json.dumps(record, sort_keys=True))
  trains = opts is not None and getattr(opts, "do_train", False)
  training = json.loads(json.dumps(training_settings(opts))) if trains else None
  data = {k: os.path.abspath(v) for k, v in (data or {}).items() if v} if trains else None
  if not os.path.exists(path):
    if any(name != LOCK_NAME for name in os.listdir(output_dir)):
      raise ValueError(f"--output_dir={output_dir} exists and is not empty (and is not an "
                       "albert_tf run); use a new --output_dir")
    write_json(path, dict(record, training=training, **({DATA: data} if data else {})),
               indent=2, sort_keys=True)
    return
  previous = read_record(output_dir)
  trained = previous.pop("training", None)
  had = previous.pop(DATA, None)
  data = data or had
  if previous != record:
    changed = sorted(k for k in set(previous) | set(record) if previous.get(k) != record.get(k))
    if _holds_work(output_dir):
      raise ValueError(f"--output_dir={output_dir} holds another run ({path} differs in: "
                       f"{', '.join(changed)}); use a new --output_dir, or the same flags "
                       "to resume")
    print(f"Replacing the record of a run that never started in {output_dir} "
          f"(it differed in: {', '.join(changed)})")
    trained = None
  if training is None:
    training = trained
  elif trained is not None and tf.train.latest_checkpoint(output_dir):
    grow = _may_grow(opts)
    changed = [k for k in sorted(set(trained) | set(training)) if trained.get(k) != training.get(k)
               and not (k in grow and trained.get(k) is not None
                        and training.get(k) is not None and training[k] >= trained[k])]
    if changed:
      raise ValueError(
          f"--output_dir={output_dir} was trained with other flags: "
          + "; ".join(f"--{k}={trained.get(k)} then, --{k}={training.get(k)} now" for k in changed)
          + ". Resume with the same flags (" + ", ".join(f"--{k}" for k in grow)
          + " may grow), or use a new --output_dir")
  if (dict(record, training=training), data) != (dict(previous, training=trained), had):
    write_json(path, dict(record, training=training, **({DATA: data} if data else {})),
               indent=2, sort_keys=True)
