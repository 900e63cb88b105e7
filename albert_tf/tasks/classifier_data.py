"""What a run_classifier.py run reads: a GLUE task (a preset) or your own files.

Both are the same thing to `albert_tf.tasks.classification.ClassifierRun`: rows of one or
two texts with a label (`albert_tf.data.own.Row`), a problem (`albert_tf.problems`), the
metrics a dev split is scored by, and where test predictions go. What a GLUE task presets:

| | GLUE task (`--task_name`, `--data_dir`) | your own files (`--train_file`, ...) |
|---|---|---|
| columns | the task's TSV positions (`glue.TASKS`) | `--text_columns`, `--label_column` |
| problem | single-label, STS-B a regression | decided from the labels, or `--problem_type` |
| metrics | the task's GLUE metrics | the problem's, `--best_metric` |
| dev / test | `dev*.tsv` / `test*.tsv` (MNLI has two) | `--dev_file` / `--test_file` |
| predictions | GLUE submission files `<TASK>.tsv` | `test_predictions.jsonl`, one object per row |

Your own files are CSV, TSV or JSON Lines (`albert_tf.data.own`); their problem is decided
from the training labels or given by --problem_type, printed, and recorded in the run (with
its labels, in `labels.txt` too) so that a resumed or predicting run uses the same. The dev
picture (`best_checkpoint.png`: the confusion matrix, each label's F1, or predicted against
true scores) is drawn for them.
"""

import json
import os
from typing import Callable, Dict, Iterable, Iterator, List, Optional

import numpy as np

from albert_tf import problems, runs
from albert_tf.data import glue, own
from albert_tf.files import atomic_open, fingerprint
from albert_tf.training import metrics as metrics_lib

PREDICTIONS = "test_predictions.jsonl"
PICTURE = "best_checkpoint.png"
Rows = Callable[[], Iterator[own.Row]]    # a split's rows, read anew at each call
_SPLIT_FLAGS = dict(train="--train_file", dev="--dev_file", test="--test_file")


class Examples:
  """The rows a classification run reads, and what is specific to where they come from."""
  name: str                     # the run record's task: a GLUE task's name, or "classification"
  problem: problems.Problem
  best_metric: str
  pairs: bool                   # sentence pairs (two text inputs)
  inputs: tuple                 # the text inputs' names (albert_tf.runs.Run.text_inputs)
  loss_weights: Optional[tuple] = None   # --class_weight / --pos_weight's, once computed
  # The training file's rows and each label's rows [C], when deciding the problem read them
  # (your own files; None for a GLUE task, whose problem is preset).
  train_rows: Optional[int] = None
  train_counts: Optional[np.ndarray] = None
  long_text: dict = {}    # --long_text=windows: it, --doc_stride, --window_pooling, --max_windows
  dev_splits: List[str]
  test_splits: List[str]
  picture: bool = False         # draw best_checkpoint.png

  def sources(self, opts, splits: List[str]) -> Dict[str, Rows]:
    """Each split's rows, read anew at each call, one at a time (memory holds a row,
    whatever the file's size); a missing file fails here. Decides the problem."""
    raise NotImplementedError

  def path(self, opts, split: str) -> str:
    """The file a split is read from (named in errors)."""
    raise NotImplementedError

  def write_labels(self, output_dir: str) -> None:
    """Writes what a run keeps of its labels beside its record."""

  def features_key(self, opts, tokenizer, split: str) -> str:
    """The cached features' file name (without extension) for `split`: a fingerprint of
    every input that changes them."""
    raise NotImplementedError

  def metrics(self, targets: np.ndarray, logits: np.ndarray, threshold: float
              ) -> Dict[str, object]:
    raise NotImplementedError

  def baseline(self, train: np.ndarray, dev: np.ndarray, threshold: float) -> Dict[str, float]:
    """Dev metrics of a model that ignores the text, keyed as eval_results.txt shows them."""
    raise NotImplementedError

  def write_predictions(self, output_dir: str, split: str, rows: Iterable[own.Row],
                        logits: np.ndarray, threshold: float) -> str:
    """Writes the predictions of a test split; returns the file."""
    raise NotImplementedError

  def record(self) -> runs.Settings:
    """The settings the run record keeps (`albert_tf.runs`)."""
    return runs.Settings()


