"""Token classification (named-entity recognition): what run_ner.py does.

`--data_dir` holds `train.txt`, `dev.txt` and `test.txt` in the CoNLL format
(`albert_tf.data.ner`): a token per line, its tag in the last column, blank lines
between sentences. The tags come from train.txt (`labels.txt` in the output
directory, part of the run's record, so a resumed run keeps them) and every dev or
test tag must be one of them. Training evaluates every saved checkpoint on dev and
keeps the best F1 as `model.ckpt-best`; `--do_eval` writes its entity-level
precision, recall and F1 (seqeval's, overall and per type) to `eval_results.txt`;
`--do_predict` writes `test_predictions.txt`: test.txt's lines with the predicted tag
appended, blank lines kept, as conlleval reads them.

The loss is the cross-entropy of each word's first piece, averaged over the words of
the whole update (transformers' token classification); the other pieces, [CLS],
[SEP] and padding are ignored.
"""

import dataclasses
import os
from typing import Dict, List

from absl import logging
import numpy as np
import tensorflow as tf

from albert_tf.cli import option
from albert_tf.data import ner
from albert_tf.data.records import SEQUENCE_KEYS, read_dataset, write_records
from albert_tf.files import atomic_open, read_text, write_results
from albert_tf.modeling.models import AlbertTokenClassifier
from albert_tf import runs
from albert_tf.tasks.base import FinetuningTask, StepOptions

SPLITS = ("train", "dev", "test")


@dataclasses.dataclass(kw_only=True)
class NerOptions(StepOptions):
  """run_ner.py's flags (the fine-tuning scripts' own, and the data's)."""
  data_dir: str = option(help="A directory with train.txt, dev.txt and test.txt (CoNLL: a "
                         "token per line, its tag in the last column, blank lines between "
                         "sentences).")
  max_seq_length: int = option(128, "Pieces per window, [CLS] and [SEP] included.", at_least=3)
  dropout_prob: float = option(0.1, "Dropout on each piece's output before the tag classifier.",
                               training="fixed", at_least=0, below=1)
  tag_scheme: str = option("auto", "IOB2, IOB1 or BIOES; auto: detected from train.txt.",
                           choices=("auto",) + ner.SCHEMES)
  doc_stride: int = option(64, "Pieces between the windows of a sentence longer than a "
                           "window (each word is predicted in one of them).", at_least=1)


def _split_file(data_dir: str, split: str) -> str:
  path = os.path.join(data_dir, f"{split}.txt")
  if not os.path.isfile(path):
    raise FileNotFoundError(f"--data_dir={data_dir} has no {split}.txt ({path})")
  return path


