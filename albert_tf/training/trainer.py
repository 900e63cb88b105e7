"""One training loop for pretraining and every fine-tuning task.

The Trainer owns the loop; a task owns its model, data, loss and metrics
(the split of tf-models-official's base_trainer / base_task). Global batches
are sliced over the replicas, gradients all-reduced and clipped to global
norm 1.0 (as the original), variables the loss does not reach are left
alone, and the original AdamW/LAMB schedule is applied. A CheckpointManager
holds the model, optimizer, input iterator and dropout generators as
`ckpt-<step>`, so a rerun after a crash continues exactly (rows logged past
the restored step are dropped); every saved checkpoint can be evaluated,
the best kept as `model.ckpt-best`. TensorBoard summaries, train_log.csv,
eval_log.csv, learning_curve.png and a progress bar. SIGTERM or SIGINT ends the
run after the step in flight, saved (`Stopped`: exit status 75 in the scripts);
a write that finds the disk full is a one-line `files.WriteFailed`.

Gradient accumulation (`gradient_accumulation_steps` = N > 1): an update of
`train_batch_size` examples is N micro-batches of train_batch_size / N, read
from the data one after the other (the same examples, in the same order, as one
large batch); each adds its gradient to a float32 buffer (one copy of the
trainable variables, local to each replica), then one all-reduce, one clip and
one optimizer step apply the sum: exactly what the large batch does, with the
activations of one micro-batch. Checkpoints are only written between updates.

A task, for the Trainer, is an object with:
  build_model() -> a Keras model with `checkpoint_items`;
  step_metrics(model, batch, training, global_batch[, totals]) -> (loss, sums):
    the replica's share of the global (update) batch's loss, and scalar sums
    that add up over replicas, micro-batches and steps;
  summarize(sums, steps, global_batch) -> the logged metrics of `steps` steps;
  optionally update_totals(micro_batches) -> {name: scalar} over a whole update
    (e.g. its masked-token count), passed to step_metrics as `totals` when
    accumulating, for losses normalized by the update rather than the micro-batch.
"""

import contextlib
import dataclasses
import os
import shutil
import signal
import threading
import time
from typing import Callable, Dict, Iterator, List, Optional, Sequence

from absl import logging
import tensorflow as tf
import tf_keras as keras

from albert_tf.files import (atomic_checkpoint, find_corrupt_record,
                             reading_checkpoint, writing)
from albert_tf.modeling.layers.dropout import random_generators
from albert_tf.progress import progress_bar
from albert_tf.training.distribute import (check_batch_sizes, distribute_global_batch, is_chief,
                                           set_precision)
from albert_tf.training.logs import append_csv, drop_rows_after, plot_learning_curve, read_csv
from albert_tf.training.optimization import AlbertLearningRate, create_optimizer

CHECKPOINT_NAME = "ckpt"            # training state: ckpt-<step> (model, optimizer, data position)
BEST_PREFIX = "model.ckpt-best"     # the best evaluated weights
STOPPED_EXIT_CODE = 75              # sysexits' EX_TEMPFAIL: stopped by a signal, rerun to continue


class Stopped(Exception):
  """Training stopped by SIGTERM or SIGINT after saving the step it had finished: the
  command-line scripts print this one line and exit with `exit_code`."""
  exit_code = STOPPED_EXIT_CODE

  def __init__(self, signal_name: str, step: int):
    super().__init__(f"stopped by {signal_name} at step {step}; rerun the same command to "
                     "continue")
    self.signal_name, self.step = signal_name, step


@contextlib.contextmanager
def stop_requests(signals=(signal.SIGTERM, signal.SIGINT)) -> Iterator[List[int]]:
  """Within the block SIGTERM and SIGINT (what Kubernetes, Slurm and preemptible VMs send
  before a kill, and Ctrl-C) do not end the process: they are appended to the yielded
  list, which the training loop checks between steps. More signals while it saves are
  recorded too and change nothing. Outside the main thread (where Python cannot set
  handlers) the list stays empty and signals keep their usual effect."""
  received: List[int] = []
  if threading.current_thread() is not threading.main_thread():
    yield received
    return
  previous = {s: signal.signal(s, lambda signum, frame: received.append(signum)) for s in signals}
  try:
    yield received
  finally:
    for s, handler in previous.items():
      signal.signal(s, handler)


