"""predict.py: a trained run's answers for a file of new text, one JSON line per input row.

The input is `.txt` (one text per line; an empty line is an empty text), or `.csv`, `.tsv`,
`.jsonl` (columns named by `--text_columns`, default the run's own). Locally it is read,
answered and written `--chunk_rows` at a time (memory holds one chunk, whatever the input's
size); the output, a `.jsonl` file, appears whole or not at all (it grows as
`<output_file>.tmp-<pid>`, removed on an error), and an existing one is never overwritten;
a bad row stops the run with its `file:line`, and nothing is left at `--output_file`. With `--runner` it
runs on Apache Beam (`albert_tf.commands.predict_beam`): sharded output, bad rows in an errors file.
"""

import dataclasses
import itertools
import os
import time
from typing import Dict, Iterator, List, Optional, Tuple

from albert_tf.cli import Checked, option
from albert_tf.data import own
from albert_tf.data.pipeline import BeamFlags
from albert_tf.files import atomic_open
from albert_tf.predictor import (AUTO, DTYPES, QUANTIZATIONS, RUNTIMES, Predictor, Settings,
                                 answer_line)


@dataclasses.dataclass(frozen=True, kw_only=True)
class PredictOptions(BeamFlags, Checked):
  """predict.py's flags."""
  model: str = option(help="A fine-tuning run's --output_dir (run_classifier.py, run_ner.py, "
                      "run_squad.py, run_race.py), or a serving export (--export_dir).")
  input_file: str = option(help="The inputs: .txt (one text per line), .csv, .tsv or .jsonl "
                           "(SQuAD: question, context; RACE: article, question, options).")
  output_file: str = option(help="Where the answers go (.jsonl); must not exist. With "
                            "--runner: <name>-SSSSS-of-NNNNN.jsonl shards and <name>-errors.jsonl.")
  text_columns: Optional[str] = option(
      None, "CSV/TSV/JSONL: the columns of the inputs, in the run's order (default: the "
      "run's own text columns; for a GLUE run `text`, or `sentence1,sentence2`).")
  id_column: Optional[str] = option(None, "A column copied into each answer as `id`.")
  batch_size: int = option(32, "Examples per batch (sorted by length, put back in order).",
                           at_least=1)
  runtime: str = option("tensorflow", "tensorflow, onnxruntime (the run's ONNX export, made "
                        "in <run>/onnx/ on first use), or auto: the fastest on the first "
                        "batch, recorded in <run>/onnx/runtime.json for this CPU.",
                        choices=RUNTIMES + (AUTO,))
  dtype: str = option(AUTO, "TensorFlow's compute dtype: float32, bfloat16, or auto: "
                      "bfloat16 where it answers the first batch clearly faster and with the "
                      "same labels, else float32 (measured with --runtime's candidates, "
                      "recorded beside its choice).", choices=DTYPES + (AUTO,))
  quantization: str = option("none", "onnxruntime: none (float32) or dynamic_int8.",
                             choices=QUANTIZATIONS)
  multi_label_threshold: Optional[float] = option(
      None, "Multi-label: a label is chosen over this probability (every label). Default: "
      "the run's (or export's) thresholds: each label's tuned one (run_classifier.py "
      "--multi_label_threshold=tune), else 0.5.", at_least=0, below=1)
  n_best_size: int = option(20, "SQuAD: candidate answers kept per question.", at_least=1)
  max_answer_length: int = option(30, "SQuAD: longest answer, in pieces.", at_least=1)
  null_score_diff_threshold: float = option(0.0, "SQuAD v2.0: no answer when the null score "
                                            "exceeds this.")
  num_shards: int = option(1, "--runner: output shards.", at_least=1)
  max_error_rate: float = option(0.01, "--runner: the fraction of rows that may fail (a bad "
                                 "row goes to the errors file); more, or no answer at all, "
                                 "exits non-zero with the first reason.", at_least=0, at_most=1)
  chunk_rows: int = option(10000, "Rows read, answered and written at a time: memory "
                           "holds one chunk, whatever the input's size (batches are sorted "
                           "by length within it).", at_least=1)
  max_batch_tokens: int = option(8192, "--runner: pieces per batch at most (a batch of long "
                                 "texts holds fewer rows).", at_least=1)
  progress: bool = option(True, "Show a progress bar (rows per second).")

  @property
  def settings(self) -> Settings:
    return Settings(self.batch_size, self.multi_label_threshold, self.n_best_size,
                    self.max_answer_length, self.null_score_diff_threshold)


