"""Fine-tuning a classifier, evaluating, predicting and exporting it: what run_classifier.py does.

One path for a GLUE task and for your own files: what differs (columns, problem, metrics,
where predictions go) is `albert_tf.tasks.classifier_data`'s. Training evaluates every saved
checkpoint on dev and keeps the best as `model.ckpt-best` (with `best_trial.txt`);
`--do_eval` then reports the best checkpoint's dev metrics in `eval_results.txt`,
`--do_predict` writes the test predictions from it (GLUE submission files `<TASK>.tsv`, or
`test_predictions.jsonl`), and `--export_dir` saves it as a SavedModel that takes raw text.
The losses are those transformers computes for each problem: softmax cross-entropy, sigmoid
cross-entropy averaged over examples x labels, squared error.
"""

import dataclasses
import math
import os
from typing import Dict, Optional

from absl import logging
import numpy as np

import tensorflow as tf

from albert_tf import problems
from albert_tf.cli import TPU_FLAGS, option
from albert_tf.data import own
from albert_tf.data.records import read_dataset, write_records
from albert_tf.files import write_results
from albert_tf.modeling.models import AlbertClassifier
from albert_tf.tasks.base import FinetuningTask, StepOptions
from albert_tf.tasks.classifier_data import PICTURE, Examples, examples_of
from albert_tf.text.packing import pack_texts


# Flags of the original run_classifier.py that are not options here.
ORIGINAL_FLAGS = dict(TPU_FLAGS)


@dataclasses.dataclass(kw_only=True)
class ClassifierOptions(StepOptions):
  """run_classifier.py's flags (the original's, plus strategy, dtype and seed)."""
  data_dir: Optional[str] = option(None, "The task's GLUE directory (or the GLUE root).")
  task_name: Optional[str] = option(None, "CoLA, MNLI, MRPC, QNLI, QQP, RTE, SST-2, STS-B, WNLI "
                                    "or AX (case-insensitive); or your own files instead "
                                    "(--train_file, --dev_file, --test_file).")
  train_file: Optional[str] = option(None, "Your own training file instead of a GLUE task: "
                                     ".csv, .tsv or .jsonl (docs/own_data.md).")
  dev_file: Optional[str] = option(None, "Your own dev file (every checkpoint is evaluated on "
                                   "it; the best is model.ckpt-best).")
  test_file: Optional[str] = option(None, "Your own test file, predicted into "
                                    "test_predictions.jsonl (labels optional).")
  text_columns: str = option("text", "Your files: the text column, or two columns of a "
                             "sentence pair separated by a comma (premise,hypothesis).")
  label_column: str = option("label", "Your files: the label column.")
  id_column: Optional[str] = option(None, "Your files: a column copied into the predictions.")
  label_delimiter: Optional[str] = option(None, "Your CSV/TSV files: several labels in a "
                                          "cell, split by this (e.g. |): multi-label.")
  problem_type: str = option("auto", "Your files: auto (list labels: multi-label; numbers with "
                             "a non-integer: regression; else single-label), or one of "
                             "transformers' names.", choices=(problems.AUTO,
                             *problems.TYPES))
  multi_label_threshold: float = option(0.5, "Multi-label: a label is predicted when its "
                                        "sigmoid is above this.")
  best_metric: Optional[str] = option(None, "Your files: the dev metric that picks "
                                      "model.ckpt-best (default accuracy, micro_f1 or pearson).")
  do_train: bool = option(False, "Fine-tune on train.tsv.")
  do_predict: bool = option(False, "Write GLUE submission files for the test split.")
  cached_dir: Optional[str] = option(None, "Where tokenized features are cached (default "
                                     "--output_dir).")
  threshold_to_export: float = option(float("nan"), "A decision threshold the exported "
                                      "classifier serves with its outputs (`threshold`); NaN: "
                                      "none. (The original's flag.)")
  skip_malformed_rows: bool = option(False, "Skip rows with the wrong number of fields, with a "
                                     "warning (the original did so for QQP), instead of failing.")


