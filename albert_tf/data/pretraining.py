"""ALBERT pretraining data: SentencePiece n-gram masking and sentence-order pairs.

The semantics of the original `create_pretraining_data.py`
(google-research/albert), written as TFRecords with its feature names, so
data made by either tool trains in either:

* documents are read one sentence per line, blank lines between documents;
* segments A and B are contiguous sentences of one document; with
  probability 0.5 they are swapped (a sentence-order negative, label 1),
  or, with `random_next_sentence`, B comes from another document (NSP);
  a chunk of one sentence always takes B from another document, as the
  original does;
* n-gram spans over whole-word candidates (pieces that start a word), n <= 3
  with p(n) proportional to 1/n (reversed without `favor_shorter_ngram`;
  the original inverted its own flag: its default sampled long n-grams most,
  which contradicts the flag's name and the paper);
* 80% [MASK], 10% a random piece, 10% unchanged.

The corpus is processed in chunks of whole documents (`albert_tf.data.corpus`),
so memory is bounded by one chunk; every example gets a seeded 64-bit key that
picks its shard and its place in it, one global shuffle of the corpus whose
output is the same, byte for byte, for any number of workers and for the Beam
pipeline (`albert_tf.data.pretraining_beam`). create_pretraining_data.py's flags and the
choice between the two are `albert_tf.commands.create_pretraining_data`'s.
"""

import dataclasses
import functools
import json
import multiprocessing
import os
import random
import shutil
import tempfile
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from albert_tf import files as files_lib
from albert_tf.cli import Checked, option
from albert_tf.data import corpus, pipeline
from albert_tf.data.records import first_record, read_dataset, serialize
from albert_tf.text import packing, tokenization
from albert_tf.progress import progress_bar

_SPECIAL_PIECES = set('!"#$%&\'()*+,-./:;?@[\\]^_`{|}~') | {"€", "£"}
_ENGLISH = set("abcdefghijklmnopqrstuvwxyz")

# The original's feature names and types (int64 lists, masked_lm_weights float).
FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids", "token_boundary",
                 "masked_lm_positions", "masked_lm_ids", "masked_lm_weights",
                 "next_sentence_labels")


@dataclasses.dataclass(frozen=True, kw_only=True)
class DataOptions(Checked):
  """The original script's knobs (its flag names and defaults)."""
  max_seq_length: int = option(512, "Maximum sequence length.", at_least=5)
  max_predictions_per_seq: int = option(20, "Maximum masked-LM predictions per sequence.",
                                        at_least=1)
  masked_lm_prob: float = option(0.15, "Masked-LM probability.", at_least=0, at_most=1)
  short_seq_prob: float = option(0.1, "Probability of a shorter-than-maximum sequence.",
                                 at_least=0, at_most=1)
  dupe_factor: int = option(40, "Times to duplicate the input with different masks.", at_least=1)
  ngram: int = option(3, "Maximum n-gram length to mask.", at_least=1)
  do_whole_word_mask: bool = option(True, "Mask whole words (SentencePiece word starts).")
  do_permutation: bool = option(False, "Also permute spans (the original's extra task).")
  favor_shorter_ngram: bool = option(True, "p(n) proportional to 1/n; false reverses it.")
  random_next_sentence: bool = option(False, "NSP (B from another document) instead of SOP.")
  random_seed: int = option(12345, "Seed: the output is deterministic for a seed.")


@dataclasses.dataclass
class TrainingInstance:
  tokens: List[str]
  segment_ids: List[int]
  is_random_next: bool
  token_boundary: List[int]
  masked_lm_positions: List[int]
  masked_lm_labels: List[str]


@functools.lru_cache(maxsize=1 << 17)
def is_start_piece(piece: str) -> bool:
  """Whether a SentencePiece piece starts a whole-word masking candidate (the original rule)."""
  return (piece.startswith(tokenization.SPIECE_UNDERLINE) or piece.startswith("<")
          or piece in _SPECIAL_PIECES
          or not all(c.lower() in _ENGLISH or c in _SPECIAL_PIECES for c in piece))