# ----------------------------------------------------------------------------- GLUE

class GlueFiles(Examples):
  """A GLUE task's files: its columns, problem and metrics are the task's preset."""

  def __init__(self, opts):
    if not (opts.task_name and opts.data_dir):
      raise ValueError("pass --task_name and --data_dir (a GLUE task), or your own files: "
                       "--train_file, --dev_file, --test_file")
    self.task = task = glue.get_task(opts.task_name)
    if opts.do_train and "train" not in task.splits:
      raise ValueError(f"{task.name} has no training data; predict it with the model of "
                       "another task (AX: an MNLI model via --init_checkpoint)")
    if opts.do_eval and not task.dev_splits:
      raise ValueError(f"{task.name} has no dev split to evaluate")
    self.name, self.best_metric = task.name, task.best_metric
    self.problem = problems.Problem.of_glue(task)
    self.pairs = any(s.text_b is not None for s in task.splits.values())
    self.inputs = task.inputs
    self.dev_splits, self.test_splits = task.dev_splits, task.test_splits

  def sources(self, opts, splits):
    return {split: self._source(opts, split) for split in splits}

  def _source(self, opts, split) -> Rows:
    self.path(opts, split)                                   # (a missing file: at once)
    reported = []

    def rows():
      examples = glue.iter_examples(opts.data_dir, self.task, split, opts.skip_malformed_rows,
                                    report=not reported)
      reported.append(True)          # ("Skipped N malformed rows": on the first read only)
      return (own.Row([e.text_a] + ([e.text_b] if e.text_b is not None else []), e.label, i,
                      e.guid, e.line) for i, e in enumerate(examples))
    return rows

  def path(self, opts, split):
    return glue.split_path(opts.data_dir, self.task, split)

  def features_key(self, opts, tokenizer, split):
    key = fingerprint(tokenizer.do_lower_case, opts.max_seq_length, self.task.name,
                      opts.skip_malformed_rows,
                      files=[self.path(opts, split),
                             tokenizer.vocabulary_file])
    return f"{self.task.name.lower()}_{split}_{key}"

  def metrics(self, targets, logits, threshold):
    return metrics_lib.glue_metrics(self.task.metrics, targets, self.problem.predictions(logits),
                                    self.problem.mean_loss(targets, logits))

  def baseline(self, train, dev, threshold):
    """The problem's baseline (the training set's most common label, or its mean score),
    named as the original's GLUE results were."""
    return {f"majority_baseline_{k}": v
            for k, v in self.problem.baseline(train, dev, threshold).items()}

  def write_predictions(self, output_dir, split, rows, logits, threshold):
    """A GLUE submission file, `<TASK>.tsv`: `index` and `prediction` (label strings)."""
    path = os.path.join(output_dir, self.task.submission[split] + ".tsv")
    with atomic_open(path) as f:
      f.write("index\tprediction\n")
      for row, out in zip(rows, logits):
        f.write(f"{row.id}\t{self.problem.submission(out)}\n")
    return path


# ----------------------------------------------------------------------------- your own files

