"""GLUE fine-tuning, evaluation, prediction and serving export: what run_classifier.py does.

Training evaluates every saved checkpoint on dev and keeps the best as
`model.ckpt-best` (with `best_trial.txt`); `--do_eval` then reports the best
checkpoint's dev metrics in `eval_results.txt`, `--do_predict` writes the GLUE
submission files (`<TASK>.tsv`: index, prediction) from it, and `--export_dir`
saves it as a SavedModel that takes raw sentences.
"""

import dataclasses
import math
import os
from typing import Dict, List, Optional, Sequence

from absl import logging
import numpy as np

from albert_tf import problems
from albert_tf.cli import TPU_FLAGS, option
from albert_tf.data import glue
from albert_tf.files import atomic_open, write_results
from albert_tf.modeling.models import AlbertClassifier
from albert_tf.tasks.base import FinetuningTask, StepOptions
from albert_tf.tasks.own_data import OwnDataRun, per_example_loss as own_data_loss
from albert_tf.training import metrics as metrics_lib


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


def per_example_loss(task: glue.GlueTask):
  """The original losses: softmax cross-entropy, or squared error for regression (those of
  your own files' single-label and regression problems)."""
  return own_data_loss(problems.Problem.of_glue(task))


def majority_baseline(train: Sequence[glue.InputExample], dev: Sequence[glue.InputExample],
                      task: glue.GlueTask) -> Dict[str, float]:
  """Dev metrics of always predicting the training set's most common label."""
  labels = [glue.label_id(task, e.label) for e in dev]
  if task.is_regression:
    mean = float(np.mean([glue.label_id(task, e.label) for e in train]))
    return {"mse": float(np.mean((np.asarray(labels) - mean) ** 2))}
  counts = np.bincount([glue.label_id(task, e.label) for e in train], minlength=task.num_labels)
  majority = int(np.argmax(counts))
  return metrics_lib.glue_metrics(task.metrics, labels, [majority] * len(labels))