class NerRun(FinetuningTask):
  """One run_ner.py invocation."""
  name = "NER"
  best_metric = "f1"

  def check_options(self):
    opts = self.opts
    if not (opts.do_train or opts.do_eval or opts.do_predict or opts.export_dir):
      raise ValueError("nothing to do: set --do_train, --do_eval, --do_predict or --export_dir")
    if not os.path.isdir(opts.data_dir):
      raise FileNotFoundError(f"--data_dir={opts.data_dir} is not a directory")

  def read_inputs(self):
    opts = self.opts
    self.splits = (["train"] if opts.do_train else []) \
        + (["dev"] if opts.do_train or opts.do_eval else []) \
        + (["test"] if opts.do_predict else [])
    self.files = {split: _split_file(opts.data_dir, split) for split in self.splits}
    # The training file is read in passes, a sentence at a time (its tags, scheme and
    # checks; then its windows, written to TFRecords): memory holds no file's sentences.
    # Dev and test are kept, for seqeval's scores and the predictions' lines.
    self.sentences = {split: ner.read_sentences(path) for split, path in self.files.items()
                      if split != "train"}
    trained = runs.earlier_settings(opts.output_dir, runs.TaggerSettings)
    if "train" in self.files or not trained.labels:
      train = self.files.get("train") or _split_file(opts.data_dir, "train")
      found = ner.survey(ner.iter_sentences(train), train)
      self.labels, self.scheme = found.labels, found.scheme
      self.train_sentences = found.sentences
      # Character tagging (the Chinese sets): what the serving export splits text into.
      self.per_character = found.per_character
    else:   # evaluating, predicting or exporting with a trained run's tags
      self.labels, self.scheme = list(trained.labels), trained.tag_scheme
      self.per_character = trained.per_character
    if opts.tag_scheme != "auto":
      self.scheme = opts.tag_scheme
    for split in ("dev", "test"):
      if split in self.sentences:
        ner.check_tags(self.sentences[split], self.files[split], known=self.labels)

  def check_outputs(self):
    self.check_export_dir()

  def needs_inference(self):
    return self.opts.do_eval or self.opts.do_predict or bool(self.opts.export_dir)

  def run_record(self):
    return runs.TaggerSettings(tuple(self.labels), self.scheme, self.opts.doc_stride,
                               self.per_character)

  def build_features(self):
    opts = self.opts
    runs.write_labels(opts.output_dir, self.labels)
    self.windows, self.records = {}, {}
    for split in self.splits:
      sentences = self.sentences.get(split) or ner.iter_sentences(self.files[split])
      windows = ner.iter_windows(sentences, self.labels, self.source.tokenizer,
                                 opts.max_seq_length, opts.doc_stride)
      if split != "train":                       # (kept: they place the predicted tags)
        windows = self.windows[split] = list(windows)
      path = os.path.join(opts.output_dir, f"ner_{split}.tf_record")
      count = write_records((dict(input_ids=w.input_ids, input_mask=w.input_mask,
                                  segment_ids=w.segment_ids, label_ids=w.label_ids)
                             for w in windows), path)
      self.records[split] = path
      sentences = len(self.sentences[split]) if split != "train" else self.train_sentences
      print(f"{split}: {sentences} sentences, {count} windows")

  # -- model

  def build_model(self) -> AlbertTokenClassifier:
    return AlbertTokenClassifier(self.source.build_encoder(), len(self.labels),
                                 dropout_rate=self.opts.dropout_prob,
                                 initializer_range=self.source.config.initializer_range,
                                 seed=self.opts.seed)

  def dataset(self, split: str, batch_size: int, is_training: bool) -> tf.data.Dataset:
    seq = tf.io.FixedLenFeature([self.opts.max_seq_length], tf.int64)
    schema = dict(input_ids=seq, input_mask=seq, segment_ids=seq, label_ids=seq)
    return read_dataset(self.records[split], schema, batch_size, is_training, self.opts.seed,
                        bucket_by_length=self.opts.bucket_by_length,
                        sequence_keys=SEQUENCE_KEYS + ("label_ids",))

  def train_dataset(self):
    return self.dataset("train", self.micro_batch_size, is_training=True)

  def update_totals(self, micro_batches) -> Dict[str, tf.Tensor]:
    """The whole update's labelled words, which its loss is averaged over."""
    return dict(labelled=tf.add_n([_labelled(b) for b in micro_batches]))

  def step_metrics(self, model, batch, training, global_batch, totals=None):
    if totals:
      labelled = totals["labelled"]
    else:
      labelled = tf.distribute.get_replica_context().all_reduce("sum", _labelled(batch))
    logits = tf.cast(model(batch, training=training), tf.float32)           # [b, S, C]
    labels = batch["label_ids"]                                               # [b, S]
    weights = tf.cast(labels >= 0, tf.float32)
    per_token = tf.nn.sparse_softmax_cross_entropy_with_logits(tf.maximum(labels, 0), logits)
    loss = tf.reduce_sum(per_token * weights) / tf.maximum(labelled, 1.0)
    correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels), tf.float32)
    return loss, dict(loss=loss, correct=tf.reduce_sum(correct * weights),
                      count=tf.reduce_sum(weights))

  def summarize(self, sums, steps: int, global_batch: int) -> Dict[str, float]:
    return dict(loss=float(sums["loss"]) / steps,
                accuracy=float(sums["correct"]) / max(float(sums["count"]), 1e-9))

  # -- inference

  def predicted_tags(self, model, split: str) -> List[List[str]]:
    """One predicted tag per word of every sentence of `split`."""
    batch_size = self.opts.eval_batch_size if split == "dev" else self.opts.predict_batch_size
    rows = []
    for _, logits in self.predict(model, self.dataset(split, batch_size, is_training=False),
                                  inputs=["input_word_ids", "input_mask", "input_type_ids"]):
      ids = logits.argmax(-1)                                                # [b, width]
      rows.extend(np.pad(ids, [(0, 0), (0, self.opts.max_seq_length - ids.shape[1])]))
    return ner.merge_predictions(self.sentences[split], self.windows[split], rows, self.labels)

  def evaluate(self, model) -> Dict[str, float]:
    """Dev entity-level precision, recall and F1 (seqeval's, as conlleval counts), overall
    and per type."""
    return entity_metrics([s.tags for s in self.sentences["dev"]],
                          self.predicted_tags(model, "dev"))

  def infer(self, model, weights):
    opts, results = self.opts, {}
    if opts.do_eval:
      predicted = self.predicted_tags(model, "dev")
      result = entity_metrics([s.tags for s in self.sentences["dev"]], predicted)
      step = self.best_step()
      result = dict(global_step=step if step is not None else -1, **result)
      if not any(t != "O" for tags in predicted for t in tags):
        self.not_learned("no dev word is tagged as an entity (every tag is O)", result)
      write_results(os.path.join(opts.output_dir, "eval_results.txt"), result)
      for k, v in result.items():
        logging.info("eval %s = %s", k, v)
      results["eval"] = result
    if opts.do_predict:
      path = os.path.join(opts.output_dir, "test_predictions.txt")
      write_predictions(self.files["test"], self.sentences["test"],
                        self.predicted_tags(model, "test"), path)
      print(f"Wrote the predicted tags of {self.files['test']} to {path}")
      results["predict"] = {"sentences": len(self.sentences["test"])}
    if opts.export_dir:
      self.export(model, weights)
    return results

  def export(self, model, weights: str) -> None:
    """The end-to-end tagger SavedModel (raw sentences in, entities with character offsets
    out) of `weights` in --export_dir."""
    from albert_tf.export.tagger import export_tagger  # pylint: disable=g-import-not-at-top
    opts = self.opts
    settings = (opts.max_seq_length, opts.doc_stride, self.labels, self.scheme,
                self.per_character)
    self.export_once(weights, "tagger", settings, lambda **kw: export_tagger(
        model, opts.export_dir, self.source.tokenizer, opts.max_seq_length, opts.doc_stride,
        self.labels, self.scheme, self.per_character, **kw))


