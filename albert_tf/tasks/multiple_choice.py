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

from albert_tf import runs
from albert_tf.cli import TPU_FLAGS, Original, option
from albert_tf.data import race
from albert_tf.files import atomic_open, write_json, write_results
from albert_tf.modeling.models import AlbertMultipleChoice
from albert_tf.tasks.base import FinetuningOptions, FinetuningTask


# Flags of the original run_race.py that are not options here.
_CACHED = "ignored: features are cached, fingerprinted, in --cached_dir (default --output_dir)"
ORIGINAL_FLAGS = {
    **TPU_FLAGS,
    "task_name": Original(str, "race", "RACE is the only task", only_default=True),
    "train_file": Original(str, None, _CACHED),
    "eval_file": Original(str, None, _CACHED),
    "predict_file": Original(str, None, _CACHED),
}


@dataclasses.dataclass(kw_only=True)
class RaceOptions(FinetuningOptions):
  """run_race.py's flags (the original's, plus strategy, dtype and seed)."""
  data_dir: str = option(help="Folder holding RACE/ (or the RACE folder itself).")
  max_seq_length: int = option(512, "Sequence length of each packed choice.", at_least=3)
  max_qa_length: int = option(128, "Question+option pieces kept (the last ones).", at_least=1)
  do_train: bool = option(False, "Fine-tune on train.")
  do_eval: bool = option(False, "Evaluate the best checkpoint on dev.")
  do_predict: bool = option(False, "Predict test (and score it: RACE's answers are public).")
  train_batch_size: int = option(32, "Global training batch size (questions).",
                                 training="fixed", at_least=1)
  eval_batch_size: int = option(8, "Evaluation batch size.", at_least=1)
  learning_rate: float = option(1e-5, "Peak learning rate.", training="fixed", at_least=0)
  train_step: int = option(12000, "Training steps.", training="may grow", at_least=1)
  warmup_step: int = option(1000, "Linear warmup steps.", training="fixed", at_least=0)
  num_keep_checkpoint: int = option(5, "Recent checkpoints to keep.", at_least=1)
  high_only: bool = option(False, "Only the high-school part.")
  middle_only: bool = option(False, "Only the middle-school part.")
  cached_dir: Optional[str] = option(None, "Where tokenized features are cached (default "
                                     "--output_dir; keyed by the files, vocabulary and lengths).")


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


def uniform_scores_hint(logits: np.ndarray) -> Optional[str]:
  """A one-line hint when every choice of every dev question scores alike (logits [N, C]
  within 0.01 of their mean: a dev loss of ln C), else None. For the weights a run ends
  with: at the start of training the choices score alike too.

  The choices of a question are packed with the same article and differ only in the
  option's few pieces; from weights that do not yet attend to those, a large learning
  rate can make training collapse to this state, where the gradient that would separate
  the choices is nearly zero and it stays (docs/race.md)."""
  spread = np.abs(logits - logits.mean(-1, keepdims=True)).max() if logits.size else 1.0
  if spread >= 0.01:
    return None
  return (f"hint: every dev question's {logits.shape[-1]} choices score alike (dev loss "
          f"ln {logits.shape[-1]}): the model does not tell the choices apart. From weak "
          "weights, a lower --learning_rate or a longer --warmup_step avoids this state.")


