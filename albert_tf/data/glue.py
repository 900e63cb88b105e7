"""GLUE: the task files as the GLUE download lays them out -> examples.

(The features and the training data are those of every classification run:
`albert_tf.tasks.classification`.)

Each task is a table of where its columns are (the positions the original
processors read) rather than a class per task. `--data_dir` may be a task's
directory (`glue_data/MRPC`) or the GLUE root (`glue_data`, as the original
run_glue.sh passed), in which case the task's directory inside it is used.
Every row must have as many fields as the file's header (CoLA's train and dev
files have no header and 4 fields); a row that does not, or whose label is
not one of the task's, raises an error naming the file and line.
"""

import csv
import dataclasses
import os
import sys
from typing import Dict, Iterator, List, Optional, Tuple

from absl import logging

from albert_tf.files import text_lines

csv.field_size_limit(sys.maxsize)


@dataclasses.dataclass(frozen=True)
class Split:
  """Where one file's fields are: text_a, text_b (None: one sentence), label (None: test)."""
  filename: str
  text_a: int
  text_b: Optional[int] = None
  label: Optional[int] = None
  index: Optional[int] = None          # the id column of test files (GLUE submission index)
  header: bool = True
  num_fields: Optional[int] = None     # required when there is no header


@dataclasses.dataclass(frozen=True)
class GlueTask:
  """A GLUE task: its label strings (None: regression), files and metrics."""
  name: str                            # as GLUE spells it (submission file name prefix)
  directory: str                       # its directory in the GLUE download
  labels: Optional[Tuple[str, ...]]
  splits: Dict[str, Split]
  metrics: Tuple[str, ...] = ("accuracy",)
  submission: Dict[str, str] = dataclasses.field(default_factory=dict)  # test split -> file stem
  # The text inputs' names, as the GLUE files' headers (and the GLUE datasets' fields) name
  # them: what every door of a run of the task calls them (`albert_tf.runs.Run.text_inputs`).
  inputs: Tuple[str, ...] = ("sentence1", "sentence2")

  @property
  def is_regression(self) -> bool:
    return self.labels is None

  @property
  def num_labels(self) -> int:
    return 1 if self.labels is None else len(self.labels)

  @property
  def best_metric(self) -> str:
    """The dev metric that picks model.ckpt-best (the task's GLUE headline metric)."""
    for name in ("matthews_corrcoef", "pearson"):
      if name in self.metrics:
        return name
    return "accuracy"

  @property
  def dev_splits(self) -> List[str]:
    return [s for s in self.splits if s.startswith("dev")]

  @property
  def test_splits(self) -> List[str]:
    return [s for s in self.splits if s.startswith("test")]


_MNLI = ("contradiction", "entailment", "neutral")
_NLI = ("entailment", "not_entailment")
_BINARY = ("0", "1")


def _pair(a, b, label):
  """train.tsv and dev.tsv of a sentence-pair task."""
  return dict(train=Split("train.tsv", a, b, label), dev=Split("dev.tsv", a, b, label))


TASKS: Dict[str, GlueTask] = {t.name.lower(): t for t in (
    GlueTask("CoLA", "CoLA", _BINARY, dict(
        train=Split("train.tsv", 3, label=1, header=False, num_fields=4),
        dev=Split("dev.tsv", 3, label=1, header=False, num_fields=4),
        test=Split("test.tsv", 1, index=0)),
        metrics=("accuracy", "matthews_corrcoef"), submission=dict(test="CoLA"),
        inputs=("sentence",)),
    GlueTask("MNLI", "MNLI", _MNLI, dict(
        train=Split("train.tsv", 8, 9, -1),
        dev=Split("dev_matched.tsv", 8, 9, -1),
        dev_mismatched=Split("dev_mismatched.tsv", 8, 9, -1),
        test=Split("test_matched.tsv", 8, 9, index=0),
        test_mismatched=Split("test_mismatched.tsv", 8, 9, index=0)),
        submission=dict(test="MNLI-m", test_mismatched="MNLI-mm")),
    GlueTask("MRPC", "MRPC", _BINARY, dict(
        **_pair(3, 4, 0), test=Split("test.tsv", 3, 4, index=0)),
        metrics=("accuracy", "f1"), submission=dict(test="MRPC")),
    GlueTask("QNLI", "QNLI", _NLI, dict(
        **_pair(1, 2, 3), test=Split("test.tsv", 1, 2, index=0)), submission=dict(test="QNLI"),
        inputs=("question", "sentence")),
    GlueTask("QQP", "QQP", _BINARY, dict(
        **_pair(3, 4, 5), test=Split("test.tsv", 1, 2, index=0)),
        metrics=("accuracy", "f1"), submission=dict(test="QQP"),
        inputs=("question1", "question2")),
    GlueTask("RTE", "RTE", _NLI, dict(
        **_pair(1, 2, 3), test=Split("test.tsv", 1, 2, index=0)), submission=dict(test="RTE")),
    GlueTask("SST-2", "SST-2", _BINARY, dict(
        train=Split("train.tsv", 0, label=1), dev=Split("dev.tsv", 0, label=1),
        test=Split("test.tsv", 1, index=0)), submission=dict(test="SST-2"),
        inputs=("sentence",)),
    GlueTask("STS-B", "STS-B", None, dict(
        **_pair(7, 8, -1), test=Split("test.tsv", 7, 8, index=0)),
        metrics=("pearson", "spearman"), submission=dict(test="STS-B")),
    GlueTask("WNLI", "WNLI", _BINARY, dict(
        **_pair(1, 2, 3), test=Split("test.tsv", 1, 2, index=0)), submission=dict(test="WNLI")),
    # The diagnostic set: test only, predicted with an MNLI model (MNLI's labels).
    GlueTask("AX", "diagnostic", _MNLI, dict(test=Split("diagnostic.tsv", 1, 2, index=0)),
             submission=dict(test="AX")),
)}