def _labelled(batch) -> tf.Tensor:
  return tf.reduce_sum(tf.cast(batch["label_ids"] >= 0, tf.float32))


def entity_metrics(gold: List[List[str]], predicted: List[List[str]]) -> Dict[str, float]:
  """seqeval's entity-level precision, recall and F1 (its default, conlleval's counting),
  overall and `<type>_precision` ... per entity type."""
  from seqeval import metrics  # pylint: disable=g-import-not-at-top
  result = dict(precision=metrics.precision_score(gold, predicted),
                recall=metrics.recall_score(gold, predicted),
                f1=metrics.f1_score(gold, predicted),
                accuracy=metrics.accuracy_score(gold, predicted))
  report = metrics.classification_report(gold, predicted, output_dict=True, zero_division=0)
  for kind, values in sorted(report.items()):
    if " avg" not in kind:
      result.update({f"{kind}_{k.replace('-score', '')}": float(values[k])
                     for k in ("precision", "recall", "f1-score")})
  return {k: float(v) for k, v in result.items()}


def write_predictions(source: str, sentences: List[ner.Sentence], tags: List[List[str]],
                      path: str) -> None:
  """`source`'s lines with each token's predicted tag appended (blank and -DOCSTART- lines
  kept; the latter with O), as conlleval reads them."""
  predicted = {line: tag for sentence, row in zip(sentences, tags)
               for line, tag in zip(sentence.lines, row)}
  lines = read_text(source).split("\n")
  if lines[-1] == "":   # the final newline ends the last line
    lines.pop()
  with atomic_open(path) as f:
    for number, line in enumerate(lines, 1):
      line = line.rstrip("\r")
      if number in predicted:
        f.write(f"{line} {predicted[number]}\n")
      elif line.split() and line.split()[0] == ner.DOCSTART:
        f.write(f"{line} O\n")
      else:
        f.write(line + "\n")


def run(opts: NerOptions) -> Dict[str, Dict[str, float]]:
  """Checks the flags and inputs, then trains / evaluates / predicts."""
  return NerRun(opts).run()