def read_chunks(path: str, predictor: Predictor, columns: List[str], id_column: Optional[str],
                size: int) -> Iterator[List[Tuple[list, Optional[str]]]]:
  """The input file `size` rows at a time, in order: (each row's fields, its id or None),
  checked, read as they are needed; an error names `path:line` (a missing file or a .txt
  for several fields: at once)."""
  if not os.path.isfile(path):
    raise FileNotFoundError(f"--input_file={path} not found")
  if path.lower().endswith(".txt") and len(columns) != 1:
    raise ValueError(f"--input_file={path}: a .txt file holds one text per line, but this "
                     f"run reads {len(columns)} fields ({', '.join(columns)}); use .csv, "
                     ".tsv or .jsonl")
  return _chunks(path, predictor, columns, id_column, size)


def _chunks(path, predictor, columns, id_column, size) -> Iterator[list]:
  chunk = []
  for row in _rows(path, predictor, columns, id_column):
    chunk.append(row)
    if len(chunk) == size:
      yield chunk
      chunk = []
  if chunk:
    yield chunk


def _rows(path, predictor, columns, id_column) -> Iterator[Tuple[list, Optional[str]]]:
  if path.lower().endswith(".txt"):
    with open(path, encoding="utf-8-sig") as f:
      for number, line in enumerate(f, 1):
        yield predictor.example([line.rstrip("\r\n")], f"{path}:{number}: "), None
  else:
    for number, record in own.records(path, "--input_file"):
      yield predictor.row(record, columns, id_column, f"{path}:{number}: ")


def run(opts: PredictOptions) -> Dict[str, object]:
  """What predict.py does: reads the run and the input, answers, writes; returns counts."""
  if opts.runner:
    from albert_tf.commands import predict_beam  # pylint: disable=g-import-not-at-top
    return predict_beam.run(opts)
  if os.path.exists(opts.output_file):
    raise FileExistsError(f"--output_file={opts.output_file} exists; nothing was written "
                          "(choose a new file)")
  predictor = Predictor.load(opts.model, runtime=opts.runtime, dtype=opts.dtype,
                             quantization=opts.quantization, **dataclasses.asdict(opts.settings))
  parts = read_chunks(opts.input_file, predictor, predictor.columns(opts.text_columns),
                      opts.id_column, opts.chunk_rows)
  first = next(parts, None)     # (a bad or missing first chunk: nothing made at all)
  if first is None:
    raise ValueError(f"--input_file={opts.input_file}: no rows in it")
  os.makedirs(os.path.dirname(os.path.abspath(opts.output_file)), exist_ok=True)
  count, seconds = 0, 0.0
  # A chunk at a time: read, answered (sorted by length within it), written in input order.
  # The answers appear at --output_file when the last is written; until then they grow in
  # <output_file>.tmp-<pid>, removed if the run stops on an error.
  with atomic_open(opts.output_file, encoding="utf-8") as f:
    for chunk in itertools.chain([first], parts):
      start = time.time()
      answers = predictor.predict([row for row, _ in chunk], progress=opts.progress)
      seconds += time.time() - start
      for answer, (_, row_id) in zip(answers, chunk):
        f.write(answer_line(count, row_id, answer))
        count += 1
  print(f"Wrote {count} answers to {opts.output_file} ({count / seconds:.1f} rows/s)")
  return dict(rows=count, seconds=seconds, rows_per_second=count / seconds)
