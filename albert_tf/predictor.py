"""Predictions on new text from a trained run: `Predictor.load(output_dir).predict(texts)`.

The path goes one way: the run's owner (`albert_tf.runs.answering_at`) hands over, in one
call, everything the model answers with (`albert_tf.export.loading.Answering`: the model
under its runtime and dtype, tokenizer, text inputs, problem, thresholds, windows), and
this module only packs, batches and reads answers. A serving export (run_classifier.py or
run_ner.py --export_dir) is loaded with `tf.saved_model.load`, as a server would.
Examples are sorted by length into batches (the longest first), each padded to its own
longest, and the answers put back in input order, so short texts do not pay for long ones.

What each kind of run answers, per example:

- run_classifier.py (GLUE, your own files): the fields of `test_predictions.jsonl`
  (`albert_tf.problems`): `label` and `probabilities` (label -> p), multi-label
  `labels` (over the threshold) and `probabilities` (sigmoids), regression `score`;
- run_ner.py: `entities`, `{"type", "text", "start", "end"}` in characters
  (`text[start:end]` is the entity), as its exported tagger finds them;
- run_squad.py, from `question` and `context`: `answer`, its `start` and `end` characters
  in the context (None without one), `score` (its n-best probability) and, for v2.0,
  `has_answer` and `null_score` (answered when null_score <= the threshold);
- run_race.py, from `article`, `question` and `options` (a list): `choice` (its index) and
  `probabilities` (one per option).

`runtime="onnxruntime"` runs the run's own ONNX export (float32, or `quantization=
"dynamic_int8"`), written into `<run>/onnx/` on first use and rewritten when the run's
best weights change; `dtype="bfloat16"` computes in bfloat16 under TensorFlow.
`"auto"` in either (`dtype="auto"` is the default) times every runtime-dtype pair they
allow on the first batch it answers, the longest (`albert_tf.export.runtimes`): the
fastest float32 pair, or bfloat16 where it is clearly faster and gives that batch the same
labels. The choice (and why) is recorded in `<run>/onnx/runtime.json` for this CPU and
these weights, so later runs on the same kind of machine read it instead of measuring
again.
"""

import dataclasses
import json
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf

from albert_tf import runs
from albert_tf.data import squad
from albert_tf.data.race import qa_text, pack_choice
from albert_tf.export.loading import Answering
from albert_tf.export.runtimes import AUTO, DTYPES, QUANTIZATIONS, RUNTIMES, candidates
from albert_tf.progress import progress_bar
from albert_tf.text.packing import pack_texts, pack_windows, window_starts

Example = Union[str, Sequence, Dict[str, object]]
__all__ = ["AUTO", "DTYPES", "QUANTIZATIONS", "RUNTIMES", "Predictor", "Settings",
           "answer_line"]


@dataclasses.dataclass
class Settings:
  """How answers are made (the defaults are the training scripts')."""
  batch_size: int = 32
  # multi-label: a label is chosen over it (a number, or one per label); None: the run's
  # tuned thresholds (thresholds.txt) if it has them, else 0.5
  multi_label_threshold: Optional[object] = None
  n_best_size: int = 20                  # SQuAD: as run_squad.py
  max_answer_length: int = 30
  null_score_diff_threshold: float = 0.0


