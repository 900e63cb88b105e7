"""GLUE fine-tuning, evaluation, prediction and serving export: what run_classifier.py does.

Training evaluates every saved checkpoint on dev and keeps the best as
`model.ckpt-best` (with `best_trial.txt`); `--do_eval` then reports the best
checkpoint's dev metrics in `eval_results.txt`, `--do_predict` writes the GLUE
submission files (`<TASK>.tsv`: index, prediction) from it, and `--export_dir`
saves it as a SavedModel that takes raw sentences.
"""

import dataclasses
import os
from typing import Dict, List, Optional

from absl import logging
import numpy as np
import tensorflow as tf

from albert_tf import metrics as metrics_lib
from albert_tf.data import glue
from albert_tf.finetuning import (ModelSource, claim_output_dir, resolve_model_source,
                                  restore_for_inference, write_results)
from albert_tf.models import AlbertClassifier
from albert_tf.training import BEST_PREFIX, Finetuner, LoopOptions, get_strategy, set_precision


@dataclasses.dataclass
class ClassifierOptions:
  """run_classifier.py's flags (the original's, plus strategy, dtype and seed)."""
  data_dir: str
  output_dir: str
  task_name: str
  albert_config_file: Optional[str] = None
  init_checkpoint: Optional[str] = None
  albert_hub_module_handle: Optional[str] = None
  spm_model_file: Optional[str] = None
  do_lower_case: bool = True
  max_seq_length: int = 512
  do_train: bool = False
  do_eval: bool = False
  do_predict: bool = False
  train_batch_size: int = 32
  eval_batch_size: int = 8
  predict_batch_size: int = 8
  learning_rate: float = 5e-5
  train_step: int = 1000
  warmup_step: int = 0
  save_checkpoints_steps: int = 1000
  keep_checkpoint_max: int = 5
  optimizer: str = "adamw"
  dropout_prob: float = 0.1
  cached_dir: Optional[str] = None
  export_dir: Optional[str] = None
  skip_malformed_rows: bool = False
  distribution_strategy: str = "one_device"
  dtype: str = "float32"
  seed: int = 12345
  log_steps: int = 10
  progress: bool = True


def per_example_loss(task: glue.GlueTask):
  """The original losses: softmax cross-entropy, or squared error for regression."""
  def loss_fn(model, batch, training):
    logits = model(batch, training=training)                                  # [b, C]
    labels = batch["label_ids"]
    if task.is_regression:
      return dict(loss=tf.square(logits[:, 0] - labels))
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)      # [b]
    correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels), tf.float32)
    return dict(loss=loss, accuracy=correct)
  return loss_fn


