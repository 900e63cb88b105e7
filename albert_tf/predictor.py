"""Predictions on new text from a trained run: `Predictor.load(output_dir).predict(texts)`.

A run is read through its owner, `albert_tf.runs.Run` (the task's model with the best
checkpoint's weights, its tokenizer, labels and problem); a serving export (run_classifier.py
or run_ner.py --export_dir) is loaded with `tf.saved_model.load`, as a server would.
Examples are sorted by length into batches, each padded to its own longest, and the answers
put back in input order, so short texts do not pay for long ones.

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
`runtime="auto"` times both on the first batch it answers and keeps the faster, recording
the choice (and why) in `<run>/onnx/runtime.json` for this CPU and these weights, so later
runs on the same kind of machine read it instead of measuring again.
"""

import dataclasses
import importlib
import json
import os
import time
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf

from albert_tf import problems, runs
from albert_tf.data import squad
from albert_tf.data.race import qa_text, pack_choice
from albert_tf.export.loading import ServingRecord, export_record
from albert_tf.files import atomic_open
from albert_tf.export.onnx import inference_function
from albert_tf.export.tagger import tagger_module
from albert_tf.progress import progress_bar
from albert_tf.text.packing import pack_texts, pack_windows, window_starts
from albert_tf.text.tokenization import FullTokenizer