class ClassifierRun(FinetuningTask):
  """One run_classifier.py invocation: a GLUE task or your own files (`examples`)."""

  def check_options(self):
    opts = self.opts
    self.examples: Examples = examples_of(opts)
    self.name = self.examples.name
    if not (opts.do_train or opts.do_eval or opts.do_predict or opts.export_dir):
      raise ValueError("nothing to do: set --do_train, --do_eval, --do_predict or --export_dir")

  def read_inputs(self):
    opts, data = self.opts, self.examples
    self.splits = (["train"] if opts.do_train else []) \
        + (data.dev_splits if (opts.do_train or opts.do_eval) else []) \
        + (data.test_splits if opts.do_predict else [])
    self.rows = data.read(opts, self.splits)
    self.problem, self.best_metric = data.problem, data.best_metric
    self.targets = {split: problems.targets(rows, self.problem, data.path(opts, split))
                    for split, rows in self.rows.items() if rows[0].label is not None}

  def check_outputs(self):
    self.check_export_dir()

  def run_record(self):
    return self.examples.record()

  def can_evaluate(self):
    return any(split in self.targets for split in self.examples.dev_splits)

  def needs_inference(self):
    return self.opts.do_eval or self.opts.do_predict or bool(self.opts.export_dir)

  # -- features

  def build_features(self):
    """Each split's features, cached in --cached_dir (default --output_dir) under a name
    that fingerprints the file, the vocabulary and the settings."""
    opts = self.opts
    self.examples.write_labels(opts.output_dir)
    cache = opts.cached_dir or opts.output_dir
    os.makedirs(cache, exist_ok=True)
    self.records = {}
    for split, rows in self.rows.items():
      path = os.path.join(cache, self.examples.features_key(opts, self.source.tokenizer, split)
                          + ".tf_record")
      if not os.path.exists(path):
        targets = self.targets.get(split)
        write_records((self.features(row, targets[i] if targets else None)
                       for i, row in enumerate(rows)), path)
        logging.info("Wrote %d %s features to %s", len(rows), split, path)
      self.records[split] = path

  def features(self, row: own.Row, target) -> Dict[str, object]:
    """The original `convert_single_example`: `[CLS] a [SEP] (b [SEP])`, a pair truncated
    longest first."""
    packed = pack_texts(self.source.tokenizer, row.texts, self.opts.max_seq_length)
    if target is None:   # unlabelled test rows
      target = self.problem.empty_target()
    return dict(input_ids=packed["input_word_ids"], input_mask=packed["input_mask"],
                segment_ids=packed["input_type_ids"], label_ids=target)

  def dataset(self, split: str, batch_size: int, is_training: bool) -> tf.data.Dataset:
    """Batches of model inputs (input_word_ids, input_mask, input_type_ids) and
    `label_ids`; see `records.read_dataset`."""
    seq = tf.io.FixedLenFeature([self.opts.max_seq_length], tf.int64)
    schema = dict(input_ids=seq, input_mask=seq, segment_ids=seq,
                  label_ids=self.problem.target_feature())
    return read_dataset(self.records[split], schema, batch_size, is_training, self.opts.seed,
                        bucket_by_length=self.opts.bucket_by_length)

  # -- model

  def build_model(self) -> AlbertClassifier:
    return AlbertClassifier(self.source.build_encoder(), self.problem.num_outputs,
                            dropout_rate=self.opts.dropout_prob,
                            initializer_range=self.source.config.initializer_range,
                            seed=self.opts.seed)

  def per_example_loss(self, model, batch, training):
    return self.problem.per_example_loss(model(batch, training=training), batch["label_ids"])

  def train_dataset(self):
    return self.dataset("train", self.micro_batch_size, is_training=True)

  def split_logits(self, model, split: str) -> np.ndarray:
    """Logits [N, C] for every row of a split, in file order."""
    batch_size = self.opts.eval_batch_size if split.startswith("dev") \
        else self.opts.predict_batch_size
    return self.predict_logits(model, self.dataset(split, batch_size, is_training=False))

  def evaluate(self, model) -> Dict[str, float]:
    """Dev metrics; a second dev split (MNLI's mismatched) is reported with its prefix."""
    return self.dev_metrics(self.dev_logits(model))

  def dev_logits(self, model) -> Dict[str, np.ndarray]:
    """Each dev split's logits, computed once for its metrics and its picture."""
    return {split: self.split_logits(model, split) for split in self.examples.dev_splits}

  def dev_metrics(self, logits: Dict[str, np.ndarray]) -> Dict[str, float]:
    result = {}
    for split, rows in logits.items():                                  # rows: [N, C]
      values = self.examples.metrics(np.asarray(self.targets[split]), rows,
                                     self.opts.multi_label_threshold)
      prefix = "" if split == "dev" else split[len("dev_"):] + "_"
      result.update({prefix + k: v for k, v in values.items()})
    return result

  # -- inference

  def infer(self, model, weights):
    opts, results = self.opts, {}
    if opts.do_eval:
      results["eval"] = self.write_eval_results(model)
    if opts.do_predict:
      results["predict"] = {"rows": self.write_predictions(model)}
    if opts.export_dir:
      self.export(model, weights)
    return results

  def write_eval_results(self, model) -> Dict[str, float]:
    opts = self.opts
    logits = self.dev_logits(model)
    step = self.best_step()
    result = dict(global_step=step if step is not None else -1, **self.dev_metrics(logits))
    if self.examples.picture:
      self.problem.picture(np.asarray(self.targets["dev"]), logits["dev"],
                           opts.multi_label_threshold, os.path.join(opts.output_dir, PICTURE),
                           f"dev, step {result['global_step']}")
    if "train" in self.targets:
      result.update(self.examples.baseline(np.asarray(self.targets["train"]),
                                           np.asarray(self.targets["dev"]),
                                           opts.multi_label_threshold))
    write_results(os.path.join(opts.output_dir, "eval_results.txt"), result)
    for k, v in result.items():
      logging.info("eval %s = %s", k, v)
    return result

  def write_predictions(self, model) -> int:
    """Every test split's predictions; returns how many rows were predicted."""
    count = 0
    for split in self.examples.test_splits:
      rows = self.rows[split]
      path = self.examples.write_predictions(self.opts.output_dir, split, rows,
                                             self.split_logits(model, split),
                                             self.opts.multi_label_threshold)
      print(f"Wrote {len(rows)} predictions to {path}")
      count += len(rows)
    return count

  def export(self, model, weights: str) -> None:
    """The end-to-end SavedModel of `weights` (raw text in) in --export_dir."""
    from albert_tf.export.serving import export_classifier  # pylint: disable=g-import-not-at-top
    opts, problem = self.opts, self.problem
    threshold = None if math.isnan(opts.threshold_to_export) else opts.threshold_to_export
    multi = problem.serving_threshold(opts.multi_label_threshold)
    self.export_once(weights, "classifier", (problem.type, opts.max_seq_length, threshold, multi),
                     lambda **kw: export_classifier(
                         model, opts.export_dir, self.source.tokenizer, opts.max_seq_length,
                         problem.export_labels, pairs=self.examples.pairs, threshold=threshold,
                         multi_label_threshold=multi, **kw))


def run(opts: ClassifierOptions) -> Dict[str, Dict[str, float]]:
  """Checks the flags and inputs, then trains / evaluates / predicts / exports: a GLUE task,
  or your own files (`albert_tf.tasks.classifier_data`)."""
  return ClassifierRun(opts).run()
