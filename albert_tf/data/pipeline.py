"""Apache Beam for the scripts that run on it: the pipeline flags and the chunks of the input.

create_pretraining_data.py and predict.py take the same `BeamFlags` (`--runner`,
`--direct_num_workers`, `--beam_pipeline_options`) and cut their input the same way: a
chunk is a byte range of one file, the unit of work of a worker (and of the local path, for
pretraining), so memory is bounded by one chunk whatever the size of a file.

- `document_chunks` (pretraining): a chunk ends at the first blank line after
  `chunk_bytes`, so it holds whole documents; the file is scanned once, undecoded.
- `line_chunks` (prediction): fixed byte ranges, planned without reading; a line belongs to
  the chunk its first byte lies in. A CSV or TSV file, whose quoted fields may span
  lines, is one chunk.

`chunk_lines` reads either. Files are opened through Beam's FileSystems when Beam is
installed (gs://, s3://, hdfs://, local), else through TensorFlow's gfile. apache_beam is
imported only when a pipeline runs (`import_beam`): the local paths need no Beam.
"""

import dataclasses
import shlex
from typing import Iterator, List, Optional, Tuple

import tensorflow as tf

from albert_tf.cli import option

CHUNK_BYTES = 16 << 20      # prediction's chunks
DEFAULT_CHUNK_MB = 16.0     # pretraining's --chunk_mb

# --runner=DirectRunner runs here, in this process (or --direct_num_workers processes).
# Beam's own DirectRunner first tries its Prism runner, a binary it downloads; this one
# is the in-process runner it falls back to.
_IN_PROCESS = "apache_beam.runners.portability.fn_api_runner.fn_runner.FnApiRunner"

RUNNERS_HELP = ("Run as an Apache Beam pipeline on this runner (DirectRunner here; "
                "DataflowRunner, FlinkRunner, SparkRunner, ...); needs albert_tf[beam]. "
                "Unset: the local path (processes on this machine, no Beam).")


# ----------------------------------------------------------------------------- flags

@dataclasses.dataclass(frozen=True, kw_only=True)
class BeamFlags:
  """The pipeline flags of the scripts that can run on Apache Beam."""
  runner: Optional[str] = option(None, RUNNERS_HELP)
  direct_num_workers: int = option(1, "--runner=DirectRunner: worker processes.", at_least=1)
  beam_pipeline_options: Optional[str] = option(None, "More Beam pipeline options, space-"
                                                "separated (e.g. '--project=p --region=r "
                                                "--temp_location=gs://b/tmp').")

  def pipeline_options(self):
    """Beam PipelineOptions of these flags (`pipeline_options`)."""
    return pipeline_options(self.runner, self.direct_num_workers, self.beam_pipeline_options)


def import_beam():
  try:
    import apache_beam as beam  # pylint: disable=import-outside-toplevel
  except ImportError:
    raise ImportError("--runner needs Apache Beam: pip install 'albert_tf[beam]' "
                      "(apache-beam[tfrecord]); without --runner the local path needs "
                      "nothing more") from None
  return beam


def pipeline_options(runner: str, direct_num_workers: int, extra: Optional[str]):
  """Beam PipelineOptions of the flags: `--runner`, `--direct_num_workers` and the
  space-separated Beam options of `--beam_pipeline_options` (for Dataflow:
  `--project=... --region=... --temp_location=gs://... --requirements_file=...`)."""
  from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=import-outside-toplevel
  args = [f"--runner={_IN_PROCESS if runner == 'DirectRunner' else runner}"]
  if runner == "DirectRunner":
    args.append(f"--direct_num_workers={direct_num_workers}")
    args.append("--direct_running_mode=" + ("multi_processing" if direct_num_workers > 1
                                              else "in_memory"))
    args.append("--default_sdk_harness_log_level=WARNING")  # (the workers' INFO lines)
  args += shlex.split(extra or "")
  return PipelineOptions(args)


# ----------------------------------------------------------------------------- files

def _file_systems():
  try:
    from apache_beam.io.filesystems import FileSystems  # pylint: disable=import-outside-toplevel
  except ImportError:
    return None
  return FileSystems


