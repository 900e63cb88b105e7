"""predict.py: a trained run's answers for a file of new text, one JSON line per input line.

The input is `.txt` (one text per line), or `.csv`, `.tsv`, `.jsonl` read as
run_classifier.py reads your own files (`--text_columns`, `--id_column`). The output, a
`.jsonl` file, appears whole or not at all, and an existing one is never overwritten.
"""

import dataclasses
import json
import os
import time
from typing import Dict, List, Optional

from albert_tf.cli import Checked, option
from albert_tf.data import own
from albert_tf.files import atomic_open
from albert_tf.predictor import Predictor


@dataclasses.dataclass(kw_only=True)
class PredictOptions(Checked):
  """predict.py's flags."""
  model: str = option(help="A run_classifier.py --output_dir (GLUE or your own files).")
  input_file: str = option(help="The texts: .txt (one per line), .csv, .tsv or .jsonl.")
  output_file: str = option(help="Where the answers go (.jsonl); must not exist.")
  text_columns: Optional[str] = option(
      None, "CSV/TSV/JSONL: the column of the text, or two (premise,hypothesis) for a "
      "pair (default: the run's own; for a GLUE run `text`, or `sentence1,sentence2`).")
  id_column: Optional[str] = option(None, "A column copied into each answer as `id`.")
  batch_size: int = option(32, "Examples per batch (sorted by length, put back in order).",
                           at_least=1)
  multi_label_threshold: float = option(0.5, "Multi-label: a label is chosen over this "
                                        "probability.", at_least=0, below=1)
  progress: bool = option(True, "Show a progress bar (rows per second).")


def read_examples(path: str, columns: List[str], id_column: Optional[str]):
  """(texts of each row, its id or None) from the input file, in order."""
  if not os.path.isfile(path):
    raise FileNotFoundError(f"--input_file={path} not found")
  if path.lower().endswith(".txt"):
    with open(path, encoding="utf-8-sig") as f:
      lines = [line.rstrip("\r\n") for line in f]
    while lines and not lines[-1]:
      lines.pop()
    if not lines:
      raise ValueError(f"--input_file={path}: no lines in it")
    if len(columns) != 1:
      raise ValueError(f"--input_file={path}: a .txt file holds one text per line, but this "
                       f"run reads pairs ({', '.join(columns)}); use .csv, .tsv or .jsonl")
    return [[line] for line in lines], [None] * len(lines)
  rows = own.read_rows(path, own.Columns(text=tuple(columns), id=id_column),
                       flag="--input_file", need_labels=False)
  return [r.texts for r in rows], [r.id for r in rows]


def run(opts: PredictOptions) -> Dict[str, object]:
  """What predict.py does: reads the run and the input, answers, writes; returns counts."""
  if os.path.exists(opts.output_file):
    raise FileExistsError(f"--output_file={opts.output_file} exists; nothing was written "
                          "(choose a new file)")
  predictor = Predictor.load(opts.model, opts.batch_size, opts.multi_label_threshold)
  columns = ([c.strip() for c in opts.text_columns.split(",")] if opts.text_columns
             else predictor.text_fields)
  if len(columns) != len(predictor.text_fields):
    raise ValueError(f"--text_columns={','.join(columns)}: this run reads "
                     f"{len(predictor.text_fields)} text(s) ({', '.join(predictor.text_fields)})")
  texts, ids = read_examples(opts.input_file, columns, opts.id_column)
  start = time.time()
  answers = predictor.predict(texts, progress=opts.progress)
  seconds = time.time() - start
  os.makedirs(os.path.dirname(os.path.abspath(opts.output_file)), exist_ok=True)
  with atomic_open(opts.output_file, encoding="utf-8") as f:
    for index, (answer, row_id) in enumerate(zip(answers, ids)):
      head = dict(index=index, **({"id": row_id} if row_id is not None else {}))
      f.write(json.dumps(dict(head, **answer), ensure_ascii=False) + "\n")
  print(f"Wrote {len(answers)} answers to {opts.output_file} ({len(answers) / seconds:.1f} "
        "rows/s)")
  return dict(rows=len(answers), seconds=seconds)
