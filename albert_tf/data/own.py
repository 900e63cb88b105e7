"""Your own labelled files: CSV, TSV or JSON Lines, single-label, multi-label or regression.

A file is read by its extension: `.csv` and `.tsv` with the csv module (quoted fields,
newlines inside quotes and a UTF-8 byte-order mark all read as a spreadsheet wrote them),
`.jsonl` (or `.json` holding JSON Lines) one object per line. Each row gives one or two
texts (`text_columns`: one text, or a sentence pair), a label (`label_column`) and,
optionally, an id copied into the predictions (`id_column`). A file without the label
column is read for prediction only.

The problem type, with transformers' names, is given or decided from the training labels
(`decide_problem`): JSON list labels, or CSV/TSV cells split by `label_delimiter`, are
multi-label; numbers with a non-integer among them are regression; anything else is
single-label. The labels are kept in their natural order (numbers as numbers, else as
strings). Every bad input is one ValueError naming the file and line (or column).
"""

import csv
import dataclasses
import json
import os
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

SINGLE = "single_label_classification"
MULTI = "multi_label_classification"
REGRESSION = "regression"
PROBLEM_TYPES = ("auto", SINGLE, MULTI, REGRESSION)
FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl"}

Label = Union[str, float, List[str], None]


@dataclasses.dataclass
class Row:
  """One example: its texts (one or two), its label as the file gives it (a string, a
  number, a list of strings for multi-label, None when the file has no labels), its row
  number (from 0, in file order), its id (`id_column`'s value) and its line in the file."""
  texts: List[str]
  label: Label
  index: int
  id: Optional[str]
  line: int


@dataclasses.dataclass(frozen=True)
class Columns:
  """Which fields of a row are read."""
  text: Sequence[str] = ("text",)
  label: str = "label"
  id: Optional[str] = None
  label_delimiter: Optional[str] = None   # CSV/TSV: a cell of several labels, split by it


def file_format(path: str, flag: str = "") -> str:
  """csv, tsv or jsonl, from `path`'s extension."""
  extension = os.path.splitext(path)[1].lower()
  if extension not in FORMATS:
    raise ValueError(f"{flag + '=' if flag else ''}{path}: unknown format {extension or '(none)'}"
                     "; use .csv, .tsv, .jsonl (or .json holding JSON Lines)")
  return FORMATS[extension]


def read_rows(path: str, columns: Columns, flag: str = "", need_labels: bool = True
              ) -> List[Row]:
  """Every row of `path`; a file without `columns.label` gives labels None, which only
  `need_labels=False` (a test file, predicted) accepts."""
  if not os.path.isfile(path):
    raise FileNotFoundError(f"{flag + '=' if flag else ''}{path} not found")
  kind = file_format(path, flag)
  rows, has_labels = [], None
  for index, (line, record) in enumerate(records(path, flag)):
    missing = [c for c in list(columns.text) + ([columns.id] if columns.id else [])
               if c not in record]
    if missing:
      raise ValueError(f"{path}:{line}: no column {', '.join(map(repr, missing))}; the "
                       f"columns are {', '.join(map(repr, record))}")
    labelled = columns.label in record
    if has_labels is None:
      has_labels = labelled
      if not labelled and need_labels:
        raise ValueError(f"{path}:{line}: no label column {columns.label!r}; the columns are "
                         f"{', '.join(map(repr, record))} (--label_column names it)")
    elif labelled != has_labels:
      raise ValueError(f"{path}:{line}: " + ("has" if labelled else "lacks")
                       + f" the label column {columns.label!r}, unlike the rows before it")
    texts = []
    for c in columns.text:
      value = record[c]
      if not isinstance(value, str):
        raise ValueError(f"{path}:{line}: column {c!r} is {value!r}, not text")
      texts.append(value)
    label = _label(record[columns.label], columns, kind, path, line) if labelled else None
    rows.append(Row(texts, label, index, None if not columns.id else str(record[columns.id]),
                    line))
  if not rows:
    raise ValueError(f"{path}: no rows in it")
  return rows


def records(path: str, flag: str = "") -> Iterator[Tuple[int, dict]]:
  """(line number, {column: value}) of each row of a CSV, TSV or JSONL file (blank lines
  skipped); errors name `path:line`."""
  kind = file_format(path, flag)
  with open(path, encoding="utf-8-sig", newline="" if kind != "jsonl" else None) as f:
    if kind == "jsonl":
      for number, text in enumerate(f, 1):
        if text.strip():
          yield number, json_record(text, path, number)
    else:
      yield from delimited_records(f, path, kind)


