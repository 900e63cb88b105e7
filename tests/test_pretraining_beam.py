"""create_pretraining_data at corpus scale: chunks, keyed shards, the Beam pipeline.

The Beam tests run Apache Beam's in-process runner (`--runner=DirectRunner`),
with one worker and with two worker processes; `[test]` installs `[beam]`.
"""

import collections
import hashlib
import os
import random

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.data import corpus
from albert_tf.commands import create_pretraining_data as creation
from albert_tf.data import pretraining as pd
from albert_tf.data import sample_corpus
from albert_tf.text import tokenization
import original_pretraining_data as original
from common import run_script

pytest.importorskip("apache_beam")
from albert_tf.data import pipeline, pretraining_beam  # pylint: disable=g-import-not-at-top

OPTS = pd.DataOptions(max_seq_length=128, max_predictions_per_seq=20, dupe_factor=2,
                      random_seed=5)
CHUNK_MB = 0.04  # several chunks per file: a big file is cut by documents


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
  """The pydoc corpus as two files, cut at a document boundary."""
  root = tmp_path_factory.mktemp("beam_corpus")
  text = open(sample_corpus.write_pydoc_corpus(str(root / "all.txt")), encoding="utf-8").read()
  documents = text.split("\n\n")
  half = len(documents) // 2
  paths = [str(root / "a.txt"), str(root / "b.txt")]
  for path, part in zip(paths, (documents[:half], documents[half:])):
    with open(path, "w", encoding="utf-8") as f:
      f.write("\n\n".join(part))
  return paths


def _digests(paths):
  return [hashlib.sha256(open(p, "rb").read()).hexdigest() for p in paths]


@pytest.fixture(scope="module")
def runs(inputs, spm_model, tmp_path_factory):
  """The same corpus and seed through the local path and the Beam pipeline:
  {name: (shard paths, report)}."""
  root = tmp_path_factory.mktemp("beam_runs")
  out = {}
  for name, beam, workers in (("local-1", False, 1), ("local-2", False, 2),
                              ("beam-1", True, 1), ("beam-2", True, 2),
                              ("beam-1-again", True, 1)):
    shards = [str(root / name / f"train-{k}.tfrecord") for k in range(3)]
    if beam:
      report = pretraining_beam.run(inputs, shards, spm_model, OPTS, chunk_mb=CHUNK_MB,
                                 direct_num_workers=workers)
    else:
      report = pd.write_pretraining_data(inputs, shards, spm_model, OPTS, num_workers=workers,
                                         progress=False, chunk_mb=CHUNK_MB)
    out[name] = shards, report
  return out


def test_chunks_are_whole_documents_and_cover_each_file(inputs):
  for k, path in enumerate(inputs):
    chunks = list(pipeline.document_chunks(k, path, int(CHUNK_MB * 2**20)))
    assert len(chunks) >= 3
    data = open(path, "rb").read()
    assert chunks[0].start == 0 and chunks[-1].end == len(data)
    lines = data.split(b"\n")
    for before, after in zip(chunks, chunks[1:]):
      assert before.end == after.start
      assert data[before.start:before.end].endswith(b"\n\n")   # cut at a blank line
      assert after.first_line == data[:after.start].count(b"\n") + 1
      first = [raw for _, raw in pipeline.chunk_lines(after)][0]
      assert first.rstrip(b"\n") == lines[after.first_line - 1]


def test_shards_are_the_same_bytes_for_any_runner_workers_and_rerun(runs):
  digests = {name: _digests(shards) for name, (shards, _) in runs.items()}
  assert len(set(map(tuple, digests.values()))) == 1, digests
  reports = {name: dict(report) for name, (_, report) in runs.items()}
  assert len({tuple(sorted(r.items())) for r in reports.values()}) == 1, reports
  shards, report = runs["beam-2"]
  sizes = [sum(1 for _ in tf.data.TFRecordDataset(p)) for p in shards]
  assert sum(sizes) == report["instances"] > 1000
  assert min(sizes) > 0.25 * sum(sizes)     # keys spread the examples over the shards


def _records(paths):
  spec = pd.feature_spec(OPTS.max_seq_length, OPTS.max_predictions_per_seq)
  for record in tf.data.TFRecordDataset(paths):
    x = tf.io.parse_single_example(record, spec)
    yield {k: v.numpy() for k, v in x.items()}


def _runs_in_words(positions, boundary):
  """Words in each maximal run of masked positions (n-gram spans, adjacent ones merged)."""
  runs, current = [], []
  for p in sorted(positions):
    if current and p != current[-1] + 1:
      runs.append(current)
      current = []
    current.append(p)
  if current:
    runs.append(current)
  return [min(4, sum(1 for i, p in enumerate(r) if boundary[p] or i == 0)) for r in runs]


