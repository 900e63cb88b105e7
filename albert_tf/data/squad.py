"""SQuAD v1.1 / v2.0: JSON as released -> examples -> windowed span features -> tf.data,
and model outputs -> answer texts.

Answers are located by characters. Each context is tokenized once with the
character span of every piece (`FullTokenizer.tokenize_with_offsets`), so a
gold answer maps to pieces by its `answer_start` and a predicted span of
pieces maps back to the exact characters of the original context (accents,
spacing and punctuation as written). Contexts longer than a window are
covered by windows `doc_stride` pieces apart; a piece in several windows is
answered only from the window where it has the most context on both sides
(the original's max-context rule).

A feature is `[CLS] question [SEP] context-window [SEP]`, segment 0 then 1, as
the original. `p_mask` is 1 where an answer cannot start or end (question,
[SEP], padding); [CLS] stays open, since it is where "no answer" points.
"""

import dataclasses
import json
import os
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from albert_tf import files as files_lib
from albert_tf.data.records import read_dataset, write_records
from albert_tf.text.tokenization import FullTokenizer
from albert_tf.progress import progress_bar

FIRST_UNIQUE_ID = 1000000000


@dataclasses.dataclass
class SquadExample:
  """One question. Training uses the first answer; evaluation reads `dataset` itself."""
  qas_id: str
  question_text: str
  context: str
  answer_text: str = ""
  answer_start: int = -1          # character offset of answer_text in context
  is_impossible: bool = False


@dataclasses.dataclass
class ReadStats:
  """What read_squad_examples left out, and why."""
  questions: int = 0
  mismatched_answers: List[str] = dataclasses.field(default_factory=list)
  empty_questions: List[str] = dataclasses.field(default_factory=list)


# ----------------------------------------------------------------------------- reading

def load_dataset(path: str) -> List[dict]:
  """The `data` list of a SQuAD JSON file; errors name the file (and line for bad JSON)."""
  if not os.path.exists(path):
    raise FileNotFoundError(f"SQuAD file {path} not found")
  try:
    content = json.loads(files_lib.read_text(path))
  except json.JSONDecodeError as e:
    raise ValueError(f"{path}:{e.lineno}:{e.colno}: not valid JSON ({e.msg})") from None
  if not isinstance(content, dict) or not isinstance(content.get("data"), list):
    raise ValueError(f"{path}: expected a JSON object with a 'data' list (the SQuAD format)")
  return content["data"]


def _field(obj, key: str, kind, where: str):
  if not isinstance(obj, dict) or key not in obj:
    raise ValueError(f"{where}: missing field '{key}'")
  value = obj[key]
  if not isinstance(value, kind) or isinstance(value, bool):
    names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
    raise ValueError(f"{where}: field '{key}' should be a {names}, found {type(value).__name__}")
  return value


