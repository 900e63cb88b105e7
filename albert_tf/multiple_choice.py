"""RACE fine-tuning, evaluation and prediction: what run_race.py does.

Training evaluates every saved checkpoint on dev and keeps the best (by
accuracy) as `model.ckpt-best`. `--do_eval` writes its dev accuracy, overall
and for middle and high school separately, to `eval_results.txt`;
`--do_predict` writes `predictions.json` (question id -> letter) for the test
split and, since RACE's test answers are public, `test_results.txt`.
"""

import dataclasses
import json
import os
from typing import Dict, List, Optional

import numpy as np
import tensorflow as tf

from albert_tf.data import race
from albert_tf.finetuning import (ModelSource, claim_output_dir, resolve_model_source,
                                  restore_for_inference, write_results)
from albert_tf.models import AlbertMultipleChoice
from albert_tf.training import BEST_PREFIX, Finetuner, LoopOptions, get_strategy, set_precision


@dataclasses.dataclass
class RaceOptions:
  """run_race.py's flags (the original's, plus strategy, dtype and seed)."""
  data_dir: str
  output_dir: str
  albert_config_file: Optional[str] = None
  init_checkpoint: Optional[str] = None
  albert_hub_module_handle: Optional[str] = None
  spm_model_file: Optional[str] = None
  do_lower_case: bool = True
  max_seq_length: int = 512
  max_qa_length: int = 128
  do_train: bool = False
  do_eval: bool = False
  do_predict: bool = False
  train_batch_size: int = 32
  eval_batch_size: int = 8
  predict_batch_size: int = 8
  learning_rate: float = 1e-5
  train_step: int = 12000
  warmup_step: int = 1000
  save_checkpoints_steps: int = 1000
  num_keep_checkpoint: int = 5
  high_only: bool = False
  middle_only: bool = False
  optimizer: str = "adamw"
  dropout_prob: float = 0.1
  cached_dir: Optional[str] = None
  distribution_strategy: str = "one_device"
  dtype: str = "float32"
  seed: int = 12345
  log_steps: int = 10
  progress: bool = True


def per_example_loss(model, batch, training):
  """Softmax cross-entropy over the four choices."""
  logits = model(batch, training=training)                                     # [b, 4]
  labels = batch["label_ids"]
  loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)         # [b]
  correct = tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels)
  return dict(loss=loss, accuracy=tf.cast(correct, tf.float32))


def accuracy_by_level(examples: List[race.RaceExample], logits: np.ndarray) -> Dict[str, float]:
  """accuracy, loss, and accuracy / count per level present."""
  labels = np.array([e.label for e in examples])
  correct = logits.argmax(-1) == labels
  log_probs = logits - np.logaddexp.reduce(logits, axis=-1, keepdims=True)
  result = {"accuracy": float(correct.mean()),
            "loss": float(-log_probs[np.arange(len(labels)), labels].mean())}
  for level in race.LEVELS:
    mask = np.array([e.level == level for e in examples])
    if mask.any():
      result[f"{level}_accuracy"] = float(correct[mask].mean())
      result[f"{level}_count"] = int(mask.sum())
  return result