def read_documents(path: str, tokenizer: tokenization.FullTokenizer,
                   report: Optional[corpus.Report] = None) -> List[List[List[str]]]:
  """Documents of tokenized sentences from one file (blank lines separate documents)."""
  whole = pipeline.whole_file(path)
  return read_chunk_documents(whole, tokenizer, report)


def read_chunk_documents(chunk: pipeline.Chunk, tokenizer: tokenization.FullTokenizer,
                         report: Optional[corpus.Report] = None) -> List[List[List[str]]]:
  """Documents of tokenized sentences of a chunk. Bytes that are not UTF-8 are dropped (as
  the original does) and lines that tokenize to nothing are skipped; both are counted in
  `report` with the place of the first few."""
  report = corpus.Report() if report is None else report
  documents: List[List[List[str]]] = []
  waiting = []             # (document, line number, text): tokenized a batch at a time

  def tokenize_waiting():
    texts = [text for _, _, text in waiting]
    for (document, number, _), tokens in zip(waiting, tokenizer.tokenize_lines(texts)):
      if tokens:
        documents[document].append(tokens)
      else:
        report.problem("empty_lines", chunk, number)
    waiting.clear()

  new_document = True
  for number, raw in pipeline.chunk_lines(chunk):
    try:
      line = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
      line = raw.decode("utf-8", "ignore").strip()
      report.problem("invalid_utf8", chunk, number)
    if not line:
      new_document = True
      continue
    if new_document:
      documents.append([])
      new_document = False
    waiting.append((len(documents) - 1, number, line))
    if len(waiting) >= 4096:
      tokenize_waiting()
  tokenize_waiting()
  return [d for d in documents if d]


def ngram_probabilities(opts: DataOptions) -> np.ndarray:
  """p(n) for n = 1..ngram: proportional to 1/n, reversed without favor_shorter_ngram."""
  pvals = 1.0 / np.arange(1, opts.ngram + 1)
  pvals /= pvals.sum()
  return pvals if opts.favor_shorter_ngram else pvals[::-1].copy()


@functools.lru_cache(maxsize=16)
def ngram_cdf(opts: DataOptions) -> np.ndarray:
  """The cumulative p(n) that `numpy.random.Generator.choice(range(1, ngram + 1), p=...)`
  draws with: one `random()` per draw, searched in it, gives the same n as choice."""
  p = ngram_probabilities(opts)
  cdf = np.cumsum(p / p.sum())
  return cdf / cdf[-1]


def _choose_span(cand_indexes, start, cdf, limit, covered, nprng):
  """The pieces of an n-gram of candidate words from word `start` (n drawn from `cdf`,
  shortened until it fits in `limit`), or None if it overlaps `covered`.

  Near the end of the sequence the n-grams hold fewer words, as in the original."""
  n = int(np.searchsorted(cdf, nprng.random(), side="right")) + 1
  index_set = [i for word in cand_indexes[start:start + n] for i in word]
  n -= 1
  while len(index_set) > limit and n > 0:  # shorter n-grams until it fits
    index_set = [i for word in cand_indexes[start:start + n] for i in word]
    n -= 1
  if len(index_set) > limit or any(i in covered for i in index_set):
    return None
  return index_set