def read_squad_examples(path: str, is_training: bool, version_2_with_negative: bool,
                        dataset: Optional[List[dict]] = None
                        ) -> Tuple[List[SquadExample], ReadStats]:
  """Every question of a SQuAD file, checked.

  Missing or mistyped fields and duplicate ids are errors naming their place
  (`file: data[0].paragraphs[2].qas[1]`). For training, a question whose
  `answer_start` does not point at its answer text is skipped with a warning
  naming its id, as is an empty question; both are counted in the stats. For
  prediction every question is kept.

  Args:
    path: the JSON file (train-v1.1.json, dev-v2.0.json, ...).
    is_training: read answers for training (the first one of each question).
    version_2_with_negative: questions may be unanswerable (`is_impossible`).
    dataset: the already-loaded `data` list of `path`, if any.
  """
  data = load_dataset(path) if dataset is None else dataset
  examples, stats, seen = [], ReadStats(), set()
  for a, article in enumerate(data):
    for p, paragraph in enumerate(_field(article, "paragraphs", list, f"{path}: data[{a}]")):
      where = f"{path}: data[{a}].paragraphs[{p}]"
      context = _field(paragraph, "context", str, where)
      for q, qa in enumerate(_field(paragraph, "qas", list, where)):
        here = f"{where}.qas[{q}]"
        qas_id = str(_field(qa, "id", (str, int), here))
        here += f" (id {qas_id})"
        question = _field(qa, "question", str, here)
        if qas_id in seen:
          raise ValueError(f"{here}: duplicate question id")
        seen.add(qas_id)
        stats.questions += 1
        if not question.strip():
          stats.empty_questions.append(qas_id)
          logging.warning("%s: empty question%s", here, "; skipped" if is_training else "")
          if is_training:
            continue
        impossible = bool(qa.get("is_impossible", False))
        if impossible and not version_2_with_negative:  # training and prediction files
          raise ValueError(f"{here}: an unanswerable question (is_impossible) in SQuAD v1.1 "
                           "mode; pass --version_2_with_negative for SQuAD 2.0 data")
        example = SquadExample(qas_id, question, context, is_impossible=impossible)
        if is_training and not impossible:
          answers = _field(qa, "answers", list, here)
          if not answers:
            raise ValueError(f"{here}: no answers for an answerable training question")
          answer_text = _field(answers[0], "text", str, here + ".answers[0]")
          start = _field(answers[0], "answer_start", int, here + ".answers[0]")
          if context[start:start + len(answer_text)] != answer_text or not answer_text.strip():
            stats.mismatched_answers.append(qas_id)
            logging.warning("%s: answer_start %d does not point at the answer %r (context has "
                            "%r there); skipped", here, start, answer_text,
                            context[start:start + len(answer_text)])
            continue
          example.answer_text, example.answer_start = answer_text, start
        examples.append(example)
  if not examples:
    raise ValueError(f"{path} holds no usable questions")
  return examples, stats


def has_gold_answers(dataset: Sequence[dict], version_2_with_negative: bool = False) -> bool:
  """True when every question carries its gold answers (dev files; test files have none):
  `answers`, and in SQuAD v1.1 at least one. An empty list there is a question asked of
  the model, not a gold "no answer" (only v2.0 has those), and the official v1.1
  evaluation has nothing to score it against."""
  return all("answers" in qa and (version_2_with_negative or qa["answers"])
             for article in dataset for paragraph in article["paragraphs"]
             for qa in paragraph["qas"])


# ----------------------------------------------------------------------------- features

@dataclasses.dataclass
class FeatureStats:
  """Counts of a conversion."""
  examples: int = 0
  features: int = 0
  unfindable_answers: List[str] = dataclasses.field(default_factory=list)
  impossible_windows: int = 0     # training windows without the answer (target: [CLS])


def doc_windows(num_tokens: int, max_tokens: int, doc_stride: int) -> List[Tuple[int, int]]:
  """(start, length) of the windows over `num_tokens` context pieces, `doc_stride` apart."""
  windows, start = [], 0
  while True:
    length = min(num_tokens - start, max_tokens)
    windows.append((start, length))
    if start + length >= num_tokens:
      return windows
    start += min(length, doc_stride)


def max_context_windows(windows: Sequence[Tuple[int, int]], num_tokens: int) -> List[int]:
  """For every piece, the window where it has the most context: the largest
  min(left, right) + 0.01 * length, the first such window on ties (the original's
  rule). Each window's pieces are visited once, so time is linear in the context (the
  original's per-piece search over every window took 15 minutes for a 1 MB context)."""
  best, best_score = [-1] * num_tokens, [-1.0] * num_tokens
  for index, (start, length) in enumerate(windows):
    for position in range(start, start + length):
      score = min(position - start, start + length - 1 - position) + 0.01 * length
      if score > best_score[position]:
        best[position], best_score[position] = index, score
  return best


def answer_token_span(starts: Sequence[int], ends: Sequence[int], answer_start: int,
                      answer_end: int) -> Optional[Tuple[int, int]]:
  """First and last piece covering characters [answer_start, answer_end), or None."""
  covering = [k for k in range(len(starts))
              if starts[k] < ends[k] and starts[k] < answer_end and ends[k] > answer_start]
  if not covering:
    return None
  return covering[0], covering[-1]


def span_text(context: str, starts: Sequence[int], ends: Sequence[int], first: int,
              last: int) -> str:
  """The characters of `context` that pieces first..last cover."""
  return context[starts[first]:max(ends[last], starts[first])]