def open_file(path: str):
  """`path` opened for reading bytes (FileSystems with Beam, else gfile)."""
  fs = _file_systems()
  if fs is None:
    return tf.io.gfile.GFile(path, "rb")
  return fs.open(path, compression_type="uncompressed")


def file_size(path: str) -> int:
  fs = _file_systems()
  if fs is None:
    return tf.io.gfile.stat(path).length
  return fs.match([path])[0].metadata_list[0].size_in_bytes


# ----------------------------------------------------------------------------- chunks

@dataclasses.dataclass(frozen=True)
class Chunk:
  """Bytes [start, end) of input file `file_index`. `first_line` (1-based) is the number of
  its first line when the chunk starts at a line (document chunks); None when it starts
  anywhere (line chunks: its lines are those that start in the range, numbered from 0)."""
  file_index: int
  index: int
  path: str
  start: int
  end: int
  first_line: Optional[int] = None
  suffix: str = "txt"             # txt, jsonl, csv or tsv

  @property
  def chunk_index(self) -> int:
    return self.index


def document_chunks(file_index: int, path: str, chunk_bytes: int) -> Iterator[Chunk]:
  """The chunks of a pretraining corpus file: a chunk ends at the first blank line after
  `chunk_bytes`. Only reads the file (line by line, undecoded): memory is one line."""
  start, offset, line, first_line, index = 0, 0, 0, 1, 0
  with open_file(path) as f:
    for raw in f:
      offset += len(raw)
      line += 1
      if offset - start >= chunk_bytes and not raw.strip():
        yield Chunk(file_index, index, path, start, offset, first_line)
        start, first_line, index = offset, line + 1, index + 1
  if offset > start:
    yield Chunk(file_index, index, path, start, offset, first_line)


def whole_file(path: str) -> Chunk:
  """One chunk of all of `path`."""
  return Chunk(0, 0, path, 0, file_size(path), 1)


def line_chunks(path: str, suffix: str, chunk_bytes: Optional[int] = None) -> List[Chunk]:
  """The chunks of a file of rows: `chunk_bytes` (default CHUNK_BYTES) each, planned
  without reading it; a CSV or TSV file (whose quoted fields may span lines) is one."""
  chunk_bytes = chunk_bytes or CHUNK_BYTES
  size = file_size(path)
  if suffix in ("csv", "tsv"):
    return [Chunk(0, 0, path, 0, size, suffix=suffix)]
  return [Chunk(0, i, path, start, min(size, start + chunk_bytes), suffix=suffix)
          for i, start in enumerate(range(0, max(size, 1), chunk_bytes))]


def chunk_lines(chunk: Chunk) -> Iterator[Tuple[int, bytes]]:
  """(line number, raw line) of each line of the chunk: numbered from `first_line`, or
  within the chunk from 0 for a line chunk (whose first line, if it starts before the
  chunk, is the chunk before's)."""
  with open_file(chunk.path) as f:
    offset, number = chunk.start, chunk.first_line
    if number is None:
      number = 0
      if offset > 0:
        f.seek(offset - 1)
        offset += len(f.readline()) - 1
    else:
      f.seek(offset)
    yield from lines_until(f, offset, chunk.end, number)


def lines_until(f, offset: int, end: int, number: int) -> Iterator[Tuple[int, bytes]]:
  """(number, raw line) of each line of the open binary file `f`, positioned at byte
  `offset` (a line's start), that starts before byte `end`; numbered from `number`."""
  while offset < end:
    raw = f.readline()
    if not raw:
      break
    yield number, raw
    offset += len(raw)
    number += 1


def is_row(suffix: str, raw: bytes) -> bool:
  """A line of a file of rows is a row: every line of a .txt file, every non-blank line of
  a .jsonl file."""
  return suffix == "txt" or bool(raw.strip())


def count_chunk(chunk: Chunk) -> Tuple[int, Tuple[int, int]]:
  """(chunk index, (its rows, its lines)); a CSV/TSV chunk counts when it is read."""
  rows = lines = 0
  if chunk.suffix in ("txt", "jsonl"):
    for _, raw in chunk_lines(chunk):
      lines += 1
      rows += is_row(chunk.suffix, raw)
  return chunk.index, (rows, lines)