def create_masked_lm_predictions(tokens: Sequence[str], opts: DataOptions, vocab_size: int,
                                 tokenizer, rng: random.Random, nprng: np.random.Generator):
  """(output_tokens, masked positions, masked labels, token_boundary), as the original.

  The original lists every word's n-grams and shuffles that list; shuffling the words'
  indexes draws the same permutation, and the n-grams of a word are built only when
  the loop reaches it (it stops after about `max_predictions_per_seq` of them)."""
  cand_indexes, token_boundary = [], [0] * len(tokens)
  for i, token in enumerate(tokens):
    if token in ("[CLS]", "[SEP]"):
      token_boundary[i] = 1
      continue
    start = is_start_piece(token)
    if opts.do_whole_word_mask and cand_indexes and not start:
      cand_indexes[-1].append(i)
    else:
      cand_indexes.append([i])
      if start:
        token_boundary[i] = 1
  output = list(tokens)
  if opts.masked_lm_prob == 0:
    return output, [], [], token_boundary
  num_to_predict = min(opts.max_predictions_per_seq,
                       max(1, int(round(len(tokens) * opts.masked_lm_prob))))
  cdf = ngram_cdf(opts)
  order = list(range(len(cand_indexes)))
  rng.shuffle(order)

  masked, covered = [], set()
  for start in order:
    if len(masked) >= num_to_predict:
      break
    index_set = _choose_span(cand_indexes, start, cdf, num_to_predict - len(masked), covered,
                             nprng)
    if index_set is None:
      continue
    for index in index_set:
      covered.add(index)
      if rng.random() < 0.8:
        replacement = "[MASK]"
      elif rng.random() < 0.5:
        replacement = tokens[index]
      else:
        replacement = tokenizer.convert_ids_to_tokens([rng.randint(0, vocab_size - 1)])[0]
      output[index] = replacement
      masked.append((index, tokens[index]))

  if opts.do_permutation:  # the original's extra task: shuffle further spans among themselves
    rng.shuffle(order)
    selected = set()
    for start in order:
      if len(selected) >= num_to_predict:
        break
      index_set = _choose_span(cand_indexes, start, cdf, num_to_predict - len(selected),
                               covered | selected, nprng)
      if index_set is not None:
        selected.update(index_set)
    selected = sorted(selected)
    permuted = list(selected)
    rng.shuffle(permuted)
    original = list(output)
    for src, tgt in zip(selected, permuted):
      output[src] = original[tgt]
      masked.append((src, original[src]))

  masked.sort()
  return output, [i for i, _ in masked], [t for _, t in masked], token_boundary


def create_instances_from_document(documents, index, opts: DataOptions, tokenizer, vocab_size,
                                   rng: random.Random, nprng) -> List[TrainingInstance]:
  """Instances from `documents[index]`, as the original (SOP or NSP pairs)."""
  document = documents[index]
  max_num_tokens = opts.max_seq_length - 3
  target_seq_length = max_num_tokens
  if rng.random() < opts.short_seq_prob:
    target_seq_length = rng.randint(2, max_num_tokens)
  instances, chunk, length, i = [], [], 0, 0
  while i < len(document):
    chunk.append(document[i])
    length += len(document[i])
    if i == len(document) - 1 or length >= target_seq_length:
      a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
      tokens_a = [t for s in chunk[:a_end] for t in s]
      tokens_b = []
      if len(chunk) == 1 or (opts.random_next_sentence and rng.random() < 0.5):
        is_random_next = True
        target_b_length = target_seq_length - len(tokens_a)
        other = index
        for _ in range(10):
          other = rng.randint(0, len(documents) - 1)
          if other != index:
            break
        random_document = documents[other]
        for sentence in random_document[rng.randint(0, len(random_document) - 1):]:
          tokens_b.extend(sentence)
          if len(tokens_b) >= target_b_length:
            break
        i -= len(chunk) - a_end  # put the unused sentences back
      elif not opts.random_next_sentence and rng.random() < 0.5:
        is_random_next = True  # sentence-order negative: B before A
        tokens_b = [t for s in chunk[a_end:] for t in s]
        tokens_a, tokens_b = tokens_b, tokens_a
      else:
        is_random_next = False
        tokens_b = [t for s in chunk[a_end:] for t in s]
      packing.truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
      if tokens_a and tokens_b:
        tokens = ["[CLS]"] + tokens_a + ["[SEP]"] + tokens_b + ["[SEP]"]
        segment_ids = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
        output, positions, labels, boundary = create_masked_lm_predictions(
            tokens, opts, vocab_size, tokenizer, rng, nprng)
        instances.append(TrainingInstance(output, segment_ids, is_random_next, boundary,
                                          positions, labels))
      chunk, length = [], 0
    i += 1
  return instances