@dataclasses.dataclass(eq=False)
class Predictor(Answering):
  """A run's (or a serving export's) model, ready to answer; see the module docstring.

  What it answers with is its `Answering` (`albert_tf.export.loading`), handed over whole
  by the run's owner (`runs.answering_at`); `settings`: how answers are made.
  """
  settings: Settings = dataclasses.field(default_factory=Settings)
  noted: bool = False      # a legacy field name was noted once

  # ------------------------------------------------------------------------- loading

  @classmethod
  def load(cls, path: str, batch_size: int = 32, multi_label_threshold=None, *,
           runtime: str = "tensorflow", dtype: str = AUTO, quantization: str = "none",
           flag: str = "--model", load_model: bool = True, **settings) -> "Predictor":
    """The predictor of a run directory (a fine-tuning script's --output_dir) or of a
    serving export in `path`; errors name `flag`. `settings`: the other `Settings`.
    `load_model=False`: what its examples are and how long, without the model (it then
    cannot answer)."""
    settings = Settings(batch_size, multi_label_threshold, **settings)
    if batch_size < 1:
      raise ValueError(f"--batch_size={batch_size}: at least 1")
    for name, value, allowed in (("runtime", runtime, RUNTIMES + (AUTO,)),
                                 ("dtype", dtype, DTYPES + (AUTO,)),
                                 ("quantization", quantization, QUANTIZATIONS)):
      if value not in allowed:
        raise ValueError(f"--{name}={value}: one of {', '.join(allowed)}")
    if runtime != "onnxruntime" and quantization != "none":
      raise ValueError(f"--quantization={quantization} is onnxruntime's; add "
                       "--runtime=onnxruntime")
    candidates(runtime, dtype)                     # (an error when they allow no pair)
    if not tf.io.gfile.isdir(path):                  # (gs:// and others: a serving export)
      raise FileNotFoundError(f"{flag}={path} is not a directory")
    answering = runs.answering_at(path, flag, runtime, dtype, quantization, load_model)
    if settings.multi_label_threshold is None:    # the run's or export's (tuned, or 0.5)
      settings = dataclasses.replace(settings,
                                     multi_label_threshold=answering.multi_label_threshold)
    return cls(**{f.name: getattr(answering, f.name) for f in dataclasses.fields(Answering)},
               settings=settings)

  # ------------------------------------------------------------------------- examples

  @property
  def text_fields(self) -> List[str]:
    """The names of an example's fields (dict keys, or an input file's columns)."""
    return list(self.fields)

  def example(self, value: Example, where: str = "") -> List[object]:
    """An example's fields in order (`fields`), checked by its kind: texts are strings,
    RACE's `options` a list of two or more strings, a SQuAD context not empty. `where`
    starts each error (`file:line: `)."""
    fields = self.fields
    if isinstance(value, str):
      values = [value]
    elif isinstance(value, dict):
      missing = [f for f in fields if f not in value]
      if missing:
        fields = self.older_names(value, fields)
        missing = [f for f in fields if f not in value]
      if missing:
        raise ValueError(f"{where}no field {', '.join(map(repr, missing))}; this run reads "
                         f"{', '.join(map(repr, fields))}")
      values = [value[f] for f in fields]
    else:
      values = list(value)
    if len(values) != len(fields):
      raise ValueError(f"{where}{len(values)} field(s), but this run reads {len(fields)} "
                       f"({', '.join(fields)})")
    ANSWERS[self.kind].check(dict(zip(fields, values)), where)
    return values

  def columns(self, text_columns: Optional[str] = None) -> List[str]:
    """The input file's columns, one per field: `text_columns` (comma-separated; the
    --text_columns flag), or the fields' own names."""
    if not text_columns:
      return self.text_fields
    columns = [c.strip() for c in text_columns.split(",")]
    if len(columns) != len(self.fields):
      raise ValueError(f"--text_columns={text_columns}: this run reads {len(self.fields)} "
                       f"field(s) ({', '.join(self.fields)})")
    return columns

  def row(self, record: Dict[str, object], columns: Sequence[str], id_column: Optional[str],
          where: str = "") -> Tuple[List[object], Optional[str]]:
    """(the example's fields, its id or None) of one row of an input file, read as
    `columns` (one per field)."""
    if list(columns) == self.fields and any(c not in record for c in columns):
      columns = self.older_names(record, columns)
    missing = [c for c in list(columns) + ([id_column] if id_column else []) if c not in record]
    if missing:
      raise ValueError(f"{where}no column {', '.join(map(repr, missing))}; the columns are "
                       f"{', '.join(map(repr, record))}")
    return (self.example([record[c] for c in columns], where),
            str(record[id_column]) if id_column else None)

  def older_names(self, record: Dict[str, object], names: Sequence[str]) -> List[str]:
    """`names`, or the names older albert_tf gave the same fields if `record` has those
    instead (`legacy`), with a one-line note the first time."""
    for older in self.legacy:
      if all(n in record for n in older):
        if not self.noted:
          self.noted = True
          print(f"Note: {', '.join(map(repr, older))}: read as this run's "
                f"{', '.join(map(repr, names))} (the name older albert_tf gave it; "
                "docs/predict.md)")
        return list(older)
    return list(names)

  def count(self, text: str) -> int:
    """About how many pieces a text is."""
    return len(self.tokenizer.tokenize(text)) if self.tokenizer is not None else len(text) // 4

  def tokens(self, values: Sequence[object]) -> int:
    """About how many pieces an example's model inputs hold (what bounds a batch)."""
    return ANSWERS[self.kind].tokens(self, values)

  # ------------------------------------------------------------------------- answers

  def predict(self, examples: Sequence[Example], progress: bool = False) -> List[dict]:
    """One answer dict per example, in order (see the module docstring)."""
    rows = [self.example(e, f"example {i}: ") for i, e in enumerate(examples)]
    return ANSWERS[self.kind].answer(self, rows, progress) if rows else []

  def batches(self, lengths: Sequence[int], progress: bool, desc: str) -> Iterator[np.ndarray]:
    """Row numbers of each batch: sorted by length, `batch_size` at a time, longest first
    (the batch `auto` measures on is then the costliest shape, and memory peaks at once)."""
    order = np.argsort(-np.asarray(lengths), kind="stable")        # longest first
    bar = progress_bar(total=len(order), desc=desc, unit="rows", disable=not progress)
    for start in range(0, len(order), self.settings.batch_size):
      rows = order[start:start + self.settings.batch_size]
      yield rows
      bar.update(len(rows))
    bar.close()

  def run(self, packed: List[Dict[str, list]], progress: bool,
          extra: Sequence[str] = ()) -> Dict[str, np.ndarray]:
    """`forward` over packed examples (lists [S], or [K, S]: RACE's choices, a text's
    windows), in batches sorted by size, cut to each one's longest and (a text's windows)
    padded to its most with windows of no pieces; the outputs [N, ...] in input order
    (span logits padded back to seq_length with -inf)."""
    lengths = [int(np.max(np.sum(p["input_mask"], -1))) for p in packed]
    counts = [len(p["input_mask"]) if np.ndim(p["input_mask"]) == 2 else 1 for p in packed]
    parts: Dict[str, list] = {}
    order = []
    for rows in self.batches([c * self.seq_length + n for c, n in zip(counts, lengths)],
                             progress, "predicting"):
      width = max(1, max(lengths[r] for r in rows))
      most = max(counts[r] for r in rows)

      def cut(r, k):
        value = np.asarray(packed[r][k])[..., :width]
        if value.ndim == 2 and len(value) < most:                       # [K, S] -> [most, S]
          value = np.pad(value, [(0, most - len(value)), (0, 0)])
        return value
      batch = {k: np.array([cut(r, k) for r in rows], np.float32 if k in extra else np.int32)
               for k in ("input_word_ids", "input_mask", "input_type_ids", *extra)}
      for k, v in self.forward(batch).items():
        if v.ndim == 2 and k.endswith("_logits"):                   # [B, width] -> [B, S]
          v = np.pad(v, [(0, 0), (0, self.seq_length - v.shape[1])], constant_values=-np.inf)
        parts.setdefault(k, []).append(v)
      order.append(rows)
    inverse = np.argsort(np.concatenate(order), kind="stable")
    return {k: np.concatenate(v)[inverse] for k, v in parts.items()}