def convert_examples(examples: Sequence[SquadExample], tokenizer: FullTokenizer,
                     max_seq_length: int, doc_stride: int, max_query_length: int,
                     is_training: bool, stats: Optional[FeatureStats] = None,
                     progress: bool = False) -> Iterator[Tuple[Dict[str, list], dict]]:
  """Yields (tf features, metadata) per window.

  Features: unique_ids, input_ids, input_mask, segment_ids, p_mask and, for
  training, start_positions, end_positions, is_impossible (a window without
  the answer points at [CLS] and counts as impossible, as the original).
  Metadata (what prediction needs to map pieces back to text): unique_id,
  example_index, doc_offset (position of the window's first piece in the
  sequence), doc_start (its index among the context's pieces),
  starts / ends (character span in the context of each window piece) and
  max_context (1 where this window is the piece's max-context window).
  """
  stats = stats if stats is not None else FeatureStats()
  if max_seq_length - max_query_length - 3 <= 0:
    raise ValueError(f"max_seq_length={max_seq_length} leaves no room for the context after "
                     f"max_query_length={max_query_length} question pieces and 3 specials")
  if doc_stride <= 0:
    raise ValueError(f"doc_stride={doc_stride} must be positive")
  unique_id = FIRST_UNIQUE_ID
  context_cache: Dict[str, tuple] = {}
  for example_index, example in enumerate(progress_bar(examples, desc="features", unit="ex",
                                               disable=not progress, leave=False)):
    stats.examples += 1
    query = tokenizer.encode(example.question_text)[:max_query_length]
    if example.context not in context_cache:
      context_cache.clear()    # questions of one paragraph come together
      pieces, starts, ends = tokenizer.tokenize_with_offsets(example.context)
      context_cache[example.context] = (tokenizer.convert_tokens_to_ids(pieces), starts, ends)
    ids, starts, ends = context_cache[example.context]

    answer = None
    if is_training and not example.is_impossible:
      answer = answer_token_span(starts, ends, example.answer_start,
                                 example.answer_start + len(example.answer_text))
      found = answer and " ".join(example.answer_text.split()) in " ".join(
          span_text(example.context, starts, ends, *answer).split())
      if not found:
        stats.unfindable_answers.append(example.qas_id)
        logging.warning("question %s: answer %r not found in the tokenized context; skipped",
                        example.qas_id, example.answer_text)
        continue

    max_tokens = max_seq_length - len(query) - 3
    windows = doc_windows(len(ids), max_tokens, doc_stride)
    best_window = max_context_windows(windows, len(ids))
    doc_offset = len(query) + 2
    for window_index, (start, length) in enumerate(windows):
      input_ids = [tokenizer.cls_id] + query + [tokenizer.sep_id] + ids[start:start + length] \
          + [tokenizer.sep_id]
      segment_ids = [0] * doc_offset + [1] * (length + 1)
      p_mask = [0] + [1] * (len(query) + 1) + [0] * length + [1]
      padding = max_seq_length - len(input_ids)
      features = dict(
          unique_ids=unique_id,
          input_ids=input_ids + [tokenizer.pad_id] * padding,
          input_mask=[1] * len(input_ids) + [0] * padding,
          segment_ids=segment_ids + [0] * padding,
          p_mask=p_mask + [1] * padding)
      if is_training:
        impossible = example.is_impossible
        start_position = end_position = 0
        if answer is not None:
          if start <= answer[0] and answer[1] < start + length:
            start_position = answer[0] - start + doc_offset
            end_position = answer[1] - start + doc_offset
          else:
            impossible = True
            stats.impossible_windows += 1
        features.update(start_positions=start_position, end_positions=end_position,
                        is_impossible=int(impossible))
      metadata = dict(
          unique_id=unique_id, example_index=example_index, doc_offset=doc_offset,
          doc_start=start,
          starts=starts[start:start + length], ends=ends[start:start + length],
          max_context=[int(best_window[start + i] == window_index) for i in range(length)])
      stats.features += 1
      unique_id += 1
      yield features, metadata