def instance_to_example(instance: TrainingInstance, tokenizer, opts: DataOptions) -> bytes:
  """A serialized tf.train.Example with the original's features, padded as the original."""
  n = opts.max_seq_length
  input_ids = tokenizer.convert_tokens_to_ids(instance.tokens)
  pad = n - len(input_ids)
  positions = list(instance.masked_lm_positions)
  ids = tokenizer.convert_tokens_to_ids(instance.masked_lm_labels)
  mpad = opts.max_predictions_per_seq * (1 + int(opts.do_permutation)) - len(positions)
  return serialize(dict(
      input_ids=input_ids + [0] * pad, input_mask=[1] * len(input_ids) + [0] * pad,
      segment_ids=instance.segment_ids + [0] * pad,
      token_boundary=instance.token_boundary + [0] * pad,
      masked_lm_positions=positions + [0] * mpad, masked_lm_ids=ids + [0] * mpad,
      masked_lm_weights=[1.0] * len(ids) + [0.0] * mpad,
      next_sentence_labels=[1 if instance.is_random_next else 0]))


def feature_spec(max_seq_length: int, max_predictions_per_seq: int):
  """tf.io parsing spec of the pretraining TFRecords."""
  s, p = max_seq_length, max_predictions_per_seq
  return {
      "input_ids": tf.io.FixedLenFeature([s], tf.int64),
      "input_mask": tf.io.FixedLenFeature([s], tf.int64),
      "segment_ids": tf.io.FixedLenFeature([s], tf.int64),
      "token_boundary": tf.io.FixedLenFeature([s], tf.int64),
      "masked_lm_positions": tf.io.FixedLenFeature([p], tf.int64),
      "masked_lm_ids": tf.io.FixedLenFeature([p], tf.int64),
      "masked_lm_weights": tf.io.FixedLenFeature([p], tf.float32),
      "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
  }


# ----------------------------------------------------------------------------- files

def chunk_examples(chunk: pipeline.Chunk, tokenizer, opts: DataOptions,
                   report: corpus.Report) -> Iterator[Tuple[int, bytes]]:
  """(key, serialized example) of every instance of a chunk, its `dupe_factor` rounds.

  The chunk's RNGs are seeded by (random_seed, file, chunk), so its instances depend
  on nothing else; a sentence B taken from another document comes from the same chunk.
  Yields as it goes: memory holds the chunk's documents, not its instances.
  """
  rng = random.Random(f"{opts.random_seed}:{chunk.file_index}:{chunk.chunk_index}")
  nprng = np.random.default_rng([opts.random_seed, chunk.file_index, chunk.chunk_index])
  documents = read_chunk_documents(chunk, tokenizer, report)
  rng.shuffle(documents)
  report["documents"] += len(documents)
  half = opts.max_seq_length / 2
  index = 0
  for _ in range(opts.dupe_factor):
    for i in range(len(documents)):
      for x in create_instances_from_document(documents, i, opts, tokenizer,
                                              tokenizer.vocab_size, rng, nprng):
        report["instances"] += 1
        report["tokens"] += len(x.tokens)
        report["masked"] += len(x.masked_lm_positions)
        report["short"] += len(x.tokens) < half
        yield (corpus.example_key(opts.random_seed, chunk.file_index, chunk.chunk_index, index),
               instance_to_example(x, tokenizer, opts))
        index += 1


def plan(input_files: Sequence[str], chunk_mb: float) -> List[pipeline.Chunk]:
  """Every chunk of the corpus, file by file."""
  chunk_bytes = max(1, int(chunk_mb * 2**20))
  return [c for k, path in enumerate(input_files) for c in pipeline.document_chunks(k, path, chunk_bytes)]


def make_tokenizer(spm_model_file, do_lower_case, vocab_file=None):
  """The tokenizer of the flags; fails early, naming the file, if it is unreadable or lacks
  [CLS], [SEP] or [MASK] (every instance needs them)."""
  tokenizer = tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case,
                                         spm_model_file=spm_model_file)
  for token_id in ("cls_id", "sep_id", "mask_id"):
    getattr(tokenizer, token_id)
  return tokenizer