class OwnFiles(Examples):
  """Your own CSV, TSV or JSON Lines files (`albert_tf.data.own`)."""
  name = "classification"   # the record's task: albert_tf.runs' classification kind
  picture = True
  test_splits = ["test"]

  def __init__(self, opts):
    glue_flags = [f"--{k}={getattr(opts, k)}" for k in ("task_name", "data_dir")
                  if getattr(opts, k)]
    if glue_flags:
      files = [f"--{k}={getattr(opts, k)}" for k in ("train_file", "dev_file", "test_file")
               if getattr(opts, k)]
      raise ValueError(f"pass either a GLUE task ({', '.join(glue_flags)}) or your own files "
                       f"({', '.join(files)}), not both")
    for needed, split in ((opts.do_train, "train"), (opts.do_eval, "dev"),
                          (opts.do_predict, "test")):
      if needed and not getattr(opts, f"{split}_file"):
        flag = {"train": "--do_train", "dev": "--do_eval", "test": "--do_predict"}[split]
        raise ValueError(f"{flag} needs {_SPLIT_FLAGS[split]}")
    text_columns = [c.strip() for c in opts.text_columns.split(",")]
    if len(text_columns) not in (1, 2) or not all(text_columns):
      raise ValueError(f"--text_columns={opts.text_columns}: one column (a text) or two, "
                       "comma-separated (a sentence pair)")
    self.columns = own.Columns(tuple(text_columns), opts.label_column, opts.id_column,
                               opts.label_delimiter)
    self.pairs = len(text_columns) == 2
    self.inputs = tuple(text_columns)
    self.dev_splits = ["dev"] if opts.dev_file else []

  def sources(self, opts, splits):
    rows = {split: self._source(opts, split) for split in splits}
    if "train" in rows:
      self.problem, self.train_rows, self.train_counts = problems.survey(
          rows["train"](), opts.problem_type, opts.train_file)
    else:
      earlier = runs.earlier(opts.output_dir)
      if earlier is None or not earlier.settings.problem_type:
        raise ValueError(f"--output_dir={opts.output_dir} holds no run trained on your own files: "
                         "--do_eval or --do_predict without --do_train reads the problem and "
                         "the labels from it")
      self.problem = earlier.problem
    self.best_metric = opts.best_metric or self.problem.best_metric
    print(f"Problem: {self.problem.describe()} (--problem_type={opts.problem_type}); "
          f"best checkpoint by dev {self.best_metric}")
    names = self.problem.metric_names()
    if self.best_metric not in names:
      raise ValueError(f"--best_metric={self.best_metric} is not a metric of "
                       f"{self.problem.type}; choose one of {', '.join(names)}")
    return rows

  def path(self, opts, split):
    return getattr(opts, f"{split}_file")

  def _source(self, opts, split) -> Rows:
    path, flag = self.path(opts, split), _SPLIT_FLAGS[split]
    own.iter_rows(path, self.columns, flag)                  # (a missing file: at once)
    return lambda: own.iter_rows(path, self.columns, flag, need_labels=split != "test")

  def write_labels(self, output_dir):
    """labels.txt, the labels in id order."""
    if self.problem.labels:
      runs.write_labels(output_dir, self.problem.labels)

  def features_key(self, opts, tokenizer, split):
    key = fingerprint(tokenizer.do_lower_case, opts.max_seq_length, self.problem.type,
                      *((sorted(self.long_text.items()),) if self.long_text else ()),
                      self.problem.labels, list(self.columns.text), self.columns.label,
                      self.columns.label_delimiter,
                      files=[self.path(opts, split), tokenizer.vocabulary_file])
    return f"own_{split}_{key}"

  def metrics(self, targets, logits, threshold):
    return self.problem.metrics(targets, logits, threshold)

  def baseline(self, train, dev, threshold):
    return {f"baseline_{k}": v for k, v in self.problem.baseline(train, dev, threshold).items()}

  def write_predictions(self, output_dir, split, rows, logits, threshold):
    """test_predictions.jsonl: one object per test row, in order."""
    path = os.path.join(output_dir, PREDICTIONS)
    with atomic_open(path, encoding="utf-8") as f:
      for row, out in zip(rows, logits):
        f.write(json.dumps(prediction(self.problem, row, out, threshold), ensure_ascii=False)
                + "\n")
    return path

  def record(self):
    weights = tuple(self.loss_weights or ())
    multi = self.problem.type == problems.MULTI
    return runs.ClassifierSettings(self.problem.type, tuple(self.problem.labels),
                                   tuple(self.columns.text), self.columns.label,
                                   self.columns.label_delimiter,
                                   class_weight=() if multi else weights,
                                   pos_weight=weights if multi else (),
                                   **self.long_text)


def prediction(problem: problems.Problem, row: own.Row, logits: np.ndarray,
               threshold: float) -> dict:
  """One test row's object: `index`, `id` if given, then the problem's answer."""
  out = dict(index=row.index)
  if row.id is not None:
    out["id"] = row.id
  out.update(problem.answer(logits, threshold))
  return out


def examples_of(opts) -> Examples:
  """Your own files when any of --train_file, --dev_file, --test_file is given, else a GLUE
  task."""
  if opts.train_file or opts.dev_file or opts.test_file:
    return OwnFiles(opts)
  return GlueFiles(opts)