def fingerprint(json_path: str, tokenizer: FullTokenizer, *settings) -> str:
  """Identifies a feature file's inputs: the JSON's and vocabulary's contents and the settings."""
  return files_lib.fingerprint(tokenizer.do_lower_case, *settings,
                               files=[json_path, tokenizer.vocabulary_file], length=16)


def write_features(converted: Iterator[Tuple[Dict[str, list], dict]], record_path: str,
                   metadata_path: str, header: Callable[[int], dict],
                   keep_metadata: bool = True) -> Tuple[int, List[dict]]:
  """Writes the features as a TFRecord and a JSON-lines metadata file: first line
  `header(count)`, then (if `keep_metadata`) one line per feature. Both appear
  atomically, the metadata last. Returns (count, the per-feature metadata kept)."""
  metadata: List[dict] = []

  def features():
    for feature, meta in converted:
      if keep_metadata:
        metadata.append(meta)
      yield feature

  count = write_records(features(), record_path)
  with files_lib.atomic_open(metadata_path, encoding="utf-8") as out:
    out.write(json.dumps(header(count)) + "\n")
    for meta in metadata:
      out.write(json.dumps(meta) + "\n")
  return count, metadata


def read_metadata(metadata_path: str) -> Tuple[dict, List[dict]]:
  """(header, per-feature metadata) of a file written by write_features."""
  with open(metadata_path, encoding="utf-8") as f:
    header = json.loads(f.readline())
    return header, [json.loads(line) for line in f]


def read_header(metadata_path: str) -> Optional[dict]:
  try:
    with open(metadata_path, encoding="utf-8") as f:
      return json.loads(f.readline())
  except (OSError, ValueError):
    return None


def dataset(record: str, max_seq_length: int, batch_size: int, is_training: bool,
            seed: int = 0, bucket_by_length: bool = False) -> tf.data.Dataset:
  """Batches of model inputs (input_word_ids, input_mask, input_type_ids, p_mask),
  unique_ids and, for training, the targets; see `records.read_dataset`."""
  seq = tf.io.FixedLenFeature([max_seq_length], tf.int64)
  schema = dict(unique_ids=tf.io.FixedLenFeature([], tf.int64), input_ids=seq, input_mask=seq,
                segment_ids=seq, p_mask=seq)
  if is_training:
    one = tf.io.FixedLenFeature([], tf.int64)
    schema.update(start_positions=one, end_positions=one, is_impossible=one)
  return read_dataset(record, schema, batch_size, is_training, seed,
                      bucket_by_length=bucket_by_length)


# ----------------------------------------------------------------------------- answers

def _softmax(scores: Sequence[float]) -> List[float]:
  if not scores:
    return []
  x = np.asarray(scores, np.float64)
  e = np.exp(x - x.max())
  return (e / e.sum()).tolist()


def _valid(meta: dict, start: int, end: int, max_answer_length: int) -> bool:
  """A span of positions inside the window's context, starting at a max-context
  piece, in order and not too long."""
  first, last = start - meta["doc_offset"], end - meta["doc_offset"]
  n = len(meta["starts"])
  return (0 <= first < n and 0 <= last < n and meta["max_context"][first]
          and first <= last < first + max_answer_length)


def _nbest(example: SquadExample, candidates, n_best_size: int, score_keys: Tuple[str, str],
           spans: Optional[Dict[str, Optional[Tuple[int, int]]]] = None):
  """Distinct answer texts of the best-scoring candidates (meta, start, end, s1, s2);
  `spans` gets the question's best answer as characters [start, end) of the context
  (None for no answer)."""
  candidates.sort(key=lambda c: c[3] + c[4], reverse=True)
  nbest, seen, best = [], set(), None
  for meta, start, end, s1, s2 in candidates:
    if len(nbest) >= n_best_size:
      break
    first, last = start - meta["doc_offset"], end - meta["doc_offset"]
    raw = span_text(example.context, meta["starts"], meta["ends"], first, last)
    text = raw.strip()
    if text in seen:
      continue
    seen.add(text)
    if best is None:
      begin = meta["starts"][first] + len(raw) - len(raw.lstrip())
      best = (begin, begin + len(text))
    nbest.append({"text": text, score_keys[0]: float(s1), score_keys[1]: float(s2)})
  if spans is not None:
    spans[example.qas_id] = best
  if not nbest:
    nbest.append({"text": "", score_keys[0]: 0.0, score_keys[1]: 0.0})
  for entry, p in zip(nbest, _softmax([e[score_keys[0]] + e[score_keys[1]] for e in nbest])):
    entry["probability"] = p
  return [{"text": e["text"], "probability": e["probability"], score_keys[0]: e[score_keys[0]],
           score_keys[1]: e[score_keys[1]]} for e in nbest]