def _bytes_of(variables) -> int:
  """The bytes a checkpoint of `variables` holds, about (what a save needs free)."""
  return sum(v.shape.num_elements() * v.dtype.size for v in variables)


@dataclasses.dataclass
class TrainerOptions:
  """What the loop needs; each task fills it from its own flags."""
  output_dir: str
  train_steps: int
  learning_rate: float
  train_batch_size: int
  warmup_steps: int = 0
  start_warmup_step: int = 0
  poly_power: float = 1.0
  optimizer: str = "adamw"
  save_checkpoints_steps: int = 1000
  keep_checkpoint_max: int = 5
  dtype: str = "float32"
  seed: int = 12345
  log_steps: int = 10
  progress: bool = True
  jit_compile: bool = False
  description: str = "training"     # the progress bar's label
  gradient_accumulation_steps: int = 1   # micro-batches per update of train_batch_size

  @property
  def micro_batch_size(self) -> int:
    """The global batch of one forward and backward pass."""
    return self.train_batch_size // self.gradient_accumulation_steps


def write_checkpoint(items: Dict[str, object], prefix: str) -> str:
  """Writes `tf.train.Checkpoint(**items)` to `prefix`, replacing any checkpoint there only
  once the new one is complete."""
  with atomic_checkpoint(prefix) as tmp_prefix:
    tf.train.Checkpoint(**items).write(tmp_prefix)
  return prefix


