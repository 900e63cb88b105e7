"""predict.py --runner=...: a trained run's answers for a corpus, on Apache Beam.

    input file -> byte chunks (`albert_tf.data.pipeline.line_chunks`; a CSV/TSV file is one)
               -> rows counted per chunk (each row's index = the rows before it)
               -> each row read and checked (a bad one -> errors); each chunk's rows
                  sorted by pieces into batches bounded by rows and padded pieces
               -> RunInference(KeyedModelHandler(AlbertModelHandler)), each batch keyed
                  by its first row's index; a row whose answer fails -> errors
               -> answers grouped into contiguous shards by index, each sorted, written
    <output>-SSSSS-of-NNNNN.jsonl and <output>-errors.jsonl (index, line, reason)

`AlbertModelHandler` loads the model as `albert_tf.Predictor` does. A classifier's or
tagger's run runs as its serving export, made in the run directory on first use and loaded
with `tf.saved_model.load` after importing tensorflow_text; Beam's own TFModelHandlerTensor
cannot load it on TensorFlow 2.16+ (it loads with Keras 3's `load_model`). A SQuAD or RACE
run, or any run with --runtime=onnxruntime or --dtype=bfloat16, is read from the run
directory itself. `auto` in --runtime or --dtype (--dtype's default) takes what the local
path measured and recorded for this CPU and run (`auto_pair`), else TensorFlow float32. The batches are made per chunk, sorted by length as the local path's
are, so the answers are the local path's. Files are read and written through Beam's
FileSystems (gs://, s3://, hdfs://, local).
"""

import dataclasses
import io
import json
from typing import Dict, List, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.ml.inference.base import (KeyedModelHandler, ModelHandler, PredictionResult,
                                            RunInference)

from albert_tf import runs
from albert_tf.data import own, pipeline
from albert_tf.data.pipeline import Chunk, chunk_lines, count_chunk, is_row
from albert_tf.export import runtimes
from albert_tf.export.runtimes import AUTO
from albert_tf.predictor import Predictor, answer_line


class ReadRows(beam.DoFn):
  """A chunk -> its good rows in batches, (first index, [(index, example), ...]); each bad
  row's (index, line, reason) to the `errors` output, the chunk's row count to `seen`.

  An example holds its fields, id, line and pieces. A chunk's rows are sorted by pieces
  and cut into batches of at most `batch_size` rows and `max_batch_tokens` padded pieces:
  batches made here, from the chunk alone, are the same on every run, and so are the
  answers (TensorFlow's sums differ in their last bits with a batch's shape, about 1e-7
  between batches of 2 and 64 rows), which Beam's own timing-driven batching would not
  give.
  """

  def __init__(self, model: str, columns: Sequence[str], id_column: Optional[str],
               batch_size: int, max_batch_tokens: int):
    super().__init__()
    self.model, self.columns, self.id_column = model, list(columns), id_column
    self.batch_size, self.max_batch_tokens = batch_size, max_batch_tokens
    self.reader = None

  def setup(self):
    self.reader = Predictor.load(self.model, load_model=False)

  def process(self, chunk: Chunk, counts: Dict[int, Tuple[int, int]]):
    row_base = sum(counts[i][0] for i in range(chunk.index))
    line_base = sum(counts[i][1] for i in range(chunk.index))
    good, seen = [], 0
    for offset, (line, record) in enumerate(self._records(chunk, line_base)):
      index, where, seen = row_base + offset, f"{chunk.path}:{line}: ", seen + 1
      try:
        if isinstance(record, Exception):
          raise record
        if chunk.suffix == "txt":
          values, row_id = self.reader.example([record], where), None
        else:
          values, row_id = self.reader.row(record, self.columns, self.id_column, where)
      except ValueError as e:
        yield beam.pvalue.TaggedOutput("errors", (index, line, str(e).splitlines()[0]))
        continue
      good.append((index, dict(values=values, id=row_id, line=line,
                               tokens=self.reader.tokens(values))))
    yield beam.pvalue.TaggedOutput("seen", seen)
    yield from batches(good, self.batch_size, self.max_batch_tokens)

  def _records(self, chunk: Chunk, line_base: int):
    """(line number, record, or the ValueError of a row that cannot be read) of each row."""
    if chunk.suffix in ("csv", "tsv"):
      with FileSystems.open(chunk.path, compression_type="uncompressed") as f:
        yield from own.delimited_records(io.TextIOWrapper(f, encoding="utf-8-sig", newline=""),
                                         chunk.path, chunk.suffix, errors=True)
      return
    for number, raw in chunk_lines(chunk):
      if not is_row(chunk.suffix, raw):
        continue
      line = line_base + number + 1
      text = raw.decode("utf-8-sig" if chunk.start == 0 and number == 0 else "utf-8")
      if chunk.suffix == "txt":
        yield line, text.rstrip("\r\n")
        continue
      try:
        yield line, own.json_record(text, chunk.path, line)
      except ValueError as e:
        yield line, e