def json_record(text: str, path: str, number: int) -> dict:
  """The object of one line of a .jsonl file; errors name `path:number`."""
  try:
    record = json.loads(text)
  except json.JSONDecodeError as e:
    raise ValueError(f"{path}:{number}: not JSON ({e.msg}); a .jsonl file holds one JSON "
                     "object per line") from None
  if not isinstance(record, dict):
    raise ValueError(f"{path}:{number}: a JSON {type(record).__name__}, not an object "
                     "with named fields")
  return record


def delimited_records(f, path: str, kind: str, errors: bool = False
                      ) -> Iterator[Tuple[int, dict]]:
  """(line number, {header: field}) of each row of an open CSV or TSV file with a header;
  `errors`: a malformed row gives (line number, its ValueError) and reading goes on."""
  reader = csv.reader(f, delimiter="\t" if kind == "tsv" else ",")
  header = next(reader, None)
  if header is None:
    return
  header_line = reader.line_num
  for fields in reader:
    line = reader.line_num     # the row's last physical line (a quoted field may span)
    if not any(fields):
      continue
    if len(fields) != len(header):
      error = ValueError(f"{path}:{line}: {len(fields)} fields, but the header (line "
                         f"{header_line}) has {len(header)}: {', '.join(map(repr, header))}")
      if not errors:
        raise error
      yield line, error
      continue
    yield line, dict(zip(header, fields))


def _label(value, columns: Columns, kind: str, path: str, line: int) -> Label:
  """The label as the file gives it: a list (multi-label), else a string or a number."""
  where = f"{path}:{line}"
  if isinstance(value, list):
    if not value or not all(isinstance(v, (str, int, float)) and not isinstance(v, bool)
                            and str(v).strip() for v in value):
      raise ValueError(f"{where}: label {value!r}: a multi-label list needs one or more "
                       "labels, each a string or number")
    return [_label_name(v) for v in value]
  if value is None or (isinstance(value, str) and not value.strip()):
    raise ValueError(f"{where}: empty label in column {columns.label!r}")
  if isinstance(value, bool) or not isinstance(value, (str, int, float)):
    raise ValueError(f"{where}: label {value!r} is neither text, a number nor a list")
  if kind != "jsonl" and columns.label_delimiter:
    parts = [p.strip() for p in value.split(columns.label_delimiter)]
    if any(not p for p in parts):
      raise ValueError(f"{where}: label {value!r} has an empty label between "
                       f"{columns.label_delimiter!r}")
    return parts
  return value if isinstance(value, (int, float)) else value.strip()


def _label_name(value) -> str:
  """A label as text: numbers without a needless ".0" (3 and 3.0 are both "3")."""
  if isinstance(value, str):
    return value
  return str(int(value)) if float(value).is_integer() else repr(float(value))


def _as_number(value) -> Optional[float]:
  try:
    return float(value)
  except (TypeError, ValueError):
    return None


# ----------------------------------------------------------------------------- the problem

@dataclasses.dataclass(frozen=True)
class Problem:
  """What is learned: the problem type and the labels (in id order; none for regression)."""
  type: str
  labels: List[str]

  @property
  def num_outputs(self) -> int:
    """The model's outputs: one per label, or one score."""
    return 1 if self.type == REGRESSION else len(self.labels)

  def describe(self) -> str:
    if self.type == REGRESSION:
      return "regression (one score)"
    shown = ", ".join(self.labels[:20]) + (", ..." if len(self.labels) > 20 else "")
    return f"{self.type}, {len(self.labels)} labels: {shown}"


