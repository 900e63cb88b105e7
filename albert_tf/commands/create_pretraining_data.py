"""create_pretraining_data.py: its flags, and the choice between the two paths that write
the same bytes, the local one (`pretraining.write_pretraining_data`, processes on this
machine) and the Apache Beam pipeline (`pretraining_beam.run`). It sits above both, so
neither imports the other's caller (the pipeline uses the local path's pieces).
"""

import dataclasses
import time
from typing import Optional

import tensorflow as tf

from albert_tf.cli import Original, option
from albert_tf.data import corpus, pretraining_beam
from albert_tf.data.pipeline import DEFAULT_CHUNK_MB, BeamFlags
from albert_tf.data.pretraining import (DataOptions, no_examples_error,
                                        write_pretraining_data, write_vocabulary_records)
from albert_tf.files import expand_files

# Flags of the original create_pretraining_data.py that are not options here.
ORIGINAL_FLAGS = {
    "input_file_mode": Original(str, "r", "ignored: input files are read as UTF-8 text"),
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class CreationOptions(DataOptions, BeamFlags):
  """create_pretraining_data.py's flags: the files, and the knobs of DataOptions."""
  input_file: str = option(help="Input text files: comma-separated paths or globs.")
  output_file: str = option(help="Output TFRecord files, comma-separated (shards), or one "
                            "name with --num_output_shards.")
  num_output_shards: Optional[int] = option(None, "Write <output_file>-0000k-of-0000N "
                                            "shards.", at_least=1)
  spm_model_file: Optional[str] = option(None, "SentencePiece model of the vocabulary.")
  vocab_file: Optional[str] = option(None, "WordPiece vocabulary (vocab_chinese.txt), instead "
                                     "of --spm_model_file.")
  do_lower_case: bool = option(True, "Lower-case the input text.")
  num_workers: int = option(1, "Local path: processes working on chunks in parallel.",
                            at_least=1)
  chunk_mb: float = option(DEFAULT_CHUNK_MB, "Input files are processed in chunks of "
                           "whole documents of about this many MB (the output depends on it).",
                           above=0)
  overwrite: bool = option(False, "Replace existing output files.")
  progress: bool = option(True, "Show a progress bar.")


def describe(report: corpus.Report, max_seq_length: int) -> str:
  """The original's instance statistics of a run, in one line."""
  n = report.get("instances", 0)
  return (f"{n} instances from {report.get('documents', 0)} documents; mean length "
          f"{report.get('tokens', 0) / max(n, 1):.1f} tokens, "
          f"{report.get('short', 0) / max(n, 1):.1%} under half of max_seq_length="
          f"{max_seq_length}; masked {report.get('masked', 0)} of {report.get('tokens', 0)} "
          f"tokens ({report.get('masked', 0) / max(report.get('tokens', 0), 1):.3f} per token)")


def create(opts: CreationOptions) -> dict:
  """What create_pretraining_data.py does; returns the counts."""
  started = time.time()
  knobs = DataOptions(**{f.name: getattr(opts, f.name) for f in dataclasses.fields(DataOptions)})
  outputs = corpus.shard_names(opts.output_file, opts.num_output_shards)
  if bool(opts.spm_model_file) == bool(opts.vocab_file):
    raise ValueError("pass exactly one of --spm_model_file (a SentencePiece model such as "
                     "30k-clean.model) and --vocab_file (a WordPiece vocabulary such as "
                     "vocab_chinese.txt)")
  inputs = expand_files(opts.input_file)
  if opts.runner:
    report = pretraining_beam.run(inputs, outputs, opts.spm_model_file, knobs,
                                  do_lower_case=opts.do_lower_case, vocab_file=opts.vocab_file,
                                  chunk_mb=opts.chunk_mb, runner=opts.runner,
                                  direct_num_workers=opts.direct_num_workers,
                                  beam_pipeline_options=opts.beam_pipeline_options,
                                  overwrite=opts.overwrite)
    if not report["instances"]:
      for f in outputs:   # the pipeline wrote empty shards
        tf.io.gfile.remove(f)
      raise no_examples_error(inputs, report)
  else:
    if opts.beam_pipeline_options or opts.direct_num_workers > 1:
      raise ValueError("--beam_pipeline_options and --direct_num_workers are for a Beam run: "
                       "add --runner=DirectRunner (or another runner)")
    report = write_pretraining_data(inputs, outputs, opts.spm_model_file, knobs,
                                    do_lower_case=opts.do_lower_case,
                                    num_workers=opts.num_workers, overwrite=opts.overwrite,
                                    progress=opts.progress, vocab_file=opts.vocab_file,
                                    chunk_mb=opts.chunk_mb)
  write_vocabulary_records(outputs, opts.spm_model_file, opts.vocab_file, opts.do_lower_case)
  for line in report.describe_problems():
    print(f"create_pretraining_data: {line}")
  size = sum(tf.io.gfile.stat(f).length for f in inputs)
  seconds = time.time() - started
  print(f"Wrote {len(outputs)} files from {len(inputs)} input files ({size / 2**20:.1f} MB) in "
        f"{seconds:.1f} s ({size / 2**20 / seconds:.2f} MB/s): {describe(report, knobs.max_seq_length)}")
  return dict(report)