class RaceRun(FinetuningTask):
  """One run_race.py invocation."""
  name = "RACE"

  def check_options(self):
    opts = self.opts
    if not (opts.do_train or opts.do_eval or opts.do_predict):
      raise ValueError("nothing to do: set --do_train, --do_eval and/or --do_predict")
    if opts.max_seq_length <= opts.max_qa_length + 3:
      raise ValueError(f"--max_seq_length={opts.max_seq_length} leaves no room for the article "
                       f"after --max_qa_length={opts.max_qa_length} and 3 special tokens")
    self.levels = race.levels_from_flags(opts.high_only, opts.middle_only)

  def read_inputs(self):
    opts = self.opts
    self.splits = (["train"] if opts.do_train else []) \
        + (["dev"] if (opts.do_train or opts.do_eval) else []) \
        + (["test"] if opts.do_predict else [])
    self.examples = {split: race.read_examples(opts.data_dir, split, self.levels)
                     for split in self.splits}

  def run_record(self):
    return runs.ChoiceSettings(tuple(self.levels), self.opts.max_qa_length)

  def build_features(self):
    opts = self.opts
    self.records = {split: race.cached_features(
        opts.data_dir, split, self.levels, self.examples[split], self.source.tokenizer,
        opts.max_seq_length, opts.max_qa_length, opts.cached_dir or opts.output_dir,
        opts.progress) for split in self.splits}
    for split in self.splits:
      print(f"RACE {split}: {len(self.examples[split])} questions ({', '.join(self.levels)})")

  def keep_checkpoint_max(self):
    return self.opts.num_keep_checkpoint

  def build_model(self) -> AlbertMultipleChoice:
    return AlbertMultipleChoice(self.source.build_encoder(), dropout_rate=self.opts.dropout_prob,
                                initializer_range=self.source.config.initializer_range,
                                seed=self.opts.seed)

  def per_example_loss(self, model, batch, training):
    return per_example_loss(model, batch, training)

  def train_dataset(self):
    opts = self.opts
    return race.dataset(self.records["train"], opts.max_seq_length, self.micro_batch_size,
                        is_training=True, seed=opts.seed,
                        bucket_by_length=opts.bucket_by_length)

  def split_logits(self, model, split: str) -> np.ndarray:
    """Logits [N, 4] for every question of a split, in reading order."""
    batch_size = self.opts.predict_batch_size if split == "test" else self.opts.eval_batch_size
    return self.predict_logits(model, race.dataset(self.records[split], self.opts.max_seq_length,
                                                   batch_size, is_training=False,
                                                   bucket_by_length=self.opts.bucket_by_length))

  def evaluate(self, model) -> Dict[str, float]:
    return accuracy_by_level(self.examples["dev"], self.split_logits(model, "dev"))

  def infer(self, model, weights):
    opts, results = self.opts, {}
    checkpoint = os.path.basename(weights)
    if opts.do_eval:
      logits = self.split_logits(model, "dev")
      hint = uniform_scores_hint(logits)
      if hint:   # (the best weights, after training: not a start that may still learn)
        print(hint)
      results["eval"] = accuracy_by_level(self.examples["dev"], logits)
      chosen = logits.argmax(-1)
      if len(chosen) > 1 and (chosen == chosen[0]).all():
        self.not_learned(f"every dev question is answered {race.LETTERS[int(chosen[0])]}",
                         results["eval"])
      write_results(os.path.join(opts.output_dir, "eval_results.txt"),
                    dict(checkpoint=checkpoint, **results["eval"]))
    if opts.do_predict:
      logits = self.split_logits(model, "test")
      examples = self.examples["test"]
      predictions = {e.qas_id: race.LETTERS[int(i)] for e, i in zip(examples, logits.argmax(-1))}
      path = os.path.join(opts.output_dir, "predictions.json")
      write_json(path, predictions, indent=2)
      # Each question's choice and the probability of every option (what predict.py gives).
      p = np.exp(logits.astype(np.float64) - logits.max(-1, keepdims=True))
      p /= p.sum(-1, keepdims=True)
      with atomic_open(os.path.join(opts.output_dir, "test_predictions.jsonl"),
                       encoding="utf-8") as f:
        for e, row in zip(examples, p):
          f.write(json.dumps(dict(id=e.qas_id, choice=int(row.argmax()),
                                  probabilities=[float(x) for x in row])) + "\n")
      results["test"] = accuracy_by_level(examples, logits)
      write_results(os.path.join(opts.output_dir, "test_results.txt"),
                    dict(checkpoint=checkpoint, **results["test"]))
      print(f"Wrote {len(predictions)} predictions to {path}")
    return results


def run(opts: RaceOptions) -> Dict[str, Dict[str, float]]:
  """Checks the flags and inputs, then trains / evaluates / predicts."""
  return RaceRun(opts).run()
