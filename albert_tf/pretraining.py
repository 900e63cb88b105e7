"""ALBERT pretraining on tf.distribute: data, loss, optimizer, a resumable training loop.

Loss = masked-LM cross-entropy weighted by `masked_lm_weights` (normalized by
the weights of the whole global batch) + sentence-order cross-entropy (mean
over the global batch), so any number of replicas computes the loss of one
device at the same global batch. Gradients are all-reduced, clipped to global
norm 1.0 and applied by tf-models-official's LAMB or AdamW (weight decay 0.01,
not on LayerNorm or bias) under polynomial decay to 0 with linear warmup.

Every worker reads the same seeded input pipeline, producing the global
batch, and each replica takes its slice; the pipeline's iterator is part of
the checkpoint, so a rerun after a crash continues on exactly the data an
uninterrupted run would have seen.
"""

import dataclasses
import os
import shutil
import time
from typing import Dict, List, Optional

from absl import logging
import tensorflow as tf
import tf_keras as keras

from albert_tf.checkpoints import load_checkpoint, save_original_checkpoint
from albert_tf.config import AlbertConfig
from albert_tf.data.pretraining_data import expand_files, feature_spec
from albert_tf.models import AlbertPretrainer
from albert_tf.optimization import AlbertLearningRate, create_optimizer
from albert_tf.training import (append_csv, distribute_global_batch, get_strategy, is_chief,
                                plot_learning_curve, set_precision)

METRIC_NAMES = ("loss", "masked_lm_loss", "masked_lm_accuracy", "sentence_order_loss",
                "sentence_order_accuracy")


# ----------------------------------------------------------------------------- data

def pretraining_dataset(files: List[str], global_batch_size: int, max_seq_length: int,
                        max_predictions_per_seq: int, is_training: bool = True,
                        seed: int = 0) -> tf.data.Dataset:
  """Global batches of model inputs from pretraining TFRecords (original feature names).

  Training repeats and shuffles (files, then records) deterministically for
  `seed`; records whose lengths differ from the flags raise an error naming
  the feature. Output keys are the model's: input_word_ids, input_mask,
  input_type_ids, masked_lm_positions, masked_lm_ids, masked_lm_weights,
  next_sentence_labels.
  """
  spec = feature_spec(max_seq_length, max_predictions_per_seq)
  ds = tf.data.Dataset.from_tensor_slices(files)
  if is_training:
    ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True).repeat()
  ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=min(4, len(files)),
                     num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  if is_training:
    ds = ds.shuffle(1000, seed=seed, reshuffle_each_iteration=True)
  ds = ds.batch(global_batch_size, drop_remainder=is_training)

  def parse(serialized):
    f = tf.io.parse_example(serialized, spec)
    cast = {k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v for k, v in f.items()}
    return dict(input_word_ids=cast["input_ids"], input_mask=cast["input_mask"],
                input_type_ids=cast["segment_ids"],
                masked_lm_positions=cast["masked_lm_positions"],
                masked_lm_ids=cast["masked_lm_ids"], masked_lm_weights=cast["masked_lm_weights"],
                next_sentence_labels=cast["next_sentence_labels"][:, 0])

  return ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).prefetch(2)


def check_records(files: List[str], max_seq_length: int, max_predictions_per_seq: int) -> None:
  """Fails early, naming the file, when records do not have the flags' lengths."""
  record = next(iter(tf.data.TFRecordDataset(files[:1])), None)
  if record is None:
    raise ValueError(f"--input_file {files[0]} holds no records")
  example = tf.train.Example.FromString(record.numpy())
  features = example.features.feature
  for name, want in (("input_ids", max_seq_length), ("masked_lm_positions", max_predictions_per_seq)):
    if name not in features:
      raise ValueError(f"{files[0]}: records lack the feature {name!r}; not pretraining data?")
    got = len(features[name].int64_list.value)
    if got != want:
      flag = "max_seq_length" if name == "input_ids" else "max_predictions_per_seq"
      raise ValueError(f"{files[0]}: {name} has length {got} but --{flag}={want}; "
                       "use the values the data was created with")


# ----------------------------------------------------------------------------- the run

