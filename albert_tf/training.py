"""What every training script shares: strategies, logs and plots, and the fine-tuning loop.

`Finetuner` is the loop of run_classifier.py (and the other fine-tuning
tasks): global batches sliced over the replicas, all-reduced gradients
clipped to global norm 1.0, the original AdamW/LAMB schedule, a
CheckpointManager holding the model, optimizer and input iterator (so a rerun
after a crash continues exactly), an evaluation of every saved checkpoint
with the best kept as `model.ckpt-best`, TensorBoard summaries, a CSV log, a
learning-curve PNG and a progress bar.
"""

import csv
import dataclasses
import os
import shutil
import tempfile
import time
from typing import Callable, Dict, Optional

from absl import logging
import tensorflow as tf
import tf_keras as keras

from albert_tf.optimization import AlbertLearningRate, create_optimizer

BEST_PREFIX = "model.ckpt-best"
_POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}


# ----------------------------------------------------------------------------- distribution

_MIRRORED = {}


def get_strategy(name: str, tpu: Optional[str] = None) -> tf.distribute.Strategy:
  """one_device, mirrored (all GPUs, else all logical CPUs), multi_worker_mirrored (TF_CONFIG), tpu.

  A process reuses one MirroredStrategy per device set: separate instances
  would reuse the same collective-op keys, which the runtime rejects.
  """
  if name == "one_device":
    gpus = tf.config.list_logical_devices("GPU")
    return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
  if name == "mirrored":
    devices = tuple(d.name for d in (tf.config.list_logical_devices("GPU")
                                     or tf.config.list_logical_devices("CPU")))
    if devices not in _MIRRORED:
      _MIRRORED[devices] = tf.distribute.MirroredStrategy(list(devices))
    return _MIRRORED[devices]
  if name == "multi_worker_mirrored":
    return tf.distribute.MultiWorkerMirroredStrategy()
  if name == "tpu":
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or "")
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)
  raise ValueError(f"--distribution_strategy must be one of one_device, mirrored, "
                   f"multi_worker_mirrored, tpu; got {name!r}")