def get_task(name: str) -> GlueTask:
  """The task named `name` (case-insensitive: mrpc, MRPC, sst-2, ...)."""
  task = TASKS.get((name or "").lower())
  if task is None:
    raise ValueError(f"unknown --task_name={name!r}; known tasks: "
                     + ", ".join(t.name for t in TASKS.values()))
  return task


@dataclasses.dataclass
class InputExample:
  guid: str            # "<split>-<line>" for labelled splits, the file's index for test
  text_a: str
  text_b: Optional[str]
  label: Optional[str]  # None in test splits
  line: int = 0        # 1-based line in the file, for error messages


def task_dir(data_dir: str, task: GlueTask) -> str:
  """`data_dir` itself, or its subdirectory named as in the GLUE download."""
  inner = os.path.join(data_dir, task.directory)
  return inner if os.path.isdir(inner) else data_dir


def split_path(data_dir: str, task: GlueTask, split: str) -> str:
  if split not in task.splits:
    raise ValueError(f"{task.name} has no {split} split (it has: {', '.join(task.splits)})")
  path = os.path.join(task_dir(data_dir, task), task.splits[split].filename)
  if not os.path.exists(path):
    raise FileNotFoundError(f"{task.name} {split} file {path} not found (--data_dir={data_dir})")
  return path


def read_examples(data_dir: str, task: GlueTask, split: str,
                  skip_malformed_rows: bool = False) -> List[InputExample]:
  """`iter_examples`, in a list."""
  return list(iter_examples(data_dir, task, split, skip_malformed_rows))


def iter_examples(data_dir: str, task: GlueTask, split: str,
                  skip_malformed_rows: bool = False, report: bool = True
                  ) -> Iterator[InputExample]:
  """Reads one split a row at a time (a missing file fails at once); errors (file:line) on
  rows with the wrong field count or an unknown label.

  With `skip_malformed_rows`, rows with the wrong number of fields are
  skipped with a warning instead (the original skipped QQP's few broken rows), and
  counted at the end if `report`.
  """
  path = split_path(data_dir, task, split)
  return _examples(path, task, split, skip_malformed_rows, report)


def _kept_lines(lines: Iterator[str]) -> Iterator[str]:
  """`lines` without the blank ones at the end (editors and `echo >>` leave them); a blank
  line before another row is kept, and stays an error naming it."""
  blank = []
  for line in lines:
    if not line.strip(" \r\n"):
      blank.append(line)
      continue
    yield from blank
    blank = []
    yield line


def _examples(path: str, task: GlueTask, split: str, skip_malformed_rows: bool,
              report: bool) -> Iterator[InputExample]:
  spec = task.splits[split]
  found, skipped = 0, 0
  rows = csv.reader(_kept_lines(text_lines(path)), delimiter="\t", quotechar=None)
  want = spec.num_fields
  for line, row in enumerate(rows, start=1):
    if spec.header and line == 1:
      want = len(row)
      needed = max(abs(c) for c in (spec.text_a, spec.text_b, spec.label, spec.index)
                   if c is not None) + 1
      if want < needed:
        raise ValueError(f"{path}:1: the header has {want} columns; {task.name} {split} "
                         f"files have at least {needed} (is this the right file?)")
      continue
    if len(row) != want:
      if skip_malformed_rows:
        skipped += 1
        if report:
          logging.warning("%s:%d: skipping a row with %d fields (expected %d)",
                          path, line, len(row), want)
        continue
      raise ValueError(f"{path}:{line}: expected {want} tab-separated fields, found {len(row)}"
                       + ("" if task.name != "QQP" else
                          " (pass --skip_malformed_rows to skip such rows as the original did)"))
    label = None
    if spec.label is not None:
      label = row[spec.label].strip()
      _check_label(task, label, path, line)
    guid = row[spec.index] if spec.index is not None else f"{split}-{line - 1}"
    found += 1
    yield InputExample(guid, row[spec.text_a], row[spec.text_b] if spec.text_b is not None
                       else None, label, line)
  if skipped and report:
    print(f"Skipped {skipped} malformed rows of {path}")
  if not found:
    raise ValueError(f"{path} holds no examples")


def _check_label(task: GlueTask, label: str, path: str, line: int) -> None:
  if task.is_regression:
    try:
      float(label)
    except ValueError:
      raise ValueError(f"{path}:{line}: {task.name} label {label!r} is not a number") from None
  elif label not in task.labels:
    raise ValueError(f"{path}:{line}: {task.name} label {label!r} is not one of "
                     f"{', '.join(task.labels)}")