def _instances_of_records(paths):
  """(original ids, output ids, masked positions, label) of each record."""
  out = []
  for x in _records(paths):
    n = int(x["input_mask"].sum())
    output = [int(i) for i in x["input_ids"][:n]]
    count = int(x["masked_lm_weights"].sum())
    positions = [int(p) for p in x["masked_lm_positions"][:count]]
    ids = list(output)
    for p, label in zip(positions, x["masked_lm_ids"][:count]):
      ids[p] = int(label)
    out.append((ids, output, positions, int(x["next_sentence_labels"][0]),
                [int(b) for b in x["token_boundary"][:n]]))
  return out


def _statistics(instances):
  """The original's instance statistics, the label balance and the n-gram lengths."""
  lengths = np.array([len(x[0]) for x in instances])
  runs = collections.Counter(n for x in instances for n in _runs_in_words(x[2], x[4]))
  total = sum(runs.values())
  return dict(count=len(instances), mean_length=lengths.mean(),
              short=np.mean(lengths < OPTS.max_seq_length / 2),
              masked_per_token=sum(len(x[2]) for x in instances) / lengths.sum(),
              negatives=np.mean([x[3] for x in instances]),
              runs=np.array([runs[n] / total for n in (1, 2, 3, 4)]))


def _original(documents, tokenizer, rng, nprng):
  """The reference of the original (tests/original_pretraining_data.py), as ids."""
  out = []
  for tokens, output, positions, negative in original.create_training_instances(
      documents, list(tokenizer.vocab), OPTS.max_seq_length, OPTS.dupe_factor,
      OPTS.short_seq_prob, OPTS.masked_lm_prob, OPTS.max_predictions_per_seq,
      rng=rng, nprng=nprng):
    boundary = [int(t in ("[CLS]", "[SEP]") or original._is_start_piece(t)) for t in tokens]
    out.append((tokenizer.convert_tokens_to_ids(tokens), tokenizer.convert_tokens_to_ids(output),
                positions, int(negative), boundary))
  return out


def test_beam_output_is_the_originals_instances(inputs, spm_model, tmp_path):
  """One file in one chunk: the pipeline's records are exactly the instances the original's
  algorithm makes from that file's documents with the chunk's random generators (the
  same multiset; the order is the keys'), so the original's instance statistics (count,
  mean length, share under half of max_seq_length, masked tokens per token) are equal."""
  shards = [str(tmp_path / f"train-{k}") for k in range(2)]
  pretraining_beam.run(inputs[:1], shards, spm_model, OPTS)
  ours = _instances_of_records(shards)
  tokenizer = tokenization.FullTokenizer(spm_model_file=spm_model)
  documents = pd.read_documents(inputs[0], tokenizer)
  rng = random.Random(f"{OPTS.random_seed}:0:0")              # file 0, chunk 0
  nprng = np.random.default_rng([OPTS.random_seed, 0, 0])
  theirs = _original(documents, tokenizer, rng, nprng)
  assert len(ours) == len(theirs) > 500
  assert sorted(x[:4] for x in ours) == sorted(x[:4] for x in theirs)
  a, b = _statistics(ours), _statistics(theirs)
  for key in ("count", "mean_length", "short", "masked_per_token", "negatives"):
    assert a[key] == b[key], key
  np.testing.assert_array_equal(a["runs"], b["runs"])


def test_chunked_beam_output_has_the_original_masking_and_labels(runs, inputs, spm_model):
  """Many chunks and two files: the per-instance statistics of the records match the
  original's on all documents pooled (its way), averaged over seeds: masked tokens per
  token, sentence-order label balance, n-gram lengths (p(n) proportional to 1/n). (The
  count and lengths depend on which few documents draw a short target: one seed of the
  original gives 4.6% short instances, another 16%.)"""
  ours = _statistics(_instances_of_records(runs["beam-2"][0]))
  tokenizer = tokenization.FullTokenizer(spm_model_file=spm_model)
  documents = [d for path in inputs for d in pd.read_documents(path, tokenizer)]
  theirs = _statistics([x for seed in (1, 2, 3) for x in _original(
      documents, tokenizer, random.Random(seed), np.random.RandomState(seed))])
  assert abs(ours["masked_per_token"] - theirs["masked_per_token"]) < 0.003, (ours, theirs)
  assert abs(ours["masked_per_token"] - 0.15) < 0.01
  # Half the pairs swapped, plus the one-sentence chunks that take B from another
  # document (more of them when a document draws a short target).
  assert 0.48 < ours["negatives"] < 0.62 and 0.48 < theirs["negatives"] < 0.62, (ours, theirs)
  assert abs(ours["negatives"] - theirs["negatives"]) < 0.08, (ours, theirs)
  np.testing.assert_allclose(ours["runs"], theirs["runs"], atol=0.02)
  assert ours["runs"][0] > ours["runs"][1] > ours["runs"][2]
  assert abs(ours["mean_length"] / theirs["mean_length"] - 1) < 0.1