_WORKER = {}


def _init_worker(spm_model_file, do_lower_case, opts, vocab_file, spill_dir, num_shards,
                 tokenizer=None):
  _WORKER["tokenizer"] = tokenizer or make_tokenizer(spm_model_file, do_lower_case, vocab_file)
  _WORKER["opts"] = opts
  _WORKER["spill"] = corpus.Spill(spill_dir, f"{os.getpid()}", num_shards)


def _spill_chunk(chunk: pipeline.Chunk) -> corpus.Report:
  """Processes one chunk into this process's spill files; returns its report."""
  report, spill = corpus.Report(), _WORKER["spill"]
  for key, serialized in chunk_examples(chunk, _WORKER["tokenizer"], _WORKER["opts"], report):
    spill.add(key, serialized)
  spill.flush()
  return report


def check_outputs(output_files: Sequence[str], overwrite: bool) -> None:
  existing = [f for f in output_files if tf.io.gfile.exists(f)]
  if existing and not overwrite:
    raise FileExistsError(f"--output_file {', '.join(existing)} already exists; "
                          "pass --overwrite to replace it")
  for f in output_files:
    tf.io.gfile.makedirs(os.path.dirname(os.path.abspath(f)) if "://" not in f
                         else os.path.dirname(f))


VOCABULARY_RECORD = ".vocabulary.json"   # beside each shard: the vocabulary it was made with


def write_vocabulary_records(output_files: Sequence[str], spm_model_file: Optional[str],
                             vocab_file: Optional[str], do_lower_case: bool) -> None:
  """`<shard>.vocabulary.json` beside each shard: the vocabulary's path, its fingerprint
  and the casing, which run_pretraining.py records in its run (so that fine-tuning,
  exporting and converting from it need no vocabulary flag)."""
  vocabulary = spm_model_file or vocab_file
  record = dict(spm_model_file=os.path.abspath(spm_model_file) if spm_model_file else None,
                vocab_file=os.path.abspath(vocab_file) if vocab_file else None,
                do_lower_case=bool(do_lower_case),
                fingerprint=files_lib.fingerprint(files=[vocabulary]))
  for f in output_files:
    with tf.io.gfile.GFile(f + VOCABULARY_RECORD, "w") as out:
      out.write(json.dumps(record, indent=2, sort_keys=True) + "\n")


def recorded_vocabulary(data_files: Sequence[str]) -> Optional[Dict[str, object]]:
  """The vocabulary the shards `data_files` record (`write_vocabulary_records`), or None
  when none does; shards made with different ones are an error naming two of them."""
  found = {}
  for f in data_files:
    if tf.io.gfile.exists(f + VOCABULARY_RECORD):
      with tf.io.gfile.GFile(f + VOCABULARY_RECORD) as record:
        found[f] = json.load(record)
  if not found:
    return None
  first, record = next(iter(found.items()))
  for f, other in found.items():
    if other != record:
      raise ValueError(f"--input_file: {first} and {f} were made with different vocabularies "
                       f"({record.get('spm_model_file') or record.get('vocab_file')}, "
                       f"{other.get('spm_model_file') or other.get('vocab_file')})")
  return record


def no_examples_error(input_files: Sequence[str], report: corpus.Report) -> ValueError:
  problems = "; ".join(report.describe_problems())
  return ValueError(f"no pretraining examples from {', '.join(input_files)}: no text (one "
                    "sentence per line, a blank line between documents)"
                    + (f"; {problems}" if problems else ""))


