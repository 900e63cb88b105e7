"""Your own labelled files: CSV, TSV or JSON Lines, single-label, multi-label or regression.

A file is read by its extension: `.csv` and `.tsv` with the csv module (quoted fields,
newlines inside quotes and a UTF-8 byte-order mark all read as a spreadsheet wrote them),
`.jsonl` (or `.json` holding JSON Lines) one object per line; texts without labels
(`iter_texts`) may also be `.txt`, one per line. Each row gives one or two
texts (`text_columns`: one text, or a sentence pair), a label (`label_column`) and,
optionally, an id copied into the predictions (`id_column`). A file without the label
column is read for prediction only.

JSON list labels, or CSV/TSV cells split by `label_delimiter`, are read as lists (what
`albert_tf.problems.decide` takes for multi-label). Every bad input is one ValueError
naming the file and line (or column).
"""

import csv
import dataclasses
import json
import os
from typing import Iterator, List, Optional, Sequence, Tuple, Union

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
  """Every row of `path` (`iter_rows`, in a list: for files that fit in memory)."""
  return list(iter_rows(path, columns, flag, need_labels))


def iter_rows(path: str, columns: Columns, flag: str = "", need_labels: bool = True
              ) -> Iterator[Row]:
  """Each row of `path`, read as it is needed (memory holds one row, whatever the file's
  size); a file without `columns.label` gives labels None, which only `need_labels=False`
  (a test file, predicted) accepts. A missing file or format fails at once, a bad row
  when it is reached."""
  if not os.path.isfile(path):
    raise FileNotFoundError(f"{flag + '=' if flag else ''}{path} not found")
  suffix = file_format(path, flag)
  return _rows(path, columns, suffix, flag, need_labels)


def _rows(path, columns, suffix, flag, need_labels) -> Iterator[Row]:
  has_labels, index = None, -1
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
    label = _label(record[columns.label], columns, suffix, path, line) if labelled else None
    yield Row(texts, label, index, None if not columns.id else str(record[columns.id]), line)
  if index < 0:
    raise ValueError(f"{path}: no rows in it")


def iter_texts(path: str, columns: Columns, flag: str) -> Iterator[Row]:
  """The texts of a file without labels (a label column, if any, is not read), one at a
  time: `.txt`, one text per line, for a run of one text column; else CSV, TSV or JSON
  Lines with the run's text columns."""
  if not path.lower().endswith(".txt"):
    rows = iter_rows(path, dataclasses.replace(columns, label="\0", id=None), flag,
                     need_labels=False)
    return (dataclasses.replace(row, label=None) for row in rows)
  if not os.path.isfile(path):
    raise FileNotFoundError(f"{flag}={path} not found")
  if len(columns.text) != 1:
    raise ValueError(f"{flag}={path}: a .txt file holds one text per line, but this run "
                     f"reads {len(columns.text)} ({', '.join(columns.text)}); use .csv, .tsv "
                     "or .jsonl")
  return _lines(path, flag)


def _lines(path, flag) -> Iterator[Row]:
  index = -1
  with open(path, encoding="utf-8-sig") as f:
    for index, text in enumerate(f):
      yield Row([text.rstrip("\r\n")], None, index, None, index + 1)
  if index < 0:
    raise ValueError(f"{flag}={path}: no rows in it")


def records(path: str, flag: str = "") -> Iterator[Tuple[int, dict]]:
  """(line number, {column: value}) of each row of a CSV, TSV or JSONL file (blank lines
  skipped); errors name `path:line`."""
  suffix = file_format(path, flag)
  with open(path, encoding="utf-8-sig", newline="" if suffix != "jsonl" else None) as f:
    if suffix == "jsonl":
      for number, text in enumerate(f, 1):
        if text.strip():
          yield number, json_record(text, path, number)
    else:
      yield from delimited_records(f, path, suffix)


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


def delimited_records(f, path: str, suffix: str, errors: bool = False
                      ) -> Iterator[Tuple[int, dict]]:
  """(line number, {header: field}) of each row of an open CSV or TSV file with a header;
  `errors`: a malformed row gives (line number, its ValueError) and reading goes on."""
  reader = csv.reader(f, delimiter="\t" if suffix == "tsv" else ",")
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


def _label(value, columns: Columns, suffix: str, path: str, line: int) -> Label:
  """The label as the file gives it: a list (multi-label), else a string or a number."""
  where = f"{path}:{line}"
  if isinstance(value, list):
    if not value or not all(isinstance(v, (str, int, float)) and not isinstance(v, bool)
                            and str(v).strip() for v in value):
      raise ValueError(f"{where}: label {value!r}: a multi-label list needs one or more "
                       "labels, each a string or number")
    return [label_name(v) for v in value]
  if value is None or (isinstance(value, str) and not value.strip()):
    raise ValueError(f"{where}: empty label in column {columns.label!r}")
  if isinstance(value, bool) or not isinstance(value, (str, int, float)):
    raise ValueError(f"{where}: label {value!r} is neither text, a number nor a list")
  if suffix != "jsonl" and columns.label_delimiter:
    parts = [p.strip() for p in value.split(columns.label_delimiter)]
    if any(not p for p in parts):
      raise ValueError(f"{where}: label {value!r} has an empty label between "
                       f"{columns.label_delimiter!r}")
    return parts
  return value if isinstance(value, (int, float)) else value.strip()


def label_name(value) -> str:
  """A label as text: numbers without a needless ".0" (3 and 3.0 are both "3")."""
  if isinstance(value, str):
    return value
  return str(int(value)) if float(value).is_integer() else repr(float(value))


def as_number(value) -> Optional[float]:
  """A label as a number, or None."""
  try:
    return float(value)
  except (TypeError, ValueError):
    return None