def batches(rows: List[Tuple[int, dict]], batch_size: int, max_tokens: int):
  """(first index, rows) of batches of `rows` sorted by pieces: at most `batch_size` rows,
  and at most `max_tokens` pieces once padded to the longest (one row at least)."""
  batch: List[Tuple[int, dict]] = []
  for row in sorted(rows, key=lambda r: (r[1]["tokens"], r[0])):
    if batch and (len(batch) == batch_size
                  or (len(batch) + 1) * row[1]["tokens"] > max_tokens):
      yield batch[0][0], batch
      batch = []
    batch.append(row)
  if batch:
    yield batch[0][0], batch


class AlbertModelHandler(ModelHandler):
  """RunInference's handler of an albert_tf model (a serving export or a run): loads it as
  `albert_tf.Predictor` does; each element is a batch made by `ReadRows` (RunInference's
  own batching only groups whole batches). A row whose answer fails is answered with its
  error, and the rest of its batch complete."""

  def __init__(self, model: str, settings: dict):
    super().__init__()
    self.model, self.settings = model, dict(settings)

  def load_model(self) -> Predictor:
    return Predictor.load(self.model, **self.settings)

  def run_inference(self, batch, model: Predictor, inference_args=None
                    ) -> List[PredictionResult]:
    return [PredictionResult(rows, _answers(model, [e["values"] for _, e in rows]))
            for rows in batch]

  def batch_elements_kwargs(self):
    return dict(min_batch_size=1, max_batch_size=1)    # an element is a batch already


def _answers(model: Predictor, examples: List[list]) -> List[dict]:
  """The answers of a batch; if it fails, of each row alone (a failing one: {"error"})."""
  try:
    return model.predict(examples)
  except Exception:  # pylint: disable=broad-except
    answers = []
    for example in examples:
      try:
        answers.append(model.predict([example])[0])
      except Exception as e:  # pylint: disable=broad-except
        answers.append({"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"})
    return answers


def _lines(item, num_shards: int, total: int):
  """(shard, (index, output line)) of each answered row of a batch, or ("errors", (index,
  line, reason)) of one whose answer failed; shards hold contiguous indices."""
  _, result = item
  for (index, example), answer in zip(result.example, result.inference):
    if "error" in answer:
      yield beam.pvalue.TaggedOutput("errors", (index, example["line"], answer["error"]))
    else:
      yield (index * num_shards // max(total, 1),
             (index, answer_line(index, example["id"], answer)))


def _failed_rows(failure):
  """(index, line, reason) of each row of a batch whose inference failed."""
  batch, error = failure     # error: (exception type, its repr, traceback lines)
  name, text = (error[0].__name__, error[1]) if isinstance(error, tuple) else (
      type(error).__name__, repr(error))
  reason = f"{name}: {text.splitlines()[0] if text else ''}"
  for _, rows in batch:
    for index, example in rows:
      yield index, example["line"], reason


def _shard_lines(item, prefix: str, num_shards: int) -> str:
  """Writes one shard, its lines sorted by index; returns its name."""
  shard, grouped = item
  name = f"{prefix}-{shard:05d}-of-{num_shards:05d}.jsonl"
  _write(name, [line for _, line in sorted(grouped["lines"])])
  return name