Example = Union[str, Sequence, Dict[str, object]]
RUNTIMES = ("tensorflow", "onnxruntime")
AUTO = "auto"
DTYPES = ("float32", "bfloat16")
QUANTIZATIONS = ("none", "dynamic_int8")


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
class Predictor:
  """A run's (or a serving export's) model, ready to answer; see the module docstring.

  kind: how the run answers (its kind's `answered_as`, one of ANSWERS). fields: what an example holds, in order.
  forward: packed inputs (NumPy, named as the ONNX export's) -> named outputs (NumPy
  float32), for a run's model; strings: sentences (string tensors) -> outputs, for a
  serving export or a tagger. recorded: the kind's settings the run recorded. where: the
  path, for messages.
  """
  kind: str
  fields: List[str]
  tokenizer: Optional[FullTokenizer]
  recorded: runs.Settings
  settings: Settings
  where: str
  forward: Optional[Callable] = None
  strings: Optional[Callable] = None
  problem: Optional[problems.Problem] = None
  seq_length: int = 512
  version_2: bool = False
  # Names older albert_tf gave the same fields (runs.Run.legacy_inputs): accepted, noted once.
  legacy: List[List[str]] = dataclasses.field(default_factory=list)
  noted: bool = False

  # ------------------------------------------------------------------------- loading

  @classmethod
  def load(cls, path: str, batch_size: int = 32, multi_label_threshold=None, *,
           runtime: str = "tensorflow", dtype: str = "float32", quantization: str = "none",
           flag: str = "--model", load_model: bool = True, **settings) -> "Predictor":
    """The predictor of a run directory (a fine-tuning script's --output_dir) or of a
    serving export in `path`; errors name `flag`. `settings`: the other `Settings`.
    `load_model=False`: what its examples are and how long, without the model (it then
    cannot answer)."""
    settings = Settings(batch_size, multi_label_threshold, **settings)
    if batch_size < 1:
      raise ValueError(f"--batch_size={batch_size}: at least 1")
    for name, value, allowed in (("runtime", runtime, RUNTIMES + (AUTO,)), ("dtype", dtype, DTYPES),
                                 ("quantization", quantization, QUANTIZATIONS)):
      if value not in allowed:
        raise ValueError(f"--{name}={value}: one of {', '.join(allowed)}")
    if runtime != "tensorflow" and dtype != "float32":
      raise ValueError(f"--dtype={dtype} is TensorFlow's; --runtime=onnxruntime runs float32, "
                       "or int8 with --quantization=dynamic_int8" + (
                           ", and --runtime=auto compares the two in float32"
                           if runtime == AUTO else ""))
    if runtime != "onnxruntime" and quantization != "none":
      raise ValueError(f"--quantization={quantization} is onnxruntime's; add "
                       "--runtime=onnxruntime")
    if not tf.io.gfile.isdir(path):                  # (gs:// and others: a serving export)
      raise FileNotFoundError(f"{flag}={path} is not a directory")
    if runs.Run.exists(path):
      return cls._of_run(runs.Run.read(path, flag, kinds=runs.answering()), settings, runtime,
                         dtype, quantization, load_model)
    record = ServingRecord.of(export_record(path))
    kind = runs.kind_of_export(record.kind) if tf.io.gfile.exists(
        os.path.join(path, "saved_model.pb")) else None
    if kind is not None and kind.answered_as in ANSWERS:
      if runtime == AUTO:
        print(f"--runtime=auto: tensorflow ({flag}={path} is a serving export, which runs "
              "as it was saved)")
        runtime = "tensorflow"
      if runtime != "tensorflow" or dtype != "float32":
        raise ValueError(f"{flag}={path} is a serving export, which runs as it was saved "
                         "(TensorFlow, float32); give its run directory for --runtime or --dtype")
      return ANSWERS[kind.answered_as].of_export(cls, path, record, settings, load_model)
    raise ValueError(f"{flag}={path} is neither a run directory (no {runs.RECORD}) nor an "
                     "albert_tf serving export (saved_model.pb with albert_tf_export.json)")

  @classmethod
  def _of_run(cls, run: runs.Run, settings: Settings, runtime: str, dtype: str,
              quantization: str, load_model: bool = True) -> "Predictor":
    kind, tokenizer = ANSWERS[run.kind.answered_as], run.tokenizer()
    forward = strings = None
    if load_model and runtime != "tensorflow" and kind.own_graph:
      why = (f"{run.path} is a {run.kind.script} run, which answers through its own "
             "TensorFlow graph")
      if runtime == "onnxruntime":
        raise ValueError(f"{run.flag}={why}; --runtime=onnxruntime serves classifiers, SQuAD "
                         "and RACE runs")
      print(f"--runtime=auto: tensorflow ({why})")
      runtime = "tensorflow"
    if load_model and runtime == AUTO:
      forward = auto_runtime(run)
    elif load_model and runtime == "onnxruntime":
      forward = onnx_forward(run, quantization)
    elif load_model:
      from albert_tf.export.tf_hub import compute_dtype  # pylint: disable=g-import-not-at-top
      with compute_dtype(dtype):
        model = run.model()
      forward = tensorflow_forward(model)
      strings = kind.strings(run, model, tokenizer)
    if settings.multi_label_threshold is None:
      settings = dataclasses.replace(settings, multi_label_threshold=run.multi_label_threshold)
    return cls(run.kind.answered_as, run.fields, tokenizer, run.settings, settings, run.path, forward,
               strings, run.problem, run.max_seq_length, run.version_2,
               run.legacy_inputs if run.kind.fields is None else [])

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
    """Row numbers of each batch: sorted by length, `batch_size` at a time."""
    order = np.argsort(np.asarray(lengths), kind="stable")        # shortest first
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
  own_graph = False     # answers through its own TensorFlow graph, not a runtime's forward

  def check(self, values: Dict[str, object], where: str) -> None:
    """Checks an example's fields (by name); errors start with `where`."""
    for name, item in values.items():
      if not isinstance(item, str):
        raise ValueError(f"{where}{name!r} is {item!r}, not text")

  def tokens(self, p: Predictor, values: Sequence[object]) -> int:
    return min(sum(p.count(v) for v in values) + 3, p.seq_length)

  def strings(self, run: runs.Run, model, tokenizer) -> Optional[Callable]:
    """The run's own graph from sentences, if the kind answers through one."""
    del run, model, tokenizer
    return None

  def of_export(self, cls, path: str, record: ServingRecord, settings: Settings,
                load_model: bool) -> Predictor:
    raise ValueError(f"{path}: no serving export of this kind")

  def answer(self, p: Predictor, rows: List[list], progress: bool) -> List[dict]:
    raise NotImplementedError


