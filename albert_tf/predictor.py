"""Predictions on new text from a trained run: `Predictor.load(output_dir).predict(texts)`.

The run is read through its owner, `albert_tf.runs.Run`: the task's model with the best
checkpoint's weights, the run's tokenizer, labels and problem. Texts are sorted by length
into batches, each padded to its own longest, and the answers put back in input order,
so short texts do not pay for long ones.

A classifier's answers are those of `test_predictions.jsonl` (`albert_tf.data.own.answer`):
single-label `label` and `probabilities` (label -> p), multi-label `labels` (those over
the threshold) and `probabilities` (sigmoids), regression `score`; GLUE runs answer as
single-label (or regression, STS-B) over the task's labels. A run_ner.py run answers each
sentence with its `entities`, `{"type", "text", "start", "end"}` in characters
(`sentence[start:end]` is the entity), found as its exported tagger finds them
(`albert_tf.export.tagger`).
"""

import dataclasses
from typing import Dict, List, Sequence, Union

import numpy as np
import tensorflow as tf

from albert_tf import runs
from albert_tf.data import own
from albert_tf.export.tagger import tagger_module
from albert_tf.progress import progress_bar
from albert_tf.text.packing import pack_inputs

Example = Union[str, Sequence[str], Dict[str, str]]


@dataclasses.dataclass(eq=False)   # hashed by identity: its tf.function is per predictor
class Predictor:
  """A run's model, tokenizer and problem, ready to answer (see the module docstring)."""
  run: runs.Run
  model: object
  tokenizer: object
  problem: own.Problem
  batch_size: int = 32
  multi_label_threshold: float = 0.5

  @classmethod
  def load(cls, path: str, batch_size: int = 32, multi_label_threshold: float = 0.5,
           flag: str = "--model") -> "Predictor":
    """The predictor of the run in `path` (a run_classifier.py --output_dir); errors name
    `flag`."""
    if batch_size < 1:
      raise ValueError(f"--batch_size={batch_size}: at least 1")
    run = runs.Run.read(path, flag, kinds=["classification", "token_classification"])
    if run.kind.name == "token_classification":
      model, tokenizer = run.model(), run.tokenizer()
      record = run.record
      tagger = tagger_module(model, tokenizer, run.max_seq_length, record["doc_stride"],
                             run.labels, record["tag_scheme"], record["per_character"])
      # The model is the tagger's traced function (sentences [B] -> entities, tags ...).
      return cls(run, tagger.__call__, tokenizer, None, batch_size, multi_label_threshold)
    problem = own.Problem(run.problem_type or own.SINGLE, run.labels or [])
    return cls(run, run.model(), run.tokenizer(), problem, batch_size, multi_label_threshold)

  @property
  def text_fields(self) -> List[str]:
    """The names a dict example's (or an input file's) texts go by: the run's own text
    columns (files of your own), else `text` or `sentence1` and `sentence2` (a GLUE run)."""
    own_columns = self.run.record.get("text_columns")
    if own_columns:
      return list(own_columns)
    if self.problem is None:
      return ["text"]                                             # a tagger's sentence
    return ["text"] if len(self.run.text_fields) == 1 else ["sentence1", "sentence2"]

  def texts(self, example: Example, where: str = "") -> List[str]:
    """An example's one or two texts."""
    fields = self.text_fields
    if isinstance(example, str):
      texts = [example]
    elif isinstance(example, dict):
      missing = [f for f in fields if f not in example]
      if missing:
        raise ValueError(f"{where}no field {', '.join(map(repr, missing))}; this run reads "
                         f"{', '.join(map(repr, fields))}")
      texts = [example[f] for f in fields]
    else:
      texts = list(example)
    if len(texts) != len(fields):
      raise ValueError(f"{where}{len(texts)} text(s), but this run reads {len(fields)} "
                       f"({', '.join(fields)})")
    return texts

  def predict(self, examples: Sequence[Example], progress: bool = False) -> List[dict]:
    """One answer dict per example, in order (see the module docstring)."""
    if self.problem is None:
      return self.entities(examples, progress)
    logits = self.logits(examples, progress)
    return [own.answer(self.problem, row, self.multi_label_threshold) for row in logits]

  def logits(self, examples: Sequence[Example], progress: bool = False) -> np.ndarray:
    """The model's outputs [N, C] for `examples`, in order."""
    seq = self.run.max_seq_length
    tokenizer = self.tokenizer
    packed = []
    for i, example in enumerate(examples):
      ids = [tokenizer.encode(t) for t in self.texts(example, f"example {i}: ")]
      packed.append(pack_inputs(ids[0], ids[1] if len(ids) > 1 else None, seq,
                                tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id))
    lengths = np.array([sum(p["input_mask"]) for p in packed], np.int64)
    order = np.argsort(lengths, kind="stable")                    # shortest first
    out = np.zeros((len(packed), self.problem.num_outputs), np.float32)
    bar = progress_bar(total=len(packed), desc="predicting", unit="rows", disable=not progress)
    for start in range(0, len(order), self.batch_size):
      rows = order[start:start + self.batch_size]
      width = int(lengths[rows].max())                            # this batch's longest
      batch = {key: tf.constant(np.array([packed[r][key][:width] for r in rows], np.int32))
               for key in ("input_word_ids", "input_mask", "input_type_ids")}
      out[rows] = self._call(batch).numpy()
      bar.update(len(rows))
    bar.close()
    return out

  def entities(self, examples: Sequence[Example], progress: bool = False) -> List[dict]:
    """A tagger's answers: {"entities": [{"type", "text", "start", "end"}, ...]} per
    sentence, in order."""
    sentences = [self.texts(e, f"example {i}: ")[0] for i, e in enumerate(examples)]
    order = np.argsort([len(s) for s in sentences], kind="stable")
    out = [None] * len(sentences)
    bar = progress_bar(total=len(sentences), desc="tagging", unit="rows", disable=not progress)
    for start in range(0, len(order), self.batch_size):
      rows = order[start:start + self.batch_size]
      found = self.model(tf.constant([sentences[r] for r in rows]))
      found = {k: v.numpy() for k, v in found.items() if k.startswith(("entity", "num_entities"))}
      for j, r in enumerate(rows):
        out[r] = dict(entities=[dict(type=found["entity_types"][j, e].decode(),
                                     text=found["entity_texts"][j, e].decode(),
                                     start=int(found["entity_starts"][j, e]),
                                     end=int(found["entity_ends"][j, e]))
                                for e in range(int(found["num_entities"][j]))])
      bar.update(len(rows))
    bar.close()
    return out

  @tf.function(input_signature=[{k: tf.TensorSpec([None, None], tf.int32)
                                 for k in ("input_word_ids", "input_mask", "input_type_ids")}],
               reduce_retracing=True)
  def _call(self, batch):
    return tf.cast(self.model(batch, training=False), tf.float32)              # [B, C]