def _write(name: str, lines: Sequence[str]) -> None:
  """`lines` into `name`, which appears whole (written beside it, then renamed)."""
  staging = name + ".inprogress"
  with FileSystems.create(staging) as f:
    for line in lines:
      f.write(line.encode("utf-8"))
  if FileSystems.exists(name):
    FileSystems.delete([name])
  FileSystems.rename([staging], [name])


def outputs(output_file: str, num_shards: int) -> Tuple[str, List[str], str]:
  """(prefix, shard names, errors file) of --output_file."""
  prefix = output_file[:-len(".jsonl")] if output_file.endswith(".jsonl") else output_file
  return (prefix, [f"{prefix}-{i:05d}-of-{num_shards:05d}.jsonl" for i in range(num_shards)],
          f"{prefix}-errors.jsonl")


def auto_pair(run: Optional["runs.Run"], runtime: str, dtype: str, quantization: str
              ) -> Tuple[str, str]:
  """(runtime, dtype) for `auto` in either: the only pair they allow; TensorFlow in float32
  for a serving export or a run that answers through its own graph (as the local path
  takes); else what the local path measured and recorded for this CPU, these weights and
  these candidates (`runs.Run.recorded_pair`), or, when it has not, the fastest float32
  pair's first candidate (the workers cannot measure one batch for all: each would choose
  alone)."""
  if quantization != "none":     # ONNX Runtime's int8 (refused with another runtime)
    return ("onnxruntime" if runtime == AUTO else runtime, "float32" if dtype == AUTO else dtype)
  pairs = runtimes.candidates(runtime, dtype)
  if len(pairs) == 1:
    return tuple(pairs[0].split("/"))
  if run is None or run.kind.graph is not None:
    return ("tensorflow", "float32")
  pair = run.recorded_pair(runtime, dtype)
  if pair is None:
    pair = pairs[0]
    print(f"auto: {pair} (nothing measured on this CPU for this run's --runtime={runtime} "
          f"--dtype={dtype}; predict.py with the same flags and without --runner measures "
          "and records a choice)")
  return tuple(pair.split("/"))