def test_bad_lines_are_counted_and_named_and_an_empty_corpus_is_an_error(tmp_path, spm_model,
                                                                         capsys):
  good = "The first sentence is here.\nA second one follows it.\n\n" * 30
  path = tmp_path / "bad.txt"
  path.write_bytes(good.encode() + b"caf\xe9 au lait is a drink.\nIt is good.\n\n"
                   + b"\x07\nNothing above tokenized.\nReally nothing.\n")
  out = tmp_path / "out" / "train.tfrecord"
  stats = creation.create(creation.CreationOptions(input_file=str(path), output_file=str(out),
                                       spm_model_file=spm_model, max_seq_length=32,
                                       max_predictions_per_seq=5, dupe_factor=1,
                                       progress=False))
  printed = capsys.readouterr().out
  bad_line, empty_line = 91, 94
  assert stats["invalid_utf8"] == 1 and stats["empty_lines"] == 1
  assert f"1 lines with bytes that are not UTF-8 (those bytes were dropped): {path}:{bad_line}" \
      in printed
  assert f"1 lines that tokenize to nothing (skipped): {path}:{empty_line}" in printed
  assert "under half of max_seq_length=32" in printed and "per token" in printed
  # The Beam pipeline reports the same lines.
  report = pretraining_beam.run([str(path)], [str(tmp_path / "beam.tfrecord")], spm_model,
                             pd.DataOptions(max_seq_length=32, max_predictions_per_seq=5,
                                            dupe_factor=1))
  assert report.problems["invalid_utf8"] == [(0, bad_line, f"{path}:{bad_line}")]
  assert report.problems["empty_lines"] == [(0, empty_line, f"{path}:{empty_line}")]

  empty = tmp_path / "empty.txt"
  empty.write_text("\n\n\x07\n\n")
  for runner in (None, "DirectRunner"):
    target = tmp_path / f"none-{runner}.tfrecord"
    with pytest.raises(ValueError, match=r"no pretraining examples from .*empty.txt.*"
                       r"tokenize to nothing \(skipped\): .*empty.txt:3"):
      creation.create(creation.CreationOptions(input_file=str(empty), output_file=str(target),
                                   spm_model_file=spm_model, runner=runner, progress=False))
    assert not target.exists()
  assert sorted(os.listdir(tmp_path)) == ["bad.txt", "beam.tfrecord", "empty.txt", "out"]
  # no spill files left; the shard and the vocabulary it was made with
  assert sorted(os.listdir(tmp_path / "out")) == ["train.tfrecord", "train.tfrecord.vocabulary.json"]


def test_unreadable_inputs_and_shard_flags_are_named_before_any_work(tmp_path, spm_model):
  (tmp_path / "dir.txt").mkdir()
  os.symlink(tmp_path / "gone.txt", tmp_path / "broken.txt")
  for name, error in (("dir.txt", "is a directory"), ("broken.txt", "cannot be read")):
    with pytest.raises(OSError, match=f"--input_file .*{name}.*{error}"):
      pd.write_pretraining_data([str(tmp_path / name)], [str(tmp_path / "o.tfrecord")],
                                spm_model, OPTS, progress=False)
  assert sorted(os.listdir(tmp_path)) == ["broken.txt", "dir.txt"]
  assert corpus.shard_names("d/train.tfrecord", 3) == [
      f"d/train.tfrecord-0000{k}-of-00003" for k in range(3)]
  assert corpus.shard_names("a,b", None) == ["a", "b"]
  with pytest.raises(ValueError, match="--num_output_shards=2 names the shards of one"):
    corpus.shard_names("a,b", 2)
  with pytest.raises(ValueError, match="add --runner=DirectRunner"):
    creation.create(creation.CreationOptions(input_file=str(tmp_path / "dir.txt"), output_file="x",
                                 spm_model_file=spm_model, direct_num_workers=2))


def test_the_script_runs_the_pipeline_into_numbered_shards(inputs, spm_model, runs, tmp_path):
  """create_pretraining_data.py --runner=DirectRunner --num_output_shards=3 writes the
  same bytes as the local path's three named files."""
  out = tmp_path / "data" / "train.tfrecord"
  cmd = [f"--input_file={','.join(inputs)}", f"--output_file={out}", "--num_output_shards=3",
         f"--spm_model_file={spm_model}", "--max_seq_length=128", "--max_predictions_per_seq=20",
         "--dupe_factor=2", "--random_seed=5", f"--chunk_mb={CHUNK_MB}",
         "--runner=DirectRunner", "--direct_num_workers=2", "--noprogress"]
  result = run_script("create_pretraining_data.py", *cmd)
  assert result.returncode == 0, result.stderr[-3000:]
  shards = [f"{out}-0000{k}-of-00003" for k in range(3)]
  assert sorted(os.listdir(tmp_path / "data")) == sorted(  # each with its vocabulary's record
      os.path.basename(s) + suffix for s in shards for suffix in ("", ".vocabulary.json"))
  assert _digests(shards) == _digests(runs["local-1"][0])
  assert f"{runs['local-1'][1]['instances']} instances" in result.stdout