class RaceRun:
  """One run_race.py invocation: checks everything, then trains / evaluates / predicts."""

  def __init__(self, opts: RaceOptions):
    self.opts = opts
    if not (opts.do_train or opts.do_eval or opts.do_predict):
      raise ValueError("nothing to do: set --do_train, --do_eval and/or --do_predict")
    if opts.max_seq_length <= opts.max_qa_length + 3:
      raise ValueError(f"--max_seq_length={opts.max_seq_length} leaves no room for the article "
                       f"after --max_qa_length={opts.max_qa_length} and 3 special tokens")
    self.levels = race.levels_from_flags(opts.high_only, opts.middle_only)
    self.splits = (["train"] if opts.do_train else []) \
        + (["dev"] if (opts.do_train or opts.do_eval) else []) \
        + (["test"] if opts.do_predict else [])
    # Every input is read and checked before any work.
    self.examples = {split: race.read_examples(opts.data_dir, split, self.levels)
                     for split in self.splits}
    self.source: ModelSource = resolve_model_source(
        opts.albert_config_file, opts.albert_hub_module_handle, opts.init_checkpoint,
        opts.spm_model_file, opts.do_lower_case, opts.max_seq_length)
    self.strategy = get_strategy(opts.distribution_strategy)
    claim_output_dir(opts.output_dir, dict(
        task="RACE", levels=list(self.levels), model=self.source.config.to_dict(),
        hub=os.path.abspath(opts.albert_hub_module_handle) if opts.albert_hub_module_handle
        else None, spm_model_file=os.path.abspath(self.source.tokenizer.spm_model_file),
        do_lower_case=self.source.tokenizer.do_lower_case, max_seq_length=opts.max_seq_length,
        max_qa_length=opts.max_qa_length))
    cached_dir = opts.cached_dir or opts.output_dir
    self.records = {split: race.cached_features(
        opts.data_dir, split, self.levels, self.examples[split], self.source.tokenizer,
        opts.max_seq_length, opts.max_qa_length, cached_dir, opts.progress)
        for split in self.splits}
    for split in self.splits:
      print(f"RACE {split}: {len(self.examples[split])} questions ({', '.join(self.levels)})")
    self._predict = {}

  def build_model(self) -> AlbertMultipleChoice:
    return AlbertMultipleChoice(self.source.build_encoder(), dropout_rate=self.opts.dropout_prob,
                                initializer_range=self.source.config.initializer_range,
                                seed=self.opts.seed)

  def predict_logits(self, model, split: str) -> np.ndarray:
    """Logits [N, 4] for every question of a split, in reading order."""
    batch_size = self.opts.predict_batch_size if split == "test" else self.opts.eval_batch_size
    data = race.dataset(self.records[split], self.opts.max_seq_length, batch_size,
                        is_training=False)
    if id(model) not in self._predict:
      self._predict[id(model)] = tf.function(lambda batch: model(batch, training=False))
    return np.concatenate([self._predict[id(model)](b).numpy() for b in data], axis=0)

  def evaluate(self, model) -> Dict[str, float]:
    return accuracy_by_level(self.examples["dev"], self.predict_logits(model, "dev"))

  def run(self) -> Dict[str, Dict[str, float]]:
    opts, results = self.opts, {}
    if opts.do_train:
      results["train"] = self.train()
    if not (opts.do_eval or opts.do_predict):
      return results
    set_precision(opts.dtype)
    with self.strategy.scope():
      model = self.build_model()
    weights = restore_for_inference(model, opts.output_dir, self.source)
    print(f"Evaluating / predicting with {weights}")
    if opts.do_eval:
      results["eval"] = self.evaluate(model)
      write_results(os.path.join(opts.output_dir, "eval_results.txt"),
                    dict(checkpoint=os.path.basename(weights), **results["eval"]))
    if opts.do_predict:
      logits = self.predict_logits(model, "test")
      examples = self.examples["test"]
      predictions = {e.qas_id: race.LETTERS[int(i)] for e, i in zip(examples, logits.argmax(-1))}
      path = os.path.join(opts.output_dir, "predictions.json")
      with open(path + ".tmp", "w") as f:
        json.dump(predictions, f, indent=2)
      os.replace(path + ".tmp", path)
      results["test"] = accuracy_by_level(examples, logits)
      write_results(os.path.join(opts.output_dir, "test_results.txt"),
                    dict(checkpoint=os.path.basename(weights), **results["test"]))
      print(f"Wrote {len(predictions)} predictions to {path}")
    return results

  def train(self) -> Dict[str, float]:
    opts = self.opts
    loop = LoopOptions(
        output_dir=opts.output_dir, train_step=opts.train_step, warmup_step=opts.warmup_step,
        learning_rate=opts.learning_rate, optimizer=opts.optimizer,
        train_batch_size=opts.train_batch_size, save_checkpoints_steps=opts.save_checkpoints_steps,
        keep_checkpoint_max=opts.num_keep_checkpoint, dtype=opts.dtype, seed=opts.seed,
        log_steps=opts.log_steps, progress=opts.progress)
    tf.random.set_seed(opts.seed)
    train_data = race.dataset(self.records["train"], opts.max_seq_length, opts.train_batch_size,
                              is_training=True, seed=opts.seed)
    trainer = Finetuner(loop, self.strategy, self.build_model, per_example_loss, train_data,
                        evaluate_fn=self.evaluate, best_metric="accuracy",
                        initialize=self.source.initialize)
    result = trainer.train()
    best = trainer.best()
    if best:
      print(f"Best dev accuracy {best[1]:.4f} at step {best[0]}: "
            f"{os.path.join(opts.output_dir, BEST_PREFIX)}")
    return result


def run(opts: RaceOptions) -> Dict[str, Dict[str, float]]:
  """Checks the flags and inputs, then trains / evaluates / predicts."""
  return RaceRun(opts).run()