# ----------------------------------------------------------------------------- per kind

class Answers:
  """A kind's pre- and post-processing around the runtime's forward: how an example is
  checked and measured, and how its answer is made."""

  def check(self, values: Dict[str, object], where: str) -> None:
    """Checks an example's fields (by name); errors start with `where`."""
    for name, item in values.items():
      if not isinstance(item, str):
        raise ValueError(f"{where}{name!r} is {item!r}, not text")

  def tokens(self, p: Predictor, values: Sequence[object]) -> int:
    return min(sum(p.count(v) for v in values) + 3, p.seq_length)

  def answer(self, p: Predictor, rows: List[list], progress: bool) -> List[dict]:
    raise NotImplementedError


class Classifying(Answers):
  """run_classifier.py: the problem's answer of each example's logits, or of a serving
  export's outputs."""

  def tokens(self, p, values):
    recorded = p.recorded
    if not getattr(recorded, "windows", False):
      return super().tokens(p, values)
    windows = len(window_starts(p.count(values[0]), p.seq_length - 2, recorded.doc_stride))
    return min(windows, recorded.max_windows or windows) * p.seq_length   # [K, S] padded

  def answer(self, p, rows, progress):
    threshold = p.settings.multi_label_threshold
    threshold = 0.5 if threshold is None else threshold
    if p.strings is not None:                                     # a serving export
      out = [None] * len(rows)
      for batch in p.batches([sum(map(len, r)) for r in rows], progress, "predicting"):
        texts = [tf.constant([rows[r][i] for r in batch]) for i in range(len(p.fields))]
        outputs = p.strings(texts)
        values = (outputs["probabilities"] if "probabilities" in outputs
                  else outputs["score"]).numpy()                     # [B, C], or the scores [B]
        for j, r in enumerate(batch):
          out[r] = p.problem.answer_of_outputs(values[j], threshold)
      return out
    recorded = p.recorded
    if getattr(recorded, "windows", False):   # --long_text=windows: the model pools [K, S]
      packed, cut = [], 0
      for values in rows:
        windows, whole = pack_windows(p.tokenizer, values[0], p.seq_length,
                                      recorded.doc_stride, recorded.max_windows)
        cut += whole > len(windows)
        packed.append({k: [w[k] for w in windows] for k in windows[0]})
      if cut:
        print(f"{cut} of {len(rows)} texts are longer than the run's --max_windows="
              f"{recorded.max_windows} windows; each was answered from its first "
              f"{recorded.max_windows}")
    else:
      packed = [pack_texts(p.tokenizer, values, p.seq_length) for values in rows]
    logits = p.run(packed, progress)["logits"]
    return [p.problem.answer(row, threshold) for row in logits]