def is_chief(strategy) -> bool:
  """True unless this process is a non-chief worker of a multi-worker cluster."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or not resolver.cluster_spec().as_dict():
    return True
  return resolver.task_type in ("chief", None) or (
      resolver.task_type == "worker" and resolver.task_id == 0
      and "chief" not in resolver.cluster_spec().as_dict())


def set_precision(dtype: str) -> None:
  """Sets the global Keras policy for --dtype (variables always stay float32)."""
  if dtype not in _POLICIES:
    raise ValueError(f"--dtype must be float32, bfloat16 or float16, got {dtype!r}")
  keras.mixed_precision.set_global_policy(_POLICIES[dtype])


def distribute_global_batch(strategy, batch: Dict[str, tf.Tensor], global_batch: int):
  """Each replica takes its contiguous slice of a global batch (same data on every worker)."""
  per_replica = global_batch // strategy.num_replicas_in_sync

  def slice_for(ctx):
    i = ctx.replica_id_in_sync_group
    return {k: v[i * per_replica:(i + 1) * per_replica] for k, v in batch.items()}

  return strategy.experimental_distribute_values_from_function(slice_for)


def check_batch_sizes(strategy, **batch_sizes: int) -> None:
  replicas = strategy.num_replicas_in_sync
  for flag, size in batch_sizes.items():
    if size <= 0 or size % replicas:
      raise ValueError(f"--{flag}={size} must be a positive multiple of the {replicas} replicas")


# ----------------------------------------------------------------------------- logs

def append_csv(path: str, step: int, metrics: Dict[str, float]) -> None:
  """Appends one row (step + metrics) to a CSV log, writing the header first if new."""
  new = not os.path.exists(path)
  with open(path, "a", newline="") as f:
    writer = csv.writer(f)
    if new:
      writer.writerow(["step"] + list(metrics))
    writer.writerow([step] + [f"{v:.8g}" for v in metrics.values()])


def read_csv(path: str):
  if not os.path.exists(path):
    return []
  with open(path) as f:
    return list(csv.DictReader(f))


_NOT_PLOTTED = ("learning_rate", "examples_per_second", "global_step")


def plot_learning_curve(csv_path: str, png_path: str,
                        eval_csv_path: Optional[str] = None) -> Optional[str]:
  """Losses (left) and accuracy-like metrics (right) per step, as a PNG.

  Training rows come from `csv_path`; rows of `eval_csv_path` (one per
  evaluated checkpoint) are drawn with markers and a `dev ` prefix.
  """
  rows = read_csv(csv_path)
  if not rows:
    return None
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
  dev = read_csv(eval_csv_path) if eval_csv_path else []
  for prefix, table, style in (("train " if dev else "", rows, "-"), ("dev ", dev, "o-")):
    if not table:
      continue
    steps = [int(r["step"]) for r in table]
    for key in table[0]:
      if key == "step" or key in _NOT_PLOTTED:
        continue
      ax = ax1 if key.endswith("loss") else ax2
      ax.plot(steps, [float(r[key]) for r in table], style, label=prefix + key, markersize=3)
  for ax, title in ((ax1, "loss"), (ax2, "accuracy and other metrics")):
    ax.set_xlabel("step")
    ax.set_title(title)
    if ax.lines:
      ax.legend()
    ax.grid(alpha=0.3)
  fig.tight_layout()
  fig.savefig(png_path, dpi=100)
  plt.close(fig)
  return png_path


def write_checkpoint(items: Dict[str, object], prefix: str) -> str:
  """Writes `tf.train.Checkpoint(**items)` to `prefix`, replacing any checkpoint there only
  once the new one is complete (data files first, then the index)."""
  directory = os.path.dirname(os.path.abspath(prefix))
  tmp = tempfile.mkdtemp(prefix=".ckpt_", dir=directory)
  try:
    tf.train.Checkpoint(**items).write(os.path.join(tmp, "ckpt"))
    files = sorted(os.listdir(tmp), key=lambda f: f.endswith(".index"))
    for old in tf.io.gfile.glob(prefix + ".*"):
      if old.endswith(".index"):
        os.remove(old)
    for name in files:
      os.replace(os.path.join(tmp, name), prefix + name[len("ckpt"):])
  finally:
    shutil.rmtree(tmp, ignore_errors=True)
  return prefix


# ----------------------------------------------------------------------------- fine-tuning

@dataclasses.dataclass
class LoopOptions:
  """The training flags every fine-tuning script shares (original names)."""
  output_dir: str
  train_step: int = 1000
  warmup_step: int = 0
  learning_rate: float = 2e-5
  optimizer: str = "adamw"
  train_batch_size: int = 32
  save_checkpoints_steps: int = 100
  keep_checkpoint_max: int = 5
  dtype: str = "float32"
  seed: int = 12345
  log_steps: int = 10
  progress: bool = True


class Finetuner:
  """Trains a task model to `train_step`, evaluating every saved checkpoint.

  Args:
    opts: LoopOptions.
    strategy: the tf.distribute strategy (its scope builds the model).
    build_model: () -> a Keras model with `checkpoint_items`; called in the
      strategy's scope after the precision policy is set.
    loss_fn: (model, batch, training) -> dict of per-example float32 [b]
      tensors; `loss` is optimized (summed over the replica's examples and
      divided by the global batch size), every entry is averaged for the logs.
    train_data: a dataset of global training batches (repeating); its
      iterator is checkpointed.
    evaluate_fn: (model) -> dict of dev metrics, or None for no evaluation.
    best_metric: the key of `evaluate_fn`'s result that selects model.ckpt-best
      (higher is better).
    initialize: (model) -> None, called when no checkpoint exists yet in
      `output_dir` (e.g. to load --init_checkpoint).
  """

  def __init__(self, opts: LoopOptions, strategy, build_model: Callable[[], keras.Model],
               loss_fn: Callable, train_data: tf.data.Dataset,
               evaluate_fn: Optional[Callable[[keras.Model], Dict[str, float]]] = None,
               best_metric: Optional[str] = None,
               initialize: Optional[Callable[[keras.Model], None]] = None):
    self.opts, self.strategy = opts, strategy
    self.loss_fn, self.evaluate_fn, self.best_metric = loss_fn, evaluate_fn, best_metric
    check_batch_sizes(strategy, train_batch_size=opts.train_batch_size)
    if opts.train_step <= 0 or opts.save_checkpoints_steps <= 0:
      raise ValueError("--train_step and --save_checkpoints_steps must be positive")
    self.is_chief = is_chief(strategy)
    set_precision(opts.dtype)
    tf.random.set_seed(opts.seed)
    with strategy.scope():
      self.model = build_model()
      self.schedule = AlbertLearningRate(opts.learning_rate, opts.train_step, opts.warmup_step)
      self.optimizer = create_optimizer(opts.optimizer, self.schedule, opts.dtype)
    self.iterator = iter(train_data)
    self.checkpoint = tf.train.Checkpoint(**self.model.checkpoint_items,
                                          optimizer=self.optimizer, data=self.iterator)
    self._scratch = None if self.is_chief else os.path.join(
        opts.output_dir, ".worker_tmp", str(strategy.cluster_resolver.task_id))
    self.manager = tf.train.CheckpointManager(
        self.checkpoint, self._scratch or opts.output_dir,
        max_to_keep=opts.keep_checkpoint_max, checkpoint_name="model.ckpt")
    self.eval_log = os.path.join(opts.output_dir, "eval_log.csv")
    latest = tf.train.latest_checkpoint(opts.output_dir)
    if latest:
      self.checkpoint.restore(latest).expect_partial()
      print(f"Resuming from {latest} at step {self.step}")
    elif initialize is not None:
      initialize(self.model)

  @property
  def step(self) -> int:
    return int(self.optimizer.iterations.numpy())

  def best(self):
    """(step, value) of the best evaluated checkpoint so far, or None."""
    rows = [r for r in read_csv(self.eval_log) if self.best_metric in r]
    if not rows:
      return None
    top = max(rows, key=lambda r: (float(r[self.best_metric]), -int(r["step"])))
    return int(top["step"]), float(top[self.best_metric])

  @tf.function
  def _train_step(self, batch):
    global_batch = float(self.opts.train_batch_size)
    scaled = isinstance(self.optimizer, keras.mixed_precision.LossScaleOptimizer)

    def replica_step(batch):
      ctx = tf.distribute.get_replica_context()
      variables = self.model.trainable_variables
      with tf.GradientTape() as tape:
        per_example = self.loss_fn(self.model, batch, True)
        loss = tf.reduce_sum(per_example["loss"]) / global_batch
        if scaled:
          loss = self.optimizer.get_scaled_loss(loss)
      grads = tape.gradient(loss, variables)
      # Variables the loss does not reach (the pooler, for span heads) are left alone.
      used = [i for i, g in enumerate(grads) if g is not None]
      grads, variables = [grads[i] for i in used], [variables[i] for i in used]
      if scaled:
        grads = self.optimizer.get_unscaled_gradients(grads)
      grads = ctx.all_reduce("sum", grads)
      grads, _ = tf.clip_by_global_norm(grads, 1.0)
      self.optimizer.apply_gradients(zip(grads, variables), experimental_aggregate_gradients=False)
      return {k: tf.reduce_sum(v) for k, v in per_example.items()}

    sums = self.strategy.run(replica_step, args=(batch,))
    return {k: self.strategy.reduce("sum", v, axis=None) for k, v in sums.items()}

  def _evaluate_checkpoint(self, step: int, writer) -> None:
    """Evaluates the current weights (= checkpoint `step`); keeps them if they are the best."""
    if self.evaluate_fn is None:
      return
    result = self.evaluate_fn(self.model)
    previous = self.best()
    value = result[self.best_metric]
    improved = previous is None or value > previous[1]
    if self.is_chief:
      # The best checkpoint first, the log line last: a crash in between makes the
      # rerun evaluate this step again rather than trust a best it never wrote.
      if improved:
        write_checkpoint(self.model.checkpoint_items,
                         os.path.join(self.opts.output_dir, BEST_PREFIX))
        with open(os.path.join(self.opts.output_dir, "best_trial.txt"), "w") as f:
          f.write(f"global_step = {step}\n{self.best_metric} = {value}\n")
      append_csv(self.eval_log, step, result)
      with writer.as_default(step=step):
        for k, v in result.items():
          tf.summary.scalar(k, v)
    logging.info("step %d dev: %s", step, result)
    print(f"step {step} dev: " + ", ".join(f"{k} {v:.4f}" for k, v in result.items())
          + ("  (best so far)" if improved else ""))

  def train(self) -> Dict[str, float]:
    """Trains from wherever the checkpoints left off; returns the last logged metrics."""
    from tqdm import tqdm  # pylint: disable=g-import-not-at-top
    opts = self.opts
    make_writer = (lambda d: tf.summary.create_file_writer(os.path.join(opts.output_dir, d))) \
        if self.is_chief else (lambda d: tf.summary.create_noop_writer())
    train_writer, eval_writer = make_writer("train"), make_writer("eval")
    step = self.step
    # A crash between saving a checkpoint and evaluating it: evaluate it now.
    evaluated = {int(r["step"]) for r in read_csv(self.eval_log)}
    if step and step not in evaluated and (step % opts.save_checkpoints_steps == 0
                                           or step == opts.train_step):
      self._evaluate_checkpoint(step, eval_writer)
    log_path = os.path.join(opts.output_dir, "train_log.csv")
    bar = tqdm(total=opts.train_step, initial=step, unit="step", desc="fine-tuning",
               disable=not (opts.progress and self.is_chief))
    sums, count, last, started = None, 0, {}, time.time()
    while step < opts.train_step:
      batch = distribute_global_batch(self.strategy, next(self.iterator), opts.train_batch_size)
      metrics = self._train_step(batch)
      step += 1
      sums = dict(metrics) if sums is None else {k: sums[k] + v for k, v in metrics.items()}
      count += 1
      bar.update(1)
      if step % opts.log_steps == 0 or step == opts.train_step:
        examples = count * opts.train_batch_size
        last = {k: float(v) / examples for k, v in sums.items()}
        last["learning_rate"] = float(self.schedule(step - 1))
        last["examples_per_second"] = examples / (time.time() - started)
        bar.set_postfix({k: f"{v:.3f}" for k, v in last.items() if k != "learning_rate"})
        with train_writer.as_default(step=step):
          for k, v in last.items():
            tf.summary.scalar(k, v)
        if self.is_chief:
          append_csv(log_path, step, last)
        sums, count, started = None, 0, time.time()
      if step % opts.save_checkpoints_steps == 0 or step == opts.train_step:
        self.manager.save(checkpoint_number=step)
        if self._scratch:
          shutil.rmtree(os.path.dirname(self._scratch), ignore_errors=True)
        bar.clear()
        self._evaluate_checkpoint(step, eval_writer)
        bar.refresh()
    bar.close()
    train_writer.flush()
    eval_writer.flush()
    if self.is_chief:
      plot_learning_curve(log_path, os.path.join(opts.output_dir, "learning_curve.png"),
                          self.eval_log)
    return last