@dataclasses.dataclass
class PretrainingOptions:
  """run_pretraining.py's flags."""
  input_file: str
  output_dir: str
  albert_config_file: Optional[str] = None
  init_checkpoint: Optional[str] = None
  do_train: bool = True
  do_eval: bool = False
  train_batch_size: int = 4096
  eval_batch_size: int = 64
  max_seq_length: int = 512
  max_predictions_per_seq: int = 20
  optimizer: str = "lamb"
  learning_rate: float = 0.00176
  poly_power: float = 1.0
  num_train_steps: int = 125000
  num_warmup_steps: int = 3125
  start_warmup_step: int = 0
  save_checkpoints_steps: int = 5000
  keep_checkpoint_max: int = 5
  max_eval_steps: int = 100
  distribution_strategy: str = "one_device"
  tpu: Optional[str] = None
  dtype: str = "float32"
  jit_compile: bool = False
  seed: int = 12345
  log_steps: int = 10
  export_original_checkpoint: bool = True
  progress: bool = True


def _batch_metrics(outputs, batch, global_batch, mlm_weight_sum):
  """Per-replica sums whose all-reduced values are the global batch's losses and counts."""
  logits = tf.cast(outputs["mlm_logits"], tf.float32)                        # [b, P, V]
  ids, weights = batch["masked_lm_ids"], batch["masked_lm_weights"]          # [b, P]
  per_token = tf.nn.sparse_softmax_cross_entropy_with_logits(ids, logits)   # [b, P]
  mlm_loss = tf.reduce_sum(per_token * weights) / (mlm_weight_sum + 1e-5)
  sop_logits = tf.cast(outputs["sop_logits"], tf.float32)                   # [b, 2]
  labels = batch["next_sentence_labels"]                                     # [b]
  sop_loss = tf.reduce_sum(
      tf.nn.sparse_softmax_cross_entropy_with_logits(labels, sop_logits)) / global_batch
  mlm_correct = tf.reduce_sum(
      tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), ids), tf.float32) * weights)
  sop_correct = tf.reduce_sum(
      tf.cast(tf.equal(tf.argmax(sop_logits, -1, output_type=tf.int32), labels), tf.float32))
  return dict(loss=mlm_loss + sop_loss, masked_lm_loss=mlm_loss, sentence_order_loss=sop_loss,
              mlm_correct=mlm_correct, mlm_count=tf.reduce_sum(weights), sop_correct=sop_correct,
              sop_count=tf.cast(tf.size(labels), tf.float32))


def _accumulate(sums, metrics):
  """Adds a step's metric tensors to the running sums (tensors: no device sync per step)."""
  return dict(metrics) if sums is None else {k: sums[k] + v for k, v in metrics.items()}


def _finish_metrics(sums, steps: int) -> Dict[str, float]:
  """Mean losses over `steps` and accuracies over all counted predictions."""
  sums = {k: float(v) / steps if k.endswith("loss") else float(v) for k, v in sums.items()}
  return dict(loss=sums["loss"], masked_lm_loss=sums["masked_lm_loss"],
              sentence_order_loss=sums["sentence_order_loss"],
              masked_lm_accuracy=sums["mlm_correct"] / max(sums["mlm_count"], 1e-9),
              sentence_order_accuracy=sums["sop_correct"] / max(sums["sop_count"], 1e-9))


