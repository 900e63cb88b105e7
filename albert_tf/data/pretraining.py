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

Memory is bounded by one input file: instances are shuffled within a file,
not across the corpus, and files are processed in parallel by workers.
"""

import collections
import dataclasses
import multiprocessing
import os
import random
import time
from typing import Iterator, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from albert_tf.cli import Checked, Original, option
from albert_tf.files import expand_files
from albert_tf.data.records import first_record, read_dataset, serialize, write_records
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


def is_start_piece(piece: str) -> bool:
  """Whether a SentencePiece piece starts a whole-word masking candidate (the original rule)."""
  return (piece.startswith(tokenization.SPIECE_UNDERLINE) or piece.startswith("<")
          or piece in _SPECIAL_PIECES
          or not all(c.lower() in _ENGLISH or c in _SPECIAL_PIECES for c in piece))


def read_documents(path: str, tokenizer: tokenization.FullTokenizer) -> List[List[List[str]]]:
  """Documents of tokenized sentences from one file (blank lines separate documents)."""
  documents = [[]]
  with tf.io.gfile.GFile(path, "rb") as f:
    for raw in f:
      line = raw.decode("utf-8", "ignore").strip()
      if not line:
        documents.append([])
        continue
      tokens = tokenizer.tokenize(line)
      if tokens:
        documents[-1].append(tokens)
  return [d for d in documents if d]


def ngram_probabilities(opts: DataOptions) -> np.ndarray:
  """p(n) for n = 1..ngram: proportional to 1/n, reversed without favor_shorter_ngram."""
  pvals = 1.0 / np.arange(1, opts.ngram + 1)
  pvals /= pvals.sum()
  return pvals if opts.favor_shorter_ngram else pvals[::-1].copy()


def _choose_span(cand, pvals, limit, covered, nprng):
  """An n-gram of candidate words from `cand` (lists of piece indexes) that fits in `limit`."""
  k = len(cand)
  n = nprng.choice(np.arange(1, k + 1), p=pvals[:k] / pvals[:k].sum())
  index_set = sum(cand[n - 1], [])
  n -= 1
  while len(index_set) > limit and n > 0:  # shorter n-grams until it fits
    index_set = sum(cand[n - 1], [])
    n -= 1
  if len(index_set) > limit or any(i in covered for i in index_set):
    return None
  return index_set


def create_masked_lm_predictions(tokens: Sequence[str], opts: DataOptions, vocab_size: int,
                                 tokenizer, rng: random.Random, nprng: np.random.Generator):
  """(output_tokens, masked positions, masked labels, token_boundary), as the original."""
  cand_indexes, token_boundary = [], [0] * len(tokens)
  for i, token in enumerate(tokens):
    if token in ("[CLS]", "[SEP]"):
      token_boundary[i] = 1
      continue
    if opts.do_whole_word_mask and cand_indexes and not is_start_piece(token):
      cand_indexes[-1].append(i)
    else:
      cand_indexes.append([i])
      if is_start_piece(token):
        token_boundary[i] = 1
  output = list(tokens)
  if opts.masked_lm_prob == 0:
    return output, [], [], token_boundary
  num_to_predict = min(opts.max_predictions_per_seq,
                       max(1, int(round(len(tokens) * opts.masked_lm_prob))))
  pvals = ngram_probabilities(opts)
  ngram_indexes = [[cand_indexes[i:i + n] for n in range(1, opts.ngram + 1)]
                   for i in range(len(cand_indexes))]
  # (Near the end the longer "n-grams" hold fewer words, as in the original.)
  rng.shuffle(ngram_indexes)

  masked, covered = [], set()
  for cand in ngram_indexes:
    if len(masked) >= num_to_predict:
      break
    if not cand:
      continue
    index_set = _choose_span(cand, pvals, num_to_predict - len(masked), covered, nprng)
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
    rng.shuffle(ngram_indexes)
    selected = set()
    for cand in ngram_indexes:
      if len(selected) >= num_to_predict:
        break
      if not cand:
        continue
      index_set = _choose_span(cand, pvals, num_to_predict - len(selected), covered | selected,
                               nprng)
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

_WORKER = {}


def _init_worker(spm_model_file, do_lower_case, opts, vocab_file=None):
  _WORKER["tokenizer"] = tokenization.FullTokenizer(vocab_file=vocab_file,
                                                    do_lower_case=do_lower_case,
                                                    spm_model_file=spm_model_file)
  _WORKER["opts"] = opts


def _file_examples(job):
  """Serialized examples of one input file (its own seeded RNGs, shuffled within the file)."""
  file_index, path = job
  tokenizer, opts = _WORKER["tokenizer"], _WORKER["opts"]
  rng = random.Random(f"{opts.random_seed}:{file_index}")
  nprng = np.random.default_rng([opts.random_seed, file_index])
  documents = read_documents(path, tokenizer)
  rng.shuffle(documents)
  instances = []
  for _ in range(opts.dupe_factor):
    for i in range(len(documents)):
      instances.extend(create_instances_from_document(documents, i, opts, tokenizer,
                                                      tokenizer.vocab_size, rng, nprng))
  rng.shuffle(instances)
  stats = dict(documents=len(documents), instances=len(instances),
               masked=sum(len(x.masked_lm_positions) for x in instances),
               tokens=sum(len(x.tokens) for x in instances))
  return path, [instance_to_example(x, tokenizer, opts) for x in instances], stats


def write_pretraining_data(input_files: Sequence[str], output_files: Sequence[str],
                           spm_model_file: Optional[str], opts: DataOptions,
                           do_lower_case: bool = True, num_workers: int = 1,
                           overwrite: bool = False, progress: bool = True,
                           vocab_file: Optional[str] = None) -> dict:
  """Writes TFRecord shards of pretraining examples; returns counts.

  The vocabulary is `spm_model_file` (SentencePiece) or, without it,
  `vocab_file` (WordPiece), as `tokenization.FullTokenizer` takes them.

  Input file k is processed with RNGs seeded by (random_seed, k), so output is
  deterministic for a seed whatever `num_workers`. Examples go round-robin
  to the output files, each written under a temporary name and renamed when
  complete; existing outputs are refused unless `overwrite`.
  """
  existing = [f for f in output_files if tf.io.gfile.exists(f)]
  if existing and not overwrite:
    raise FileExistsError(f"--output_file {', '.join(existing)} already exists; "
                          "pass --overwrite to replace it")
  # Fails early, naming the file, if the model is unreadable; reused when num_workers == 1.
  tokenizer = tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case,
                                         spm_model_file=spm_model_file)
  for token_id in ("cls_id", "sep_id", "mask_id"):   # the instances need all three
    getattr(tokenizer, token_id)
  for f in output_files:
    os.makedirs(os.path.dirname(os.path.abspath(f)), exist_ok=True)
  totals = collections.Counter()
  jobs = list(enumerate(input_files))
  bar = progress_bar(total=len(jobs), unit="file", disable=not progress,
                     desc="create_pretraining_data")
  pool = None
  if num_workers > 1:
    pool = multiprocessing.get_context("spawn").Pool(
        num_workers, _init_worker, (spm_model_file, do_lower_case, opts, vocab_file))
    results: Iterator = pool.imap(_file_examples, jobs)
  else:
    _WORKER.update(tokenizer=tokenizer, opts=opts)
    results = map(_file_examples, jobs)

  def examples():
    for _, serialized, stats in results:
      yield from serialized
      totals.update(stats)
      bar.update(1)
      bar.set_postfix(instances=totals["instances"])

  try:
    write_records(examples(), output_files,
                  if_none=f"no pretraining examples from {', '.join(input_files)}: no text "
                  "(one sentence per line, a blank line between documents)")
  finally:
    bar.close()
    if pool:
      pool.terminate()
  return dict(totals, files=len(input_files))


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


# ----------------------------------------------------------------------------- the command

# Flags of the original create_pretraining_data.py that are not options here.
ORIGINAL_FLAGS = {
    "input_file_mode": Original(str, "r", "ignored: input files are read as UTF-8 text"),
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class CreationOptions(DataOptions):
  """create_pretraining_data.py's flags: the files, and the knobs of DataOptions."""
  input_file: str = option(help="Input text files: comma-separated paths or globs.")
  output_file: str = option(help="Output TFRecord files, comma-separated (shards).")
  spm_model_file: Optional[str] = option(None, "SentencePiece model of the vocabulary.")
  vocab_file: Optional[str] = option(None, "WordPiece vocabulary (vocab_chinese.txt), instead "
                                     "of --spm_model_file.")
  do_lower_case: bool = option(True, "Lower-case the input text.")
  num_workers: int = option(1, "Processes working on input files in parallel.", at_least=1)
  overwrite: bool = option(False, "Replace existing output files.")
  progress: bool = option(True, "Show a progress bar.")


def create(opts: CreationOptions) -> dict:
  """What create_pretraining_data.py does; returns the counts."""
  started = time.time()
  knobs = DataOptions(**{f.name: getattr(opts, f.name) for f in dataclasses.fields(DataOptions)})
  outputs = [f.strip() for f in opts.output_file.split(",") if f.strip()]
  if bool(opts.spm_model_file) == bool(opts.vocab_file):
    raise ValueError("pass exactly one of --spm_model_file (a SentencePiece model such as "
                     "30k-clean.model) and --vocab_file (a WordPiece vocabulary such as "
                     "vocab_chinese.txt)")
  stats = write_pretraining_data(expand_files(opts.input_file), outputs, opts.spm_model_file,
                                 knobs, do_lower_case=opts.do_lower_case,
                                 num_workers=opts.num_workers, overwrite=opts.overwrite,
                                 progress=opts.progress, vocab_file=opts.vocab_file)
  print(f"Wrote {stats.get('instances', 0)} examples from {stats['files']} files "
        f"({stats.get('documents', 0)} documents) to {len(outputs)} files in "
        f"{time.time() - started:.1f} s; masked {stats.get('masked', 0)} of "
        f"{stats.get('tokens', 0)} tokens")
  return stats