class Trainer:
  """Trains a task's model to `train_steps`, optionally evaluating every saved checkpoint.

  Args:
    opts: TrainerOptions.
    strategy: the tf.distribute strategy (its scope builds the model).
    task: see the module docstring.
    train_data: a dataset of global training batches (repeating); its
      iterator is checkpointed.
    evaluate_fn: (model) -> dict of dev metrics, or None for no evaluation.
    best_metric: the key of `evaluate_fn`'s result that selects
      model.ckpt-best (higher is better).
    initialize: (model) -> None, called when `output_dir` has no checkpoint
      yet (e.g. to load --init_checkpoint).
    data_files: the TFRecords `train_data` reads, to name a corrupt one.
    on_best: (step, best_metric, value) -> None, called once a new model.ckpt-best is
      written (the run's owner records which step it holds).
  """

  def __init__(self, opts: TrainerOptions, strategy, task, train_data: tf.data.Dataset,
               evaluate_fn: Optional[Callable[[keras.Model], Dict[str, float]]] = None,
               best_metric: Optional[str] = None,
               initialize: Optional[Callable[[keras.Model], None]] = None,
               data_files: Sequence[str] = (),
               on_best: Optional[Callable[[int, str, float], None]] = None):
    self.opts, self.strategy, self.task = opts, strategy, task
    self.on_best = on_best
    self.data_files = list(data_files)
    self.evaluate_fn, self.best_metric = evaluate_fn, best_metric
    check_accumulation(opts.train_batch_size, opts.gradient_accumulation_steps)
    check_batch_sizes(strategy, **({"train_batch_size": opts.train_batch_size}
                                   if opts.gradient_accumulation_steps == 1 else
                                   {"train_batch_size / --gradient_accumulation_steps":
                                    opts.micro_batch_size}))
    if opts.train_steps <= 0 or opts.save_checkpoints_steps <= 0:
      raise ValueError("the number of training steps and --save_checkpoints_steps must be "
                       "positive")
    self.is_chief = is_chief(strategy)
    set_precision(opts.dtype)
    keras.utils.set_random_seed(opts.seed)  # Python's too: Keras draws unseeded seeds there
    with strategy.scope():
      self.model = task.build_model()
      generators = random_generators(self.model)
      self.schedule = AlbertLearningRate(opts.learning_rate, opts.train_steps, opts.warmup_steps,
                                         opts.start_warmup_step, opts.poly_power)
      self.optimizer = create_optimizer(opts.optimizer, self.schedule, opts.dtype)
      # The slots now, not in the first step: a tf.function that creates variables is
      # traced twice (with and without creating them), the longest part of a short run.
      self.optimizer._create_all_weights(self.model.trainable_variables)  # pylint: disable=protected-access
      self._buffers = None
      if opts.gradient_accumulation_steps > 1:   # per replica: summed there, all-reduced once
        self._buffers = [tf.Variable(tf.zeros(v.shape, tf.float32), trainable=False,
                                     name="accumulated_gradient",
                                     synchronization=tf.VariableSynchronization.ON_READ,
                                     aggregation=tf.VariableAggregation.SUM)
                         for v in self.model.trainable_variables]
    self._used = None   # indices of the trainable variables the loss reaches (set when traced)
    self.iterator = iter(train_data)
    # The dropout generators too: a resumed run draws the masks the uninterrupted one would.
    self.checkpoint = tf.train.Checkpoint(**self.model.checkpoint_items,
                                          optimizer=self.optimizer, data=self.iterator,
                                          rng=generators)
    # Every worker saves (as tf.distribute requires); non-chiefs into scratch space.
    self._scratch = None if self.is_chief else os.path.join(
        opts.output_dir, ".worker_tmp", str(strategy.cluster_resolver.task_id))
    self.manager = tf.train.CheckpointManager(
        self.checkpoint, self._scratch or opts.output_dir,
        max_to_keep=opts.keep_checkpoint_max, checkpoint_name=CHECKPOINT_NAME)
    self.eval_log = os.path.join(opts.output_dir, "eval_log.csv")
    # autograph=False: the steps (and every layer they call) have no tensor-dependent
    # Python control flow, and converting their source cost a run_classifier.py process
    # ~2-3 of 14-16 s (a tiny model, 4 steps; the Keras layers' calls are converted too
    # when the enclosing function allows it).
    self._train_step = tf.function(self._train_step_fn, jit_compile=opts.jit_compile or None, autograph=False)
    self._micro_step = tf.function(self._micro_step_fn, jit_compile=opts.jit_compile or None, autograph=False)
    self._apply_step = tf.function(self._apply_step_fn, autograph=False)
    self._eval_step = tf.function(self._eval_step_fn, autograph=False)
    latest = tf.train.latest_checkpoint(opts.output_dir)  # the chief's, on every worker
    if latest:
      with reading_checkpoint(latest):
        self.checkpoint.restore(latest).expect_partial()
      logging.info("Resuming from %s (step %d)", latest, self.step)
      print(f"Resuming from {latest} at step {self.step}")
    elif initialize is not None:
      initialize(self.model)

  def _next_batch(self):
    try:
      return next(self.iterator)
    except tf.errors.DataLossError as e:
      bad = find_corrupt_record(self.data_files)
      raise ValueError(f"corrupt training data: {bad or e.message.splitlines()[0]}; "
                       "recreate the file") from None

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

  # -- steps

  def _gradients(self, batch, totals=None):
    """In a replica: (sums, gradients, their variable indices) of the replica's share of
    the update's loss. Variables the loss does not reach (the pooler, for span heads)
    are left out, and so left alone by the update."""
    scaled = isinstance(self.optimizer, keras.mixed_precision.LossScaleOptimizer)
    variables = self.model.trainable_variables
    with tf.GradientTape() as tape:
      loss, sums = self.task.step_metrics(self.model, batch, True, self.opts.train_batch_size,
                                          **({"totals": totals} if totals else {}))
      if scaled:
        loss = self.optimizer.get_scaled_loss(loss)
    grads = tape.gradient(loss, variables)
    used = [i for i, g in enumerate(grads) if g is not None]
    grads = [grads[i] for i in used]
    if scaled:
      grads = self.optimizer.get_unscaled_gradients(grads)
    return sums, grads, used

  def _apply(self, grads, used):
    """In a replica: the replicas' gradients summed, clipped to global norm 1.0, applied."""
    ctx = tf.distribute.get_replica_context()
    grads, _ = tf.clip_by_global_norm(ctx.all_reduce("sum", grads), 1.0)
    variables = [self.model.trainable_variables[i] for i in used]
    self.optimizer.apply_gradients(zip(grads, variables), experimental_aggregate_gradients=False)

  def _train_step_fn(self, batch):
    def replica_step(batch):
      sums, grads, used = self._gradients(batch)
      self._apply(grads, used)
      return sums

    sums = self.strategy.run(replica_step, args=(batch,))
    return {k: self.strategy.reduce("sum", v, axis=None) for k, v in sums.items()}

  def _micro_step_fn(self, batch, totals):
    """One micro-batch: its gradient (of its share of the update's loss) into the buffers."""
    def replica_step(batch, totals):
      sums, grads, self._used = self._gradients(batch, totals)
      for i, g in zip(self._used, grads):
        self._buffers[i].assign_add(tf.cast(g, tf.float32))
      return sums

    sums = self.strategy.run(replica_step, args=(batch, totals))
    return {k: self.strategy.reduce("sum", v, axis=None) for k, v in sums.items()}

  def _apply_step_fn(self):
    """The update: the buffers' sum over replicas, clipped, applied; the buffers emptied."""
    def replica_step():
      self._apply([self._buffers[i].read_value() for i in self._used], self._used)
      for i in self._used:
        self._buffers[i].assign(tf.zeros_like(self._buffers[i]))

    self.strategy.run(replica_step)

  def _update(self) -> Dict[str, tf.Tensor]:
    """One optimizer update from the data: one step, or N accumulated micro-batches."""
    opts = self.opts
    if opts.gradient_accumulation_steps == 1:
      return self._train_step(distribute_global_batch(self.strategy, self._next_batch(),
                                                      opts.train_batch_size))
    micro_batches = [self._next_batch() for _ in range(opts.gradient_accumulation_steps)]
    totals = self.task.update_totals(micro_batches) if hasattr(self.task, "update_totals") \
        else {}
    sums = None
    for batch in micro_batches:
      sums = _accumulate(sums, self._micro_step(
          distribute_global_batch(self.strategy, batch, opts.micro_batch_size), totals))
    self._apply_step()
    return sums

  def _eval_step_fn(self, batch, global_batch):
    sums = self.strategy.run(
        lambda b: self.task.step_metrics(self.model, b, False, global_batch)[1], args=(batch,))
    return {k: self.strategy.reduce("sum", v, axis=None) for k, v in sums.items()}

  def evaluate_batches(self, batches, global_batch: int, max_steps: int) -> Dict[str, float]:
    """The task's metrics over up to `max_steps` full global batches, on every replica."""
    sums, steps = None, 0
    for batch in batches.take(max_steps):
      if int(tf.shape(batch["input_word_ids"])[0]) != global_batch:
        break  # the ragged last batch does not split over replicas
      metrics = self._eval_step(distribute_global_batch(self.strategy, batch, global_batch),
                                global_batch)
      sums = _accumulate(sums, metrics)
      steps += 1
    if not steps:
      raise ValueError(f"fewer records than one evaluation batch of {global_batch}")
    return self.task.summarize(sums, steps, global_batch)

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
        best = os.path.join(self.opts.output_dir, BEST_PREFIX)
        with writing(best, needed=_bytes_of(self.model.variables)):
          write_checkpoint(self.model.checkpoint_items, best)
        if self.on_best is not None:
          self.on_best(step, self.best_metric, value)
      append_csv(self.eval_log, step, result)
      with writer.as_default(step=step):
        for k, v in result.items():
          tf.summary.scalar(k, v)
    logging.info("step %d dev: %s", step, result)
    print(f"step {step} dev: " + ", ".join(f"{k} {v:.4f}" for k, v in result.items())
          + ("  (best so far)" if improved else ""))

  # -- the loop

  def _save(self, step: int) -> None:
    """Writes the training state as ckpt-<step> (a failed write leaves the earlier ones)."""
    with writing(self._scratch or self.opts.output_dir,
                 needed=_bytes_of(self.checkpoint_variables())):
      self.manager.save(checkpoint_number=step)
    if self._scratch:
      shutil.rmtree(os.path.dirname(self._scratch), ignore_errors=True)

  def checkpoint_variables(self) -> List[tf.Variable]:
    """The variables a training checkpoint holds (model, optimizer slots, generators)."""
    slots = self.optimizer.variables
    return list(self.model.variables) + list(slots() if callable(slots) else slots)

  def train(self) -> Dict[str, float]:
    """Trains from wherever the checkpoints left off; returns the last logged metrics."""
    opts = self.opts
    make_writer = (lambda d: tf.summary.create_file_writer(os.path.join(opts.output_dir, d))) \
        if self.is_chief else (lambda d: tf.summary.create_noop_writer())
    train_writer = make_writer("train")
    eval_writer = make_writer("eval") if self.evaluate_fn else None
    step = self.step  # counted in Python from here: no variable read per step
    # A crash between saving a checkpoint and evaluating it: evaluate it now.
    evaluated = {int(r["step"]) for r in read_csv(self.eval_log)}
    if step and step not in evaluated and (step % opts.save_checkpoints_steps == 0
                                           or step == opts.train_steps):
      self._evaluate_checkpoint(step, eval_writer)
    log_path = os.path.join(opts.output_dir, "train_log.csv")
    if self.is_chief:  # rows a crashed run logged after its last checkpoint are redone
      for path in (log_path, self.eval_log):
        drop_rows_after(path, step)
    bar = progress_bar(total=opts.train_steps, initial=step, unit="step", desc=opts.description,
               disable=not (opts.progress and self.is_chief))
    sums, count, last, started = None, 0, {}, time.time()

    def log(step):
      nonlocal sums, count, last, started
      elapsed = time.time() - started
      last = self.task.summarize(sums, count, opts.train_batch_size)
      last["learning_rate"] = float(self.schedule(step - 1))
      last["examples_per_second"] = count * opts.train_batch_size / elapsed
      bar.set_postfix({k: f"{v:.3f}" for k, v in last.items()
                       if k not in ("learning_rate", "examples_per_second")})
      with train_writer.as_default(step=step):
        for k, v in last.items():
          tf.summary.scalar(k, v)
      if self.is_chief:
        append_csv(log_path, step, last)
      sums, count, started = None, 0, time.time()

    def close():
      bar.close()
      for writer in (train_writer, eval_writer):
        if writer is not None:
          with writing(opts.output_dir):
            writer.flush()

    # SIGTERM/SIGINT end the run after the step in flight, saved (not under multi-worker
    # strategies, where every worker would have to agree on the step: there they kill).
    multi_worker = getattr(self.strategy.extended, "_in_multi_worker_mode", lambda: False)()
    with contextlib.nullcontext([]) if multi_worker else stop_requests() as received:
      while step < opts.train_steps:
        sums = _accumulate(sums, self._update())
        step += 1
        count += 1
        bar.update(1)
        if step % opts.log_steps == 0 or step == opts.train_steps:
          log(step)
        saved = step % opts.save_checkpoints_steps == 0 or step == opts.train_steps
        if saved:
          self._save(step)
          bar.clear()
          self._evaluate_checkpoint(step, eval_writer)
          bar.refresh()
        if received and step < opts.train_steps:
          if count:
            log(step)
          if not saved:
            self._save(step)
          close()
          raise Stopped(signal.Signals(received[0]).name, step)
    close()
    if self.is_chief:
      plot_learning_curve(log_path, os.path.join(opts.output_dir, "learning_curve.png"),
                          self.eval_log if self.evaluate_fn else None)
    return last


