"""create_pretraining_data as an Apache Beam pipeline (`--runner=...`).

    files -> chunks of whole documents -> (reshuffled over workers)
          -> keyed examples of each chunk (`pretraining.chunk_examples`)
          -> (shard, examples) grouped by shard -> each shard sorted by key, written

The same functions as the local path make the examples and the keys, and a
shard's examples are sorted by key before they are written, so the shards are
byte for byte the local path's, whatever the runner, `--direct_num_workers`,
bundles or retries. A worker holds one chunk's documents while it makes
examples and one shard while it writes it.

Needs `pip install albert_tf[beam]` (apache-beam[tfrecord]). The pipeline flags and the
chunks are `albert_tf.data.pipeline`'s, as predict.py --runner's are.
"""

import json
import os
import uuid
from typing import List, Optional, Sequence

import tensorflow as tf

from albert_tf.data import corpus, pretraining
from albert_tf.data.pipeline import DEFAULT_CHUNK_MB, document_chunks, import_beam, pipeline_options

class _ExamplesOfChunk:
  """DoFn body: a chunk -> (shard, (key, example)); its report goes to a side output."""

  def __init__(self, spm_model_file, do_lower_case, vocab_file, opts, num_shards):
    self.args = (spm_model_file, do_lower_case, vocab_file)
    self.opts, self.num_shards = opts, num_shards
    self.tokenizer = None
    super().__init__()

  def setup(self):
    self.tokenizer = pretraining.make_tokenizer(*self.args)
    self.tagged = import_beam().pvalue.TaggedOutput

  def process(self, chunk):
    report = corpus.Report()
    for key, serialized in pretraining.chunk_examples(chunk, self.tokenizer, self.opts, report):
      yield corpus.shard_of(key, self.num_shards), (key, serialized)
    yield self.tagged("report", report.to_dict())


def _merge_reports(reports):
  total = corpus.Report()
  for r in reports:
    total.merge(corpus.Report.from_dict(r))
  return total.to_dict()


def _write_shard(item, output_files):
  shard, grouped = item
  return corpus.write_shard(output_files[shard], grouped["examples"])


def run(input_files: Sequence[str], output_files: List[str], spm_model_file: Optional[str],
        opts: pretraining.DataOptions, *, do_lower_case: bool = True,
        vocab_file: Optional[str] = None, chunk_mb: float = DEFAULT_CHUNK_MB,
        runner: str = "DirectRunner", direct_num_workers: int = 1,
        beam_pipeline_options: Optional[str] = None, overwrite: bool = False) -> corpus.Report:
  """Runs the pipeline and returns its report (counts, first problem lines)."""
  beam = import_beam()
  pretraining.check_outputs(output_files, overwrite)
  corpus.check_inputs(input_files)
  pretraining.make_tokenizer(spm_model_file, do_lower_case, vocab_file)  # fails early
  chunk_bytes = max(1, int(chunk_mb * 2**20))
  num_shards = len(output_files)
  # The report reaches this process through a file beside the outputs (any runner's
  # workers can write there), read and removed once the pipeline is done.
  report_path = os.path.join(os.path.dirname(output_files[0]) or ".",
                             f".create_pretraining_data-report-{uuid.uuid4().hex}.json")

  class ExamplesOfChunk(_ExamplesOfChunk, beam.DoFn):
    pass

  def write_report(reports):
    with tf.io.gfile.GFile(report_path, "w") as f:
      f.write(json.dumps(_merge_reports(reports)))

  options = pipeline_options(runner, direct_num_workers, beam_pipeline_options)
  try:
    with beam.Pipeline(options=options) as p:
      chunks = (p
                | "Files" >> beam.Create(list(enumerate(input_files)))
                | "Chunks" >> beam.FlatMap(lambda f: document_chunks(f[0], f[1], chunk_bytes))
                | "Spread" >> beam.Reshuffle())
      made = chunks | "Examples" >> beam.ParDo(
          ExamplesOfChunk(spm_model_file, do_lower_case, vocab_file, opts, num_shards)
      ).with_outputs("report", main="examples")
      shards = p | "Shards" >> beam.Create([(k, None) for k in range(num_shards)])
      (p | "Once" >> beam.Create([None])
         | "Report" >> beam.Map(lambda _, reports: write_report(reports),
                                reports=beam.pvalue.AsList(made.report)))
      # Every shard, even one no example falls in, is written.
      ({"examples": made.examples, "shard": shards}
       | "Group" >> beam.CoGroupByKey()
       | "Write" >> beam.Map(_write_shard, output_files))
    with tf.io.gfile.GFile(report_path) as f:
      report = corpus.Report.from_dict(json.load(f))
  finally:
    if tf.io.gfile.exists(report_path):
      tf.io.gfile.remove(report_path)
  report["files"] = len(input_files)
  return report