class Classifying(Answers):
  """run_classifier.py: the problem's answer of each example's logits, or of a serving
  export's outputs."""

  def of_export(self, cls, path, record, settings, load_model):
    if record.problem_type is None:
      raise ValueError(f"--model={path} is a classifier export of an older albert_tf, which "
                       "does not say its labels; export it again (run_classifier.py "
                       "--export_dir), or give its run directory")
    inputs = record.inputs
    if settings.multi_label_threshold is None:     # the export's own (tuned, or 0.5)
      settings = dataclasses.replace(settings,
                                     multi_label_threshold=record.multi_label_threshold)
    loaded = _load_export(path) if load_model else None
    strings = None
    if loaded is not None:
      signature = loaded.signatures["serving_default"]
      strings = lambda texts: signature(**dict(zip(inputs, texts)))
    return cls("classification", list(inputs),
               _export_tokenizer(path), runs.Settings(), settings, path, strings=strings,
               problem=problems.Problem.of(record.problem_type, record.labels),
               seq_length=record.seq_length,   # (older albert_tf read one input as `text`)
               legacy=[["text"]] if len(inputs) == 1 and list(inputs) != ["text"] else [])

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
  own_graph = True

  def strings(self, run, model, tokenizer):
    recorded = run.settings
    return tagger_module(model, tokenizer, run.max_seq_length, recorded.doc_stride,
                         run.labels, recorded.tag_scheme, recorded.per_character).__call__

  def of_export(self, cls, path, record, settings, load_model):
    loaded = _load_export(path) if load_model else None
    # (A closure over the loaded object keeps its variables alive: its restored __call__
    # alone does not, and once the object was collected every call failed.)
    strings = (lambda texts: loaded(texts)) if loaded is not None else None
    return cls("token_classification", ["text"], _export_tokenizer(path), runs.Settings(),
               settings, path, strings=strings)

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


def _load_export(path: str):
  importlib.import_module("tensorflow_text")   # registers the export's tokenizer ops
  return tf.saved_model.load(path)


def _export_tokenizer(path: str) -> Optional[FullTokenizer]:
  """The FullTokenizer of a serving export's vocabulary asset."""
  assets = os.path.join(path, "assets")
  names = tf.io.gfile.listdir(assets) if tf.io.gfile.isdir(assets) else []
  spm = [n for n in names if n.endswith(".model")]
  words = [n for n in names if n.endswith(".txt")]
  return (FullTokenizer(spm_model_file=_local(os.path.join(assets, spm[0]))) if spm else
          FullTokenizer(vocab_file=_local(os.path.join(assets, words[0]))) if words else None)


def _local(path: str) -> str:
  """`path`, or a local copy of it when it is on another filesystem (gs://...)."""
  if "://" not in path:
    return path
  import tempfile  # pylint: disable=g-import-not-at-top
  copy = os.path.join(tempfile.mkdtemp(prefix="albert_tf_"), os.path.basename(path))
  tf.io.gfile.copy(path, copy)
  return copy