class GlueRun:
  """One run_classifier.py invocation: checks everything, then trains / evaluates / predicts."""

  def __init__(self, opts: ClassifierOptions):
    self.opts = opts
    self.task = glue.get_task(opts.task_name)
    if not (opts.do_train or opts.do_eval or opts.do_predict or opts.export_dir):
      raise ValueError("nothing to do: set --do_train, --do_eval, --do_predict or --export_dir")
    if opts.do_train and "train" not in self.task.splits:
      raise ValueError(f"{self.task.name} has no training data; predict it with the model of "
                       "another task (AX: an MNLI model via --init_checkpoint)")
    if opts.do_eval and not self.task.dev_splits:
      raise ValueError(f"{self.task.name} has no dev split to evaluate")
    # Every input file is found and parsed before any work.
    self.splits = (["train"] if opts.do_train else []) \
        + (self.task.dev_splits if (opts.do_train or opts.do_eval) else []) \
        + (self.task.test_splits if opts.do_predict else [])
    examples = {split: glue.read_examples(opts.data_dir, self.task, split, opts.skip_malformed_rows)
                for split in self.splits}
    self.source: ModelSource = resolve_model_source(
        opts.albert_config_file, opts.albert_hub_module_handle, opts.init_checkpoint,
        opts.spm_model_file, opts.do_lower_case, opts.max_seq_length)
    self.strategy = get_strategy(opts.distribution_strategy)
    if opts.export_dir and os.path.exists(opts.export_dir) and os.listdir(opts.export_dir):
      raise FileExistsError(f"--export_dir={opts.export_dir} exists and is not empty")
    claim_output_dir(opts.output_dir, dict(
        task=self.task.name, model=self.source.config.to_dict(),
        hub=os.path.abspath(opts.albert_hub_module_handle) if opts.albert_hub_module_handle
        else None, spm_model_file=os.path.abspath(self.source.tokenizer.spm_model_file),
        do_lower_case=self.source.tokenizer.do_lower_case, max_seq_length=opts.max_seq_length))
    self.cached_dir = opts.cached_dir or opts.output_dir
    self.features = {split: glue.cached_features(
        opts.data_dir, self.task, split, self.source.tokenizer, opts.max_seq_length,
        self.cached_dir, opts.skip_malformed_rows, opts.progress, examples[split])
        for split in self.splits}
    self._predict = {}

  # -- model

  def build_model(self) -> AlbertClassifier:
    return AlbertClassifier(self.source.build_encoder(), self.task.num_labels,
                            dropout_rate=self.opts.dropout_prob,
                            initializer_range=self.source.config.initializer_range,
                            seed=self.opts.seed)

  def predict_logits(self, model, split: str) -> np.ndarray:
    """Logits [N, C] for every example of a split, in file order."""
    record, _ = self.features[split]
    data = glue.dataset(record, self.task, self.opts.max_seq_length,
                        self.opts.eval_batch_size if split.startswith("dev")
                        else self.opts.predict_batch_size, is_training=False)
    if id(model) not in self._predict:
      self._predict[id(model)] = tf.function(lambda batch: model(batch, training=False))
    predict = self._predict[id(model)]
    return np.concatenate([predict(b).numpy() for b in data], axis=0)

  def evaluate(self, model) -> Dict[str, float]:
    """Dev metrics; MNLI's mismatched dev set is reported with a `mismatched_` prefix."""
    result = {}
    for split in self.task.dev_splits:
      _, examples = self.features[split]
      logits = self.predict_logits(model, split)
      labels = np.array([glue.label_id(self.task, e.label) for e in examples])
      if self.task.is_regression:
        predictions = logits[:, 0]
        loss = float(np.mean((predictions - labels) ** 2))
      else:
        predictions = logits.argmax(-1)
        log_probs = logits - np.logaddexp.reduce(logits, axis=-1, keepdims=True)
        loss = float(-np.mean(log_probs[np.arange(len(labels)), labels]))
      values = metrics_lib.glue_metrics(self.task.metrics, labels, predictions, loss)
      prefix = "" if split == "dev" else split[len("dev_"):] + "_"
      result.update({prefix + k: v for k, v in values.items()})
    return result

  def _restore_for_inference(self, model) -> str:
    return restore_for_inference(model, self.opts.output_dir, self.source)

  # -- the run

  def run(self) -> Dict[str, Dict[str, float]]:
    opts, results = self.opts, {}
    if opts.do_train:
      results["train"] = self.train()
    if not (opts.do_eval or opts.do_predict or opts.export_dir):
      return results
    set_precision(opts.dtype)
    with self.strategy.scope():
      model = self.build_model()
    weights = self._restore_for_inference(model)
    print(f"Evaluating / predicting with {weights}")
    if opts.do_eval:
      results["eval"] = self.write_eval_results(model)
    if opts.do_predict:
      results["predict"] = {"files": len(self.write_predictions(model))}
    if opts.export_dir:
      from albert_tf.export import export_classifier  # pylint: disable=g-import-not-at-top
      pairs = any(s.text_b is not None for s in self.task.splits.values())
      export_classifier(model, opts.export_dir, self.source.tokenizer, opts.max_seq_length,
                        self.task.labels, pairs=pairs)
      print(f"Exported the end-to-end classifier SavedModel to {opts.export_dir}")
    return results

  def train(self) -> Dict[str, float]:
    opts = self.opts
    loop = LoopOptions(
        output_dir=opts.output_dir, train_step=opts.train_step, warmup_step=opts.warmup_step,
        learning_rate=opts.learning_rate, optimizer=opts.optimizer,
        train_batch_size=opts.train_batch_size, save_checkpoints_steps=opts.save_checkpoints_steps,
        keep_checkpoint_max=opts.keep_checkpoint_max, dtype=opts.dtype, seed=opts.seed,
        log_steps=opts.log_steps, progress=opts.progress)
    record, _ = self.features["train"]
    tf.random.set_seed(opts.seed)  # the shuffle order depends on the global seed too
    train_data = glue.dataset(record, self.task, opts.max_seq_length, opts.train_batch_size,
                              is_training=True, seed=opts.seed)
    trainer = Finetuner(loop, self.strategy, self.build_model, per_example_loss(self.task),
                        train_data, evaluate_fn=self.evaluate,
                        best_metric=self.task.best_metric, initialize=self.source.initialize)
    result = trainer.train()
    best = trainer.best()
    if best:
      print(f"Best dev {self.task.best_metric} {best[1]:.4f} at step {best[0]}: "
            f"{os.path.join(opts.output_dir, BEST_PREFIX)}")
    return result

  def write_eval_results(self, model) -> Dict[str, float]:
    result = self.evaluate(model)
    best_file = os.path.join(self.opts.output_dir, "best_trial.txt")
    step = None
    if os.path.exists(best_file):
      with open(best_file) as f:
        step = int(f.readline().split("=")[1])
    result = dict(global_step=step if step is not None else -1, **result)
    _, train_examples = self.features.get("train", (None, None))
    if train_examples:
      baseline = glue.majority_baseline(train_examples, self.features["dev"][1], self.task)
      result.update({f"majority_baseline_{k}": v for k, v in baseline.items()})
    write_results(os.path.join(self.opts.output_dir, "eval_results.txt"), result)
    for k, v in result.items():
      logging.info("eval %s = %s", k, v)
    return result

  def write_predictions(self, model) -> List[str]:
    """GLUE submission files: `<TASK>.tsv` with `index` and `prediction` (label strings)."""
    written = []
    for split in self.task.test_splits:
      _, examples = self.features[split]
      logits = self.predict_logits(model, split)
      path = os.path.join(self.opts.output_dir, self.task.submission[split] + ".tsv")
      with open(path + ".tmp", "w") as f:
        f.write("index\tprediction\n")
        for example, row in zip(examples, logits):
          if self.task.is_regression:
            prediction = f"{float(row[0]):.3f}"
          else:
            prediction = self.task.labels[int(row.argmax())]
          f.write(f"{example.guid}\t{prediction}\n")
      os.replace(path + ".tmp", path)
      written.append(path)
      print(f"Wrote {len(examples)} predictions to {path}")
    return written


def run(opts: ClassifierOptions) -> Dict[str, Dict[str, float]]:
  """Checks the flags and inputs, then trains / evaluates / predicts / exports."""
  return GlueRun(opts).run()