class Pretrainer:
  """Builds the model, optimizer, data and checkpoints of a run; `train()` and `evaluate()`."""

  def __init__(self, opts: PretrainingOptions, strategy: Optional[tf.distribute.Strategy] = None):
    self.opts = opts
    if opts.dtype not in ("float32", "bfloat16", "float16"):
      raise ValueError(f"--dtype must be float32, bfloat16 or float16, got {opts.dtype!r}")
    self.strategy = strategy or get_strategy(opts.distribution_strategy, opts.tpu)
    self.files = expand_files(opts.input_file)
    check_records(self.files, opts.max_seq_length, opts.max_predictions_per_seq)
    self.config = self._read_config()
    if opts.max_seq_length > self.config.max_position_embeddings:
      raise ValueError(f"--max_seq_length={opts.max_seq_length} exceeds max_position_embeddings="
                       f"{self.config.max_position_embeddings} of {opts.albert_config_file}")
    replicas = self.strategy.num_replicas_in_sync
    for flag in ("train_batch_size", "eval_batch_size"):
      if getattr(opts, flag) % replicas:
        raise ValueError(f"--{flag}={getattr(opts, flag)} is not divisible by the "
                         f"{replicas} replicas")
    self.is_chief = is_chief(self.strategy)
    set_precision(opts.dtype)
    tf.random.set_seed(opts.seed)
    with self.strategy.scope():
      self.model = AlbertPretrainer(self.config)
      self.schedule = AlbertLearningRate(opts.learning_rate, opts.num_train_steps,
                                         opts.num_warmup_steps, opts.start_warmup_step,
                                         opts.poly_power)
      self.optimizer = create_optimizer(opts.optimizer, self.schedule, opts.dtype)
    self.train_data = pretraining_dataset(self.files, opts.train_batch_size, opts.max_seq_length,
                                          opts.max_predictions_per_seq, True, opts.seed)
    self.iterator = iter(self.train_data)
    self.checkpoint = tf.train.Checkpoint(**self.model.checkpoint_items,
                                          optimizer=self.optimizer, data=self.iterator)
    # Every worker saves (as tf.distribute requires); non-chiefs into scratch space.
    self._scratch = None if self.is_chief else os.path.join(
        opts.output_dir, ".worker_tmp", str(self.strategy.cluster_resolver.task_id))
    self.manager = tf.train.CheckpointManager(self.checkpoint, self._scratch or opts.output_dir,
                                              max_to_keep=opts.keep_checkpoint_max,
                                              checkpoint_name="ckpt")
    self._restore()

  # -- setup

  def _read_config(self) -> AlbertConfig:
    opts = self.opts
    saved = os.path.join(opts.output_dir, "albert_config.json")
    if not opts.albert_config_file:
      raise ValueError("--albert_config_file is required")
    config = AlbertConfig.from_json_file(opts.albert_config_file)
    if os.path.exists(saved):
      previous = AlbertConfig.from_json_file(saved)
      if previous.to_dict() != config.to_dict():
        raise ValueError(f"--output_dir {opts.output_dir} holds a run of another model "
                         f"({saved} differs from {opts.albert_config_file}); use a new --output_dir")
    else:
      os.makedirs(opts.output_dir, exist_ok=True)
      config.to_json_file(saved)
    return config

  def _restore(self):
    latest = tf.train.latest_checkpoint(self.opts.output_dir)  # the chief's, on every worker
    if latest:
      self.checkpoint.restore(latest).expect_partial()
      logging.info("Resuming from %s (step %d)", latest, int(self.optimizer.iterations))
      print(f"Resuming from {latest} at step {int(self.optimizer.iterations)}")
    elif self.opts.init_checkpoint:
      report = load_checkpoint(self.model, self.opts.init_checkpoint)
      print(f"Initialized from {report.path} ({len(report.loaded)} variables)")

  @property
  def step(self) -> int:
    return int(self.optimizer.iterations.numpy())

  # -- steps

  def _distribute(self, batch, global_batch):
    return distribute_global_batch(self.strategy, batch, global_batch)

  def _replica_metrics(self, batch, training):
    ctx = tf.distribute.get_replica_context()
    weight_sum = ctx.all_reduce("sum", tf.reduce_sum(batch["masked_lm_weights"]))
    outputs = self.model(batch, training=training)
    global_batch = self.opts.train_batch_size if training else self.opts.eval_batch_size
    return _batch_metrics(outputs, batch, float(global_batch), weight_sum)

  @tf.function
  def _train_step(self, batch):
    def replica_step(batch):
      ctx = tf.distribute.get_replica_context()
      variables = self.model.trainable_variables
      with tf.GradientTape() as tape:
        metrics = self._replica_metrics(batch, training=True)
        loss = metrics["loss"]
        if isinstance(self.optimizer, keras.mixed_precision.LossScaleOptimizer):
          loss = self.optimizer.get_scaled_loss(loss)
      grads = tape.gradient(loss, variables)
      if isinstance(self.optimizer, keras.mixed_precision.LossScaleOptimizer):
        grads = self.optimizer.get_unscaled_gradients(grads)
      grads = ctx.all_reduce("sum", grads)
      grads, _ = tf.clip_by_global_norm(grads, 1.0)
      self.optimizer.apply_gradients(zip(grads, variables), experimental_aggregate_gradients=False)
      return metrics

    per_replica = self.strategy.run(replica_step, args=(batch,))
    return {k: self.strategy.reduce("sum", v, axis=None) for k, v in per_replica.items()}

  @tf.function
  def _eval_step(self, batch):
    per_replica = self.strategy.run(lambda b: self._replica_metrics(b, training=False),
                                    args=(batch,))
    return {k: self.strategy.reduce("sum", v, axis=None) for k, v in per_replica.items()}

  # -- loops

  def train(self) -> Dict[str, float]:
    """Trains to `num_train_steps` from wherever the checkpoints left off."""
    opts = self.opts
    if opts.jit_compile:
      self._train_step = tf.function(self._train_step.python_function, jit_compile=True)
    from tqdm import tqdm  # pylint: disable=g-import-not-at-top
    writer = tf.summary.create_file_writer(os.path.join(opts.output_dir, "train")) \
        if self.is_chief else tf.summary.create_noop_writer()
    log_path = os.path.join(opts.output_dir, "train_log.csv")
    bar = tqdm(total=opts.num_train_steps, initial=self.step, unit="step", desc="pretraining",
               disable=not (opts.progress and self.is_chief))
    sums, count, last, started = None, 0, {}, time.time()
    step = self.step  # counted in Python from here: no variable read per step
    while step < opts.num_train_steps:
      batch = self._distribute(next(self.iterator), opts.train_batch_size)
      metrics = self._train_step(batch)
      step += 1
      sums = _accumulate(sums, metrics)
      count += 1
      bar.update(1)
      if step % opts.log_steps == 0 or step == opts.num_train_steps:
        elapsed = time.time() - started
        last = _finish_metrics(sums, count)
        last["learning_rate"] = float(self.schedule(step - 1))
        last["examples_per_second"] = count * opts.train_batch_size / elapsed
        bar.set_postfix(loss=f"{last['loss']:.3f}", mlm_acc=f"{last['masked_lm_accuracy']:.3f}",
                        sop_acc=f"{last['sentence_order_accuracy']:.3f}")
        with writer.as_default(step=step):
          for k, v in last.items():
            tf.summary.scalar(k, v)
        if self.is_chief:
          append_csv(log_path, step, last)
        sums, count, started = None, 0, time.time()
      if step % opts.save_checkpoints_steps == 0 or step == opts.num_train_steps:
        self.manager.save(checkpoint_number=step)
        if self._scratch:
          shutil.rmtree(os.path.dirname(self._scratch), ignore_errors=True)
    bar.close()
    writer.flush()
    if self.is_chief:
      plot_learning_curve(log_path, os.path.join(opts.output_dir, "learning_curve.png"))
      if opts.export_original_checkpoint:
        prefix = os.path.join(opts.output_dir, f"model.ckpt-{self.step}")
        if not tf.io.gfile.exists(prefix + ".index"):
          save_original_checkpoint(self.model, prefix, global_step=self.step)
          print(f"Wrote the final checkpoint in the original TF1 names: {prefix}")
    return last

  def evaluate(self) -> Dict[str, float]:
    """`max_eval_steps` batches of `input_file`; writes eval_results.txt."""
    opts = self.opts
    data = pretraining_dataset(self.files, opts.eval_batch_size, opts.max_seq_length,
                               opts.max_predictions_per_seq, is_training=False)
    sums, steps = None, 0
    for batch in data.take(opts.max_eval_steps):
      if int(tf.shape(batch["input_word_ids"])[0]) != opts.eval_batch_size:
        break  # the ragged last batch does not split over replicas
      metrics = self._eval_step(self._distribute(batch, opts.eval_batch_size))
      sums = _accumulate(sums, metrics)
      steps += 1
    if not steps:
      raise ValueError(f"--input_file has fewer than --eval_batch_size={opts.eval_batch_size} records")
    result = _finish_metrics(sums, steps)
    result = dict(global_step=self.step, **result)
    if self.is_chief:
      with open(os.path.join(opts.output_dir, "eval_results.txt"), "w") as f:
        for k in ("global_step",) + METRIC_NAMES:
          f.write(f"{k} = {result[k]}\n")
      with tf.summary.create_file_writer(os.path.join(opts.output_dir, "eval")).as_default(
          step=self.step):
        for k in METRIC_NAMES:
          tf.summary.scalar(k, result[k])
    for k in ("global_step",) + METRIC_NAMES:
      logging.info("eval %s = %s", k, result[k])
    return result


def run(opts: PretrainingOptions, strategy=None) -> Dict[str, Dict[str, float]]:
  """Trains and/or evaluates as the flags say; returns {"train": ..., "eval": ...}."""
  if not (opts.do_train or opts.do_eval):
    raise ValueError("at least one of --do_train and --do_eval must be set")
  trainer = Pretrainer(opts, strategy)
  results = {}
  if opts.do_train:
    results["train"] = trainer.train()
  if opts.do_eval:
    results["eval"] = trainer.evaluate()
  return results