def _by_example(metadata: Sequence[dict], results: Dict[int, dict]):
  grouped: Dict[int, list] = {}
  for meta in metadata:
    grouped.setdefault(meta["example_index"], []).append((meta, results[meta["unique_id"]]))
  return grouped


def predictions_v1(examples: Sequence[SquadExample], metadata: Sequence[dict],
                   results: Dict[int, dict], n_best_size: int, max_answer_length: int,
                   spans: Optional[dict] = None):
  """predictions.json and nbest_predictions.json contents for the v1.1 head.

  Args:
    results: unique_id -> {"start_logits": [S], "end_logits": [S]}.
    spans: if given, gets qid -> the best answer's characters (start, end), or None.

  Returns:
    (qid -> text, qid -> n-best list of {text, probability, start_logit, end_logit}).
  """
  predictions, nbest = {}, {}
  grouped = _by_example(metadata, results)
  for index, example in enumerate(examples):
    candidates = []
    for meta, result in grouped.get(index, []):
      start_logits, end_logits = result["start_logits"], result["end_logits"]
      top_starts = np.argsort(-start_logits, kind="stable")[:n_best_size]
      top_ends = np.argsort(-end_logits, kind="stable")[:n_best_size]
      for s in top_starts:
        for e in top_ends:
          if _valid(meta, int(s), int(e), max_answer_length):
            candidates.append((meta, int(s), int(e), start_logits[s], end_logits[e]))
    nbest[example.qas_id] = _nbest(example, candidates, n_best_size,
                                   ("start_logit", "end_logit"), spans)
    predictions[example.qas_id] = nbest[example.qas_id][0]["text"]
  return predictions, nbest


def predictions_v2(examples: Sequence[SquadExample], metadata: Sequence[dict],
                   results: Dict[int, dict], n_best_size: int, max_answer_length: int,
                   null_score_diff_threshold: float, spans: Optional[dict] = None):
  """predictions.json, nbest_predictions.json and null_odds.json for the v2.0 head.

  The null score of a question is its smallest answer-class logit over its
  windows (as the original); the answer is "" when it exceeds
  `null_score_diff_threshold`, else the best span.

  Args:
    results: unique_id -> {start_top_log_probs [K], start_top_index [K],
      end_top_log_probs [K*E], end_top_index [K*E], cls_logits (scalar)}.
    spans: if given, gets qid -> the best span's characters (start, end), or None.

  Returns:
    (qid -> text, qid -> n-best list, qid -> null score).
  """
  predictions, nbest, null_odds = {}, {}, {}
  grouped = _by_example(metadata, results)
  for index, example in enumerate(examples):
    candidates, score_null = [], None
    for meta, result in grouped.get(index, []):
      cls = float(result["cls_logits"])
      score_null = cls if score_null is None else min(score_null, cls)
      start_n_top = len(result["start_top_index"])
      end_n_top = len(result["end_top_index"]) // start_n_top
      for i in range(start_n_top):
        s = int(result["start_top_index"][i])
        for j in range(end_n_top):
          e = int(result["end_top_index"][i * end_n_top + j])
          if _valid(meta, s, e, max_answer_length):
            candidates.append((meta, s, e, result["start_top_log_probs"][i],
                               result["end_top_log_probs"][i * end_n_top + j]))
    nbest[example.qas_id] = _nbest(example, candidates, n_best_size,
                                   ("start_log_prob", "end_log_prob"), spans)
    null_odds[example.qas_id] = score_null if score_null is not None else 0.0
    predictions[example.qas_id] = ("" if null_odds[example.qas_id] > null_score_diff_threshold
                                   else nbest[example.qas_id][0]["text"])
  return predictions, nbest, null_odds