def answer_line(index: int, row_id: Optional[str], answer: dict) -> str:
  """One line of predict.py's output: `index`, `id` if given, then the answer."""
  head = dict(index=index, **({"id": row_id} if row_id is not None else {}))
  return json.dumps(dict(head, **answer), ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------- runtimes

def tensorflow_forward(model) -> Callable[[Dict[str, np.ndarray]], Dict[str, np.ndarray]]:
  """The model's inference call (the graph its ONNX export is made of), NumPy in and out."""
  function, spec, _ = inference_function(model)

  def forward(batch):
    outputs = function(*[tf.constant(batch[s.name], s.dtype) for s in spec])
    return {k: (tf.cast(v, tf.float32) if v.dtype.is_floating else v).numpy()
            for k, v in outputs.items()}
  return forward


def host_kind() -> str:
  """The CPU, as a runtime's speed depends on it: `lscpu`'s model name, the vector and
  matrix extensions TensorFlow and ONNX Runtime choose kernels by, the core count."""
  name, present = "unknown CPU", set()
  try:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
      for line in f:
        key, _, value = line.partition(":")
        if key.strip() == "model name" and name == "unknown CPU":
          name = value.strip()
        elif key.strip() == "flags" and not present:
          present = set(value.split())
  except OSError:
    pass
  wanted = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
  return f"{name} ({' '.join(w for w in wanted if w in present)}), {os.cpu_count()} CPUs"


def _runtime_record(run: runs.Run):
  """(where `--runtime=auto` records its choice, what the choice holds for)."""
  return (os.path.join(run.path, "onnx", "runtime.json"),
          dict(host=host_kind(), weights=runs.weights_fingerprint(run.checkpoint)))


def recorded_runtime(run: runs.Run) -> Optional[str]:
  """The runtime `--runtime=auto` chose for this run's weights on this kind of CPU, or None
  when it has not measured here (printed when found)."""
  path, key = _runtime_record(run)
  try:
    with open(path, encoding="utf-8") as f:
      recorded = json.load(f)
  except (OSError, ValueError):
    return None
  if not (all(recorded.get(k) == v for k, v in key.items())
          and recorded.get("runtime") in RUNTIMES):
    return None
  print(f"--runtime=auto: {recorded['runtime']}, as measured on this CPU before "
        f"({recorded.get('reason')}; {path})")
  return recorded["runtime"]


def auto_runtime(run: runs.Run):
  """The forward of `--runtime=auto`: the choice `<run>/onnx/runtime.json` records
  for this CPU and these weights, or, when it records none, a forward that times TensorFlow
  and ONNX Runtime on the first batch it is given, answers it with the faster, keeps that
  one, and records the choice with its reason."""
  recorded = recorded_runtime(run)
  if recorded:
    if recorded == "onnxruntime":
      return onnx_forward(run)
    return tensorflow_forward(run.model())
  path, key = _runtime_record(run)
  candidates = {"tensorflow": tensorflow_forward(run.model()), "onnxruntime": onnx_forward(run)}
  chosen = []

  def forward(batch):
    if chosen:
      return chosen[0](batch)
    rows = len(next(iter(batch.values())))
    seconds, outputs = {}, {}
    for name, candidate in candidates.items():
      outputs[name] = candidate(batch)           # first call: tracing, sessions warmed up
      best = float("inf")
      for _ in range(3):
        started = time.perf_counter()
        candidate(batch)
        best = min(best, time.perf_counter() - started)
      seconds[name] = best
    name = min(seconds, key=seconds.get)
    shape = "x".join(str(d) for d in np.shape(batch["input_word_ids"]))
    reason = (f"{', '.join(f'{k} {rows / v:.1f} rows/s' for k, v in seconds.items())} on a "
              f"batch of {shape} pieces")
    print(f"--runtime=auto: {name} ({reason}); recorded in {path} for this CPU")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with atomic_open(path, encoding="utf-8") as f:
      json.dump(dict(key, runtime=name, reason=reason,
                     rows_per_second={k: rows / v for k, v in seconds.items()}), f, indent=2)
    chosen.append(candidates[name])
    return outputs[name]
  return forward


def onnx_file(run: runs.Run, quantization: str = "none") -> str:
  """The run's ONNX export in `<run>/onnx/` (float32 or dynamic int8), kept beside the run
  (`runs.Run.kept`): written now if it is missing or was made from other weights."""
  from albert_tf.export.onnx import write_onnx  # pylint: disable=g-import-not-at-top
  name = "onnx/predict-int8.onnx" if quantization == "dynamic_int8" else "onnx/predict.onnx"
  return run.kept(name, lambda path: write_onnx(
      run.model(), path, run.tokenizer(), quantization, run.labels if run.problem else None,
      overwrite=True, extra=run.export_metadata()), quantization, run.multi_label_threshold)


def onnx_forward(run: runs.Run, quantization: str = "none"):
  """`forward` under ONNX Runtime, on the run's ONNX export (`onnx_file`)."""
  try:
    import onnxruntime  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ImportError("--runtime=onnxruntime needs ONNX Runtime and tf2onnx: pip install "
                      "'albert_tf[onnx]'") from None
  options = onnxruntime.SessionOptions()
  options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
  session = onnxruntime.InferenceSession(onnx_file(run, quantization), options,
                                         providers=["CPUExecutionProvider"])
  inputs = {i.name: i.type for i in session.get_inputs()}
  names = [o.name for o in session.get_outputs()]

  def forward(batch):
    feed = {k: batch[k].astype(np.float32 if "float" in inputs[k] else np.int32)
            for k in inputs}
    return dict(zip(names, session.run(names, feed)))
  return forward