class GlueRun(FinetuningTask):
  """One run_classifier.py invocation."""

  def check_options(self):
    opts = self.opts
    if not (opts.task_name and opts.data_dir):
      raise ValueError("pass --task_name and --data_dir (a GLUE task), or your own files: "
                       "--train_file, --dev_file, --test_file")
    self.task = glue.get_task(opts.task_name)
    self.name, self.best_metric = self.task.name, self.task.best_metric
    if not (opts.do_train or opts.do_eval or opts.do_predict or opts.export_dir):
      raise ValueError("nothing to do: set --do_train, --do_eval, --do_predict or --export_dir")
    if opts.do_train and "train" not in self.task.splits:
      raise ValueError(f"{self.task.name} has no training data; predict it with the model of "
                       "another task (AX: an MNLI model via --init_checkpoint)")
    if opts.do_eval and not self.task.dev_splits:
      raise ValueError(f"{self.task.name} has no dev split to evaluate")

  def read_inputs(self):
    opts = self.opts
    self.splits = (["train"] if opts.do_train else []) \
        + (self.task.dev_splits if (opts.do_train or opts.do_eval) else []) \
        + (self.task.test_splits if opts.do_predict else [])
    self.examples = {split: glue.read_examples(opts.data_dir, self.task, split,
                                               opts.skip_malformed_rows)
                     for split in self.splits}

  def check_outputs(self):
    self.check_export_dir()

  def build_features(self):
    opts = self.opts
    self.records = {split: glue.cached_features(
        opts.data_dir, self.task, split, self.source.tokenizer, opts.max_seq_length,
        opts.cached_dir or opts.output_dir, self.examples[split], opts.skip_malformed_rows,
        opts.progress) for split in self.splits}

  def needs_inference(self):
    return self.opts.do_eval or self.opts.do_predict or bool(self.opts.export_dir)

  # -- model

  def build_model(self) -> AlbertClassifier:
    return AlbertClassifier(self.source.build_encoder(), self.task.num_labels,
                            dropout_rate=self.opts.dropout_prob,
                            initializer_range=self.source.config.initializer_range,
                            seed=self.opts.seed)

  def per_example_loss(self, model, batch, training):
    return per_example_loss(self.task)(model, batch, training)

  def train_dataset(self):
    opts = self.opts
    return glue.dataset(self.records["train"], self.task, opts.max_seq_length,
                        self.micro_batch_size, is_training=True, seed=opts.seed,
                        bucket_by_length=opts.bucket_by_length)

  def split_logits(self, model, split: str) -> np.ndarray:
    """Logits [N, C] for every example of a split, in file order."""
    batch_size = self.opts.eval_batch_size if split.startswith("dev") \
        else self.opts.predict_batch_size
    return self.predict_logits(model, glue.dataset(
        self.records[split], self.task, self.opts.max_seq_length, batch_size, is_training=False,
        bucket_by_length=self.opts.bucket_by_length))

  def evaluate(self, model) -> Dict[str, float]:
    """Dev metrics; MNLI's mismatched dev set is reported with a `mismatched_` prefix."""
    result = {}
    for split in self.task.dev_splits:
      logits = self.split_logits(model, split)
      labels = np.array([glue.label_id(self.task, e.label) for e in self.examples[split]])
      problem = problems.Problem.of_glue(self.task)
      values = metrics_lib.glue_metrics(self.task.metrics, labels, problem.predictions(logits),
                                        problem.mean_loss(labels, logits))
      prefix = "" if split == "dev" else split[len("dev_"):] + "_"
      result.update({prefix + k: v for k, v in values.items()})
    return result

  # -- inference

  def infer(self, model, weights):
    opts, results = self.opts, {}
    if opts.do_eval:
      results["eval"] = self.write_eval_results(model)
    if opts.do_predict:
      results["predict"] = {"files": len(self.write_predictions(model))}
    if opts.export_dir:
      self.export(model, weights)
    return results

  def export(self, model, weights: str) -> None:
    """The end-to-end SavedModel (raw sentences in, probabilities out) of `weights` in
    --export_dir."""
    from albert_tf.export.serving import export_classifier  # pylint: disable=g-import-not-at-top
    opts = self.opts
    threshold = None if math.isnan(opts.threshold_to_export) else opts.threshold_to_export
    pairs = any(s.text_b is not None for s in self.task.splits.values())
    self.export_once(weights, "classifier", (threshold, opts.max_seq_length), lambda **kw:
                     export_classifier(model, opts.export_dir, self.source.tokenizer,
                                       opts.max_seq_length, self.task.labels, pairs=pairs,
                                       threshold=threshold, **kw))

  def write_eval_results(self, model) -> Dict[str, float]:
    result = self.evaluate(model)
    step = self.best_step()
    result = dict(global_step=step if step is not None else -1, **result)
    if "train" in self.examples:
      baseline = majority_baseline(self.examples["train"], self.examples["dev"], self.task)
      result.update({f"majority_baseline_{k}": v for k, v in baseline.items()})
    write_results(os.path.join(self.opts.output_dir, "eval_results.txt"), result)
    for k, v in result.items():
      logging.info("eval %s = %s", k, v)
    return result

  def write_predictions(self, model) -> List[str]:
    """GLUE submission files: `<TASK>.tsv` with `index` and `prediction` (label strings)."""
    written = []
    for split in self.task.test_splits:
      examples = self.examples[split]
      logits = self.split_logits(model, split)
      path = os.path.join(self.opts.output_dir, self.task.submission[split] + ".tsv")
      with atomic_open(path) as f:
        f.write("index\tprediction\n")
        problem = problems.Problem.of_glue(self.task)
        for example, row in zip(examples, logits):
          f.write(f"{example.guid}\t{problem.submission(row)}\n")
      written.append(path)
      print(f"Wrote {len(examples)} predictions to {path}")
    return written


def run(opts: ClassifierOptions) -> Dict[str, Dict[str, float]]:
  """Checks the flags and inputs, then trains / evaluates / predicts / exports: a GLUE task,
  or your own files (`albert_tf.tasks.own_data`)."""
  if opts.train_file or opts.dev_file or opts.test_file:
    return OwnDataRun(opts).run()
  return GlueRun(opts).run()