def decide_problem(rows: Sequence[Row], problem_type: str = "auto",
                   path: str = "the training file") -> Problem:
  """The problem of the training rows: `problem_type`, or (auto) multi-label when the labels
  are lists, regression when they are all numbers and one is not an integer, else
  single-label. Labels are sorted naturally: numbers as numbers, else as strings."""
  if problem_type not in PROBLEM_TYPES:
    raise ValueError(f"--problem_type={problem_type}: choose one of {', '.join(PROBLEM_TYPES)}")
  lists = [isinstance(r.label, list) for r in rows]
  if any(lists) and not all(lists):
    mixed = rows[lists.index(not lists[0])]
    raise ValueError(f"{path}:{mixed.line}: label {mixed.label!r} is "
                     + ("a list" if isinstance(mixed.label, list) else "not a list")
                     + f", unlike line {rows[0].line}'s {rows[0].label!r}: list labels "
                     "(multi-label) and plain ones cannot be mixed")
  numbers = [_as_number(r.label) for r in rows] if not any(lists) else []
  if problem_type == "auto":
    if any(lists):
      problem_type = MULTI
    elif all(n is not None for n in numbers) and any(not n.is_integer() for n in numbers):
      problem_type = REGRESSION
    else:
      problem_type = SINGLE
  if problem_type == REGRESSION:
    for row, number in zip(rows, numbers or [None] * len(rows)):
      if number is None:
        raise ValueError(f"{path}:{row.line}: regression label {row.label!r} is not a number")
    return Problem(REGRESSION, [])
  if problem_type == MULTI:
    names = {name for r in rows for name in (r.label if isinstance(r.label, list)
                                             else [_label_name(r.label)])}
  else:
    if any(lists):
      row = rows[0]
      raise ValueError(f"{path}:{row.line}: label {row.label!r} is a list, but "
                       "--problem_type=single_label_classification takes one label a row")
    names = {_label_name(r.label) for r in rows}
  return Problem(problem_type, natural_order(names))


def natural_order(names) -> List[str]:
  """Numbers by value (as their text), else strings in sorted order."""
  names = list(names)
  if names and all(_as_number(n) is not None for n in names):
    return sorted(names, key=lambda n: (float(n), n))
  return sorted(names)


def targets(rows: Sequence[Row], problem: Problem, path: str = "") -> List:
  """Each row's training target: a label id (single-label), a multi-hot list (multi-label)
  or a float (regression). A label the problem lacks names its line."""
  if problem.type == REGRESSION:
    return [float(r.label) for r in rows]
  ids = {name: i for i, name in enumerate(problem.labels)}
  out = []
  for r in rows:
    names = r.label if isinstance(r.label, list) else [_label_name(r.label)]
    unknown = [n for n in names if n not in ids]
    if unknown:
      raise ValueError(f"{path}:{r.line}: label {', '.join(map(repr, unknown))} is not among "
                       f"the training labels ({', '.join(problem.labels[:20])}"
                       + (", ..." if len(problem.labels) > 20 else "") + ")")
    if problem.type == MULTI:
      hot = [0.0] * len(ids)
      for n in names:
        hot[ids[n]] = 1.0
      out.append(hot)
    else:
      if isinstance(r.label, list):
        raise ValueError(f"{path}:{r.line}: label {r.label!r} is a list, but the problem is "
                         "single-label")
      out.append(ids[names[0]])
  return out


def answer(problem: Problem, logits, threshold: float = 0.5) -> Dict[str, object]:
  """A classifier's answer for one example from its logits [C]: single-label `label` and
  `probabilities` (label -> softmax), multi-label `labels` (those over `threshold`) and
  `probabilities` (label -> sigmoid), regression `score`."""
  logits = np.asarray(logits, np.float64)
  if problem.type == REGRESSION:
    return dict(score=float(logits[0]))
  if problem.type == MULTI:
    return answer_of_probabilities(problem, 1 / (1 + np.exp(-logits)), threshold)
  p = np.exp(logits - logits.max())
  return answer_of_probabilities(problem, p / p.sum(), threshold)


def answer_of_probabilities(problem: Problem, probabilities, threshold: float = 0.5
                            ) -> Dict[str, object]:
  """`answer` from the probabilities [C] (softmax or sigmoids) or the score [1] a serving
  export returns."""
  p = np.asarray(probabilities, np.float64).reshape(-1)
  if problem.type == REGRESSION:
    return dict(score=float(p[0]))
  named = {name: float(value) for name, value in zip(problem.labels, p)}
  if problem.type == MULTI:
    return dict(labels=[name for name, value in zip(problem.labels, p) if value > threshold],
                probabilities=named)
  return dict(label=problem.labels[int(p.argmax())], probabilities=named)


def record(problem: Problem, columns: Columns) -> Dict[str, object]:
  """What a run records of its data, enforced on resume."""
  return dict(problem_type=problem.type, labels=problem.labels,
              text_columns=list(columns.text), label_column=columns.label,
              label_delimiter=columns.label_delimiter)