class Tagging(Answers):
  """run_ner.py: the entities its tagger's graph finds (windows, words, characters)."""

  def answer(self, p, rows, progress):
    sentences = [r[0] for r in rows]
    out = [None] * len(sentences)
    for batch in p.batches([len(s) for s in sentences], progress, "tagging"):
      found = p.strings(tf.constant([sentences[r] for r in batch]))
      found = {k: v.numpy() for k, v in found.items() if k.startswith(("entity", "num_entities"))}
      for j, r in enumerate(batch):
        out[r] = dict(entities=[dict(type=found["entity_types"][j, e].decode(),
                                     text=found["entity_texts"][j, e].decode(),
                                     start=int(found["entity_starts"][j, e]),
                                     end=int(found["entity_ends"][j, e]))
                                for e in range(int(found["num_entities"][j]))])
    return out


class Reading(Answers):
  """run_squad.py: each question's windows over its context, the span head, then
  run_squad.py's own n-best and null-score rules (`albert_tf.data.squad`)."""

  def check(self, values, where):
    super().check(values, where)
    if not values["context"].strip():
      raise ValueError(f"{where}no context: a SQuAD question is answered from its 'context'")

  def tokens(self, p, values):
    return sum(p.count(v) for v in values) + 3        # every window of the context

  def answer(self, p, rows, progress):
    recorded, s = p.recorded, p.settings
    examples = [squad.SquadExample(str(i), q, c) for i, (q, c) in enumerate(rows)]
    converted = list(squad.convert_examples(
        examples, p.tokenizer, p.seq_length, recorded.doc_stride, recorded.max_query_length,
        is_training=False))
    packed = [dict(input_word_ids=f["input_ids"], input_mask=f["input_mask"],
                   input_type_ids=f["segment_ids"], p_mask=f["p_mask"]) for f, _ in converted]
    outputs = p.run(packed, progress, ("p_mask",) if p.version_2 else ())
    lengths = [sum(f["input_mask"]) for f in packed]
    results = {}
    for i, (features, _) in enumerate(converted):
      results[features["unique_ids"]] = {
          k: v[i][:lengths[i]] if k.endswith("_logits") and v.ndim == 2 else v[i]
          for k, v in outputs.items()}
    metadata, spans = [m for _, m in converted], {}
    if p.version_2:
      predictions, nbest, null = squad.predictions_v2(
          examples, metadata, results, s.n_best_size, s.max_answer_length,
          s.null_score_diff_threshold, spans)
    else:
      (predictions, nbest), null = squad.predictions_v1(
          examples, metadata, results, s.n_best_size, s.max_answer_length, spans), None
    out = []
    for example in examples:
      qid, text = example.qas_id, predictions[example.qas_id]
      span = spans.get(qid) if text else None
      answer = dict(answer=text, start=span[0] if span else None,
                    end=span[1] if span else None, score=nbest[qid][0]["probability"])
      if p.version_2:
        answer.update(has_answer=bool(null[qid] <= s.null_score_diff_threshold),
                      null_score=float(null[qid]))
      out.append(answer)
    return out