def run(opts) -> Dict[str, object]:
  """predict.py with --runner: `opts` are its PredictOptions."""
  import time  # pylint: disable=g-import-not-at-top
  prefix, shards, errors_file = outputs(opts.output_file, opts.num_shards)
  existing = [n for n in shards + [errors_file] if FileSystems.exists(n)]
  if existing:
    raise FileExistsError(f"--output_file: {', '.join(existing)} exist(s); nothing was "
                          "written (choose a new --output_file)")
  if not FileSystems.exists(opts.input_file):
    raise FileNotFoundError(f"--input_file={opts.input_file} not found")
  suffix = "txt" if opts.input_file.lower().endswith(".txt") else own.file_format(
      opts.input_file, "--input_file")
  run = runs.Run.read(opts.model, "--model", kinds=runs.answering()) \
      if runs.Run.exists(opts.model) else None
  runtime, dtype = opts.runtime, opts.dtype
  if AUTO in (runtime, dtype):   # decided here, once: every worker then runs the same
    runtime, dtype = auto_pair(run, runtime, dtype, opts.quantization)
  choices = dict(runtime=runtime, dtype=dtype, quantization=opts.quantization)
  if runtime == "tensorflow" and dtype == "float32":
    # What the workers load: a serving export as given; a run's (kept beside it), if its
    # kind has one; any other run itself.
    model = run.serving_export() if run is not None else opts.model
  else:     # the workers read the run itself; its ONNX export, if any, is made here once
    if run is None:
      raise ValueError(f"--model={opts.model}: --runtime and --dtype need a run directory "
                       "(a serving export runs as it was saved)")
    model = run.path
    if runtime == "onnxruntime":
      run.onnx_file(opts.quantization)
  # Rows are read as the run reads them (its own text columns), whatever the workers load.
  reader = Predictor.load(opts.model, load_model=False, **choices)
  columns = reader.columns(opts.text_columns)
  if suffix == "txt" and len(columns) != 1:
    raise ValueError(f"--input_file={opts.input_file}: a .txt file holds one text per line, "
                     f"but this run reads {len(columns)} fields ({', '.join(columns)})")
  chunks = pipeline.line_chunks(opts.input_file, suffix)
  settings = dict(dataclasses.asdict(opts.settings), **choices)
  handler = KeyedModelHandler(AlbertModelHandler(model, settings))
  num_shards = opts.num_shards
  started = time.time()
  with beam.Pipeline(options=opts.pipeline_options()) as p:
    planned = p | "Chunks" >> beam.Create(chunks)
    counts = planned | "Count" >> beam.Map(count_chunk)
    read = (planned
            | "Spread" >> beam.Reshuffle()
            | "Read" >> beam.ParDo(ReadRows(opts.model, columns, opts.id_column, opts.batch_size,
                                            opts.max_batch_tokens),
                                   counts=beam.pvalue.AsDict(counts)
                                   ).with_outputs("errors", "seen", main="batches"))
    total = read.seen | "Rows" >> beam.CombineGlobally(sum)
    answered, failed = (read.batches
                        | "Balance" >> beam.Reshuffle()
                        | "Answer" >> RunInference(handler).with_exception_handling())
    answers = answered | "Lines" >> beam.FlatMap(
        _lines, num_shards, beam.pvalue.AsSingleton(total)).with_outputs("errors", main="lines")
    sharded = answers.lines
    every = p | "Shards" >> beam.Create([(k, None) for k in range(num_shards)])
    ({"lines": sharded, "shard": every}
     | "Group" >> beam.CoGroupByKey()
     | "Write" >> beam.Map(_shard_lines, prefix, num_shards))
    bad_batches = failed.failed_inferences | "Failed" >> beam.FlatMap(_failed_rows)
    once = p | "Once" >> beam.Create([(0, None)])
    bad = ((read.errors, answers.errors, bad_batches)
           | "Errors" >> beam.Flatten()
           | "Key" >> beam.Map(lambda error: (0, error)))
    ({"errors": bad, "once": once}
     | "AllErrors" >> beam.CoGroupByKey()
     | "WriteErrors" >> beam.Map(lambda item: _write(errors_file, [
         json.dumps(dict(index=i, line=line, reason=reason), ensure_ascii=False) + "\n"
         for i, line, reason in sorted(item[1]["errors"])])))
  seconds = time.time() - started
  with FileSystems.open(errors_file) as f:
    reasons = [json.loads(line)["reason"] for line in f]
  written = 0
  for name in shards:
    with FileSystems.open(name) as f:
      written += sum(1 for _ in f)
  errors = len(reasons)
  print(f"Wrote {written} answers to {prefix}-*-of-{num_shards:05d}.jsonl and {errors} "
        f"errors to {errors_file} ({written / seconds:.1f} rows/s)")
  check_errors(written, reasons, opts.max_error_rate, errors_file)
  return dict(rows=written, errors=errors, seconds=seconds, rows_per_second=written / seconds)


class TooManyErrors(ValueError):
  """A prediction run that answered no row, or failed on more than --max_error_rate of
  them: predict.py exits non-zero (its outputs stay)."""


def check_errors(written: int, reasons: Sequence[str], max_error_rate: float,
                 errors_file: str) -> None:
  """Raises TooManyErrors, with the first reason, when no row was answered or the failed
  rows are more than `max_error_rate` of all."""
  total = written + len(reasons)
  if written and len(reasons) <= max_error_rate * total:
    return
  first = f"; the first: {reasons[0]}" if reasons else ""
  raise TooManyErrors(
      (f"no row answered ({len(reasons)} failed{first})" if not written else
       f"{len(reasons)} of {total} rows failed, more than --max_error_rate={max_error_rate:g}"
       f"{first}") + f"; every error is in {errors_file}, the answers written stay")
