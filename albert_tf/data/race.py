"""RACE: the download's directories -> questions -> four packed choices -> tf.data.

The RACE download has `RACE/{train,dev,test}/{middle,high}/*.txt`, each file
one JSON object: `article`, `questions`, `options` (four per question),
`answers` (letters A-D) and `id`. A level directory holding an `all.txt` of
JSON lines (one such object per line; what the original script read) is
accepted too. Inputs are packed as the original race_utils: a question with
a blank (`_`) has the blank filled with the option, otherwise question + " " +
option; each choice is `[CLS] article [SEP] qa [SEP]`, the qa part cut to its
last `max_qa_length` pieces and the article truncated to fit.
"""

import dataclasses
import glob
import json
import os
from typing import Dict, Iterator, List, Sequence, Tuple

from absl import logging
import tensorflow as tf

from albert_tf.data.records import read_dataset, write_records
from albert_tf.files import fingerprint, read_text
from albert_tf.text.tokenization import FullTokenizer
from albert_tf.progress import progress_bar

LEVELS = ("middle", "high")
LETTERS = "ABCD"
NUM_CHOICES = 4


@dataclasses.dataclass
class RaceExample:
  """One question: its article, the four options and the answer's index (0-3)."""
  qas_id: str
  level: str
  article: str
  question: str
  options: List[str]
  label: int


def split_dir(data_dir: str, split: str) -> str:
  """`<data_dir>/RACE/<split>`, or `<data_dir>/<split>` when data_dir is the RACE folder."""
  for candidate in (os.path.join(data_dir, "RACE", split), os.path.join(data_dir, split)):
    if os.path.isdir(candidate):
      return candidate
  raise FileNotFoundError(f"no RACE {split} split under --data_dir={data_dir} (looked for "
                          f"{os.path.join(data_dir, 'RACE', split)} and "
                          f"{os.path.join(data_dir, split)})")


def _questions(record: dict, where: str, level: str) -> List[RaceExample]:
  for key, kind in (("article", str), ("questions", list), ("options", list), ("answers", list)):
    if not isinstance(record.get(key), kind):
      raise ValueError(f"{where}: missing or mistyped field '{key}' (a {kind.__name__})")
  questions, options, answers = record["questions"], record["options"], record["answers"]
  if not len(questions) == len(options) == len(answers):
    raise ValueError(f"{where}: {len(questions)} questions, {len(options)} option lists and "
                     f"{len(answers)} answers; they must match")
  base = str(record.get("id") or os.path.basename(where.split(":")[0]))
  examples = []
  for i, (question, choices, answer) in enumerate(zip(questions, options, answers)):
    if not isinstance(choices, list) or len(choices) != NUM_CHOICES:
      raise ValueError(f"{where}: question {i} has {len(choices)} options; RACE has "
                       f"{NUM_CHOICES}")
    if answer not in LETTERS or len(answer) != 1:
      raise ValueError(f"{where}: question {i} has answer {answer!r}; expected one of A, B, C, D")
    examples.append(RaceExample(f"{base}-{i}", level, record["article"], str(question),
                                [str(c) for c in choices], LETTERS.index(answer)))
  return examples


def split_files(data_dir: str, split: str, levels: Sequence[str] = LEVELS) -> List[Tuple[str, str]]:
  """(level, file) of every file of a split's level directories, in sorted order; a level
  directory holding `all.txt` (the original's one-object-per-line file) gives that alone."""
  root = split_dir(data_dir, split)
  found = []
  for level in levels:
    directory = os.path.join(root, level)
    if not os.path.isdir(directory):
      raise FileNotFoundError(f"RACE level directory {directory} not found")
    files = sorted(glob.glob(os.path.join(directory, "*.txt")))
    if not files:
      raise FileNotFoundError(f"{directory} holds no .txt files")
    combined = os.path.join(directory, "all.txt")
    found.extend((level, f) for f in ([combined] if combined in files else files))
  return found


def read_examples(data_dir: str, split: str, levels: Sequence[str] = LEVELS) -> List[RaceExample]:
  """Every question of a split's level directories (files in sorted order).

  Errors name the file (and line, for all.txt): malformed JSON, missing
  fields, an option count other than four, an answer outside A-D, and
  missing split or level directories.
  """
  examples = []
  for level, path in split_files(data_dir, split, levels):
    text = read_text(path)
    if os.path.basename(path) != "all.txt":
      examples.extend(_questions(_parse(text, path), path, level))
      continue
    for line_number, line in enumerate(text.split("\n"), 1):
      if line.strip():
        where = f"{path}:{line_number}"
        examples.extend(_questions(_parse(line, where), where, level))
  if not examples:
    raise ValueError(f"no RACE questions in {split_dir(data_dir, split)} ({', '.join(levels)})")
  return examples