class Choosing(Answers):
  """run_race.py: [CLS] article [SEP] question-with-option [SEP] per option, softmax over
  the options."""

  def check(self, values, where):
    options = values["options"]
    if not (isinstance(options, list) and len(options) >= 2
            and all(isinstance(o, str) for o in options)):
      raise ValueError(f"{where}'options' is {options!r}: a list of two or more texts")
    super().check({k: v for k, v in values.items() if k != "options"}, where)

  def tokens(self, p, values):
    article = p.count(values[0])
    return sum(min(p.seq_length, article + p.count(values[1] + " " + o) + 3)
               for o in values[2])

  def answer(self, p, rows, progress):
    tokenizer, seq = p.tokenizer, p.seq_length
    max_qa_length = p.recorded.max_qa_length
    out = [None] * len(rows)
    by_count: Dict[int, List[int]] = {}
    for i, values in enumerate(rows):
      by_count.setdefault(len(values[2]), []).append(i)
    for _, members in sorted(by_count.items()):   # a batch's questions share their count
      packed = []
      for i in members:
        article, question, options = rows[i]
        article_ids = tokenizer.encode(article)
        choices = [pack_choice(article_ids, tokenizer.encode(qa_text(question, option)), seq,
                               max_qa_length, tokenizer) for option in options]
        packed.append(dict(input_word_ids=[c["input_ids"] for c in choices],
                           input_mask=[c["input_mask"] for c in choices],
                           input_type_ids=[c["segment_ids"] for c in choices]))
      logits = p.run(packed, progress)["logits"].astype(np.float64)   # [N, count]
      probabilities = np.exp(logits - logits.max(-1, keepdims=True))
      probabilities /= probabilities.sum(-1, keepdims=True)
      for j, i in enumerate(members):
        out[i] = dict(choice=int(probabilities[j].argmax()),
                      probabilities=[float(x) for x in probabilities[j]])
    return out


# How a kind of run answers (`runs.Kind.answered_as`: a kind's own name, or the name of
# the Answers it shares with another).
ANSWERS = {"classification": Classifying(), "token_classification": Tagging(),
           "question_answering": Reading(), "multiple_choice": Choosing()}


def answer_line(index: int, row_id: Optional[str], answer: dict) -> str:
  """One line of predict.py's output: `index`, `id` if given, then the answer."""
  head = dict(index=index, **({"id": row_id} if row_id is not None else {}))
  return json.dumps(dict(head, **answer), ensure_ascii=False) + "\n"