def check_accumulation(train_batch_size: int, steps: int) -> None:
  """--train_batch_size (an update's examples) must split into --gradient_accumulation_steps."""
  if steps < 1:
    raise ValueError(f"--gradient_accumulation_steps={steps} must be at least 1")
  if train_batch_size % steps:
    raise ValueError(f"--train_batch_size={train_batch_size} is not divisible by "
                     f"--gradient_accumulation_steps={steps} (an update of train_batch_size "
                     "examples is that many micro-batches of equal size)")


def _accumulate(sums, metrics):
  """Adds a step's metric tensors to the running sums (tensors: no device sync per step)."""
  return dict(metrics) if sums is None else {k: sums[k] + v for k, v in metrics.items()}


def mean_per_example(per_example: Dict[str, tf.Tensor], global_batch: int):
  """`step_metrics` of a loss given per example: the replica's examples' summed `loss`
  over the global batch size, and every entry summed."""
  sums = {k: tf.reduce_sum(v) for k, v in per_example.items()}
  return sums["loss"] / float(global_batch), sums


def summarize_per_example(sums, steps: int, global_batch: int) -> Dict[str, float]:
  """Means over the examples of `steps` steps (the `summarize` of `mean_per_example`)."""
  examples = steps * global_batch
  return {k: float(v) / examples for k, v in sums.items()}