def write_pretraining_data(input_files: Sequence[str], output_files: Sequence[str],
                           spm_model_file: Optional[str], opts: DataOptions,
                           do_lower_case: bool = True, num_workers: int = 1,
                           overwrite: bool = False, progress: bool = True,
                           vocab_file: Optional[str] = None,
                           chunk_mb: float = pipeline.DEFAULT_CHUNK_MB) -> corpus.Report:
  """Writes TFRecord shards of pretraining examples (the local path); returns the report.

  The vocabulary is `spm_model_file` (SentencePiece) or, without it,
  `vocab_file` (WordPiece), as `tokenization.FullTokenizer` takes them.

  The corpus is cut into chunks of whole documents (`chunk_mb` of one file), which
  `num_workers` processes turn into keyed examples (`chunk_examples`) and spill to
  per-shard files; each shard is then sorted by key and written under a temporary
  name, renamed when complete. The shards are the same files, byte for byte, as the
  Beam pipeline's (`albert_tf.data.pretraining_beam`) and the same for any
  `num_workers`. Existing outputs are refused unless `overwrite`.
  """
  check_outputs(output_files, overwrite)
  corpus.check_inputs(input_files)
  tokenizer = make_tokenizer(spm_model_file, do_lower_case, vocab_file)
  chunks = plan(input_files, chunk_mb)
  report = corpus.Report()
  spill_dir = tempfile.mkdtemp(prefix=".create_pretraining_data-",
                               dir=os.path.dirname(os.path.abspath(output_files[0])))
  bar = progress_bar(total=sum(c.end - c.start for c in chunks), unit="B", unit_scale=True,
                     disable=not progress, desc="create_pretraining_data")
  pool = None
  try:
    args = (spm_model_file, do_lower_case, opts, vocab_file, spill_dir, len(output_files))
    if num_workers > 1:
      pool = multiprocessing.get_context("spawn").Pool(num_workers, _init_worker, args)
      results: Iterator = pool.imap(_spill_chunk, chunks)
    else:
      _init_worker(*args, tokenizer=tokenizer)
      results = map(_spill_chunk, chunks)
    for chunk, chunk_report in zip(chunks, results):
      report.merge(chunk_report)
      bar.update(chunk.end - chunk.start)
      bar.set_postfix(instances=report["instances"])
    if not report["instances"]:
      raise no_examples_error(input_files, report)
    for shard, path in enumerate(output_files):
      corpus.write_shard(path, corpus.read_spills(spill_dir, shard))
  finally:
    bar.close()
    if pool:
      pool.terminate()
    shutil.rmtree(spill_dir, ignore_errors=True)
  report["files"] = len(input_files)
  return report


# ----------------------------------------------------------------------------- reading

def dataset(files: List[str], global_batch_size: int, max_seq_length: int,
            max_predictions_per_seq: int, is_training: bool = True,
            seed: int = 0, bucket_by_length: bool = False) -> tf.data.Dataset:
  """Global batches of model inputs from pretraining TFRecords (original feature names).

  Output keys: input_word_ids, input_mask, input_type_ids, masked_lm_positions,
  masked_lm_ids, masked_lm_weights, next_sentence_labels [B]; see
  `records.read_dataset` for the order.
  """
  schema = feature_spec(max_seq_length, max_predictions_per_seq)
  del schema["token_boundary"]

  def labels(batch):
    batch["next_sentence_labels"] = batch["next_sentence_labels"][:, 0]
    return batch

  return read_dataset(files, schema, global_batch_size, is_training, seed, transform=labels,
                      bucket_by_length=bucket_by_length)


def check_records(files: List[str], max_seq_length: int, max_predictions_per_seq: int) -> None:
  """Fails early, naming the file, when records do not have the flags' lengths."""
  example = first_record(files[0])
  if example is None:
    raise ValueError(f"--input_file {files[0]} holds no records")
  features = example.features.feature
  for name, want, flag in (("input_ids", max_seq_length, "max_seq_length"),
                           ("masked_lm_positions", max_predictions_per_seq,
                            "max_predictions_per_seq")):
    if name not in features:
      raise ValueError(f"{files[0]}: records lack the feature {name!r}; not pretraining data?")
    got = len(features[name].int64_list.value)
    if got != want:
      raise ValueError(f"{files[0]}: {name} has length {got} but --{flag}={want}; "
                       "use the values the data was created with")