def _parse(text: str, where: str) -> dict:
  try:
    record = json.loads(text)
  except json.JSONDecodeError as e:
    raise ValueError(f"{where}: not valid JSON ({e.msg} at line {e.lineno}, column "
                     f"{e.colno})") from None
  if not isinstance(record, dict):
    raise ValueError(f"{where}: expected a JSON object")
  return record


# ----------------------------------------------------------------------------- features

def qa_text(question: str, option: str) -> str:
  """The original: fill the blank with the option, else question + " " + option."""
  if "_" in question:
    return question.replace("_", option)
  return question + " " + option


def pack_choice(article_ids: Sequence[int], qa_ids: Sequence[int], max_seq_length: int,
                max_qa_length: int, tokenizer: FullTokenizer) -> Dict[str, List[int]]:
  """`[CLS] article [SEP] qa [SEP]`: qa keeps its last `max_qa_length` pieces, the article
  is cut to fit; padded to `max_seq_length`."""
  qa_ids = list(qa_ids)[-max_qa_length:]
  article_ids = list(article_ids)[:max(0, max_seq_length - 3 - len(qa_ids))]
  ids = [tokenizer.cls_id] + article_ids + [tokenizer.sep_id] + qa_ids + [tokenizer.sep_id]
  types = [0] * (len(article_ids) + 2) + [1] * (len(qa_ids) + 1)
  padding = max_seq_length - len(ids)
  return dict(input_ids=ids + [tokenizer.pad_id] * padding, input_mask=[1] * len(ids) + [0] * padding,
              segment_ids=types + [0] * padding)


def convert_examples(examples: Sequence[RaceExample], tokenizer: FullTokenizer,
                     max_seq_length: int, max_qa_length: int,
                     progress: bool = False) -> Iterator[Dict[str, list]]:
  """Per question: input_ids, input_mask, segment_ids of its four choices, concatenated
  ([4 * max_seq_length]), and label_ids."""
  if max_seq_length - 3 - max_qa_length <= 0:
    raise ValueError(f"max_seq_length={max_seq_length} leaves no room for the article after "
                     f"max_qa_length={max_qa_length} and 3 special tokens")
  article_cache: Dict[str, List[int]] = {}
  for example in progress_bar(examples, desc="features", unit="q", disable=not progress,
                              leave=False):
    if example.article not in article_cache:
      article_cache.clear()   # the questions of one article come together
      article_cache[example.article] = tokenizer.encode(example.article)
    article_ids = article_cache[example.article]
    packed = [pack_choice(article_ids, tokenizer.encode(qa_text(example.question, option)),
                          max_seq_length, max_qa_length, tokenizer) for option in example.options]
    yield dict(**{k: [i for p in packed for i in p[k]] for k in packed[0]},
               label_ids=example.label)


def cached_features(data_dir: str, split: str, levels: Sequence[str], examples, tokenizer,
                    max_seq_length: int, max_qa_length: int, cached_dir: str,
                    progress: bool = True) -> str:
  """TFRecord of a split's features in `cached_dir`, built once per (files, vocabulary,
  settings): the name carries a fingerprint of all three."""
  files = [f for _, f in split_files(data_dir, split, levels)] + [tokenizer.vocabulary_file]
  key = fingerprint(tokenizer.do_lower_case, max_seq_length, max_qa_length, files=files)
  os.makedirs(cached_dir, exist_ok=True)
  record = os.path.join(cached_dir, f"race_{split}_{'_'.join(levels)}_{key}.tf_record")
  if not os.path.exists(record):
    n = write_records(convert_examples(examples, tokenizer, max_seq_length, max_qa_length,
                                       progress), record)
    logging.info("Wrote %d RACE %s features to %s", n, split, record)
  return record


def dataset(record: str, max_seq_length: int, batch_size: int, is_training: bool,
            seed: int = 0, bucket_by_length: bool = False) -> tf.data.Dataset:
  """Batches of [B, 4, S] model inputs and label_ids [B]; see `records.read_dataset`
  (bucketing cuts S to what the longest of the batch's choices needs)."""
  seq = tf.io.FixedLenFeature([NUM_CHOICES * max_seq_length], tf.int64)
  schema = dict(input_ids=seq, input_mask=seq, segment_ids=seq,
                label_ids=tf.io.FixedLenFeature([], tf.int64))

  def by_choice(batch):
    return {k: v if k == "label_ids" else tf.reshape(v, [-1, NUM_CHOICES, max_seq_length])
            for k, v in batch.items()}

  return read_dataset(record, schema, batch_size, is_training, seed, transform=by_choice,
                      bucket_by_length=bucket_by_length)


def levels_from_flags(high_only: bool, middle_only: bool) -> Tuple[str, ...]:
  if high_only and middle_only:
    raise ValueError("--high_only and --middle_only exclude each other")
  return ("high",) if high_only else ("middle",) if middle_only else LEVELS
