"""ALBERT pretraining (masked LM + sentence order): what run_pretraining.py does.

Loss = masked-LM cross-entropy weighted by `masked_lm_weights` (normalized by
the weights of the whole global batch) + sentence-order cross-entropy (mean
over the global batch), so any number of replicas computes the loss of one
device at the same global batch. The loop is the shared Trainer (LAMB or
AdamW, the original schedule, exact resume); every worker reads the same
seeded input pipeline and each replica takes its slice of the global batch.
"""

import dataclasses
import os
from typing import Dict, Optional

from absl import logging
import tensorflow as tf

from albert_tf.cli import TPU_FLAGS, Original, option
from albert_tf.data import pretraining as data
from albert_tf.files import expand_files, fingerprint, write_results
from albert_tf.formats import load_checkpoint, save_original_checkpoint
from albert_tf.modeling.encoder import AlbertEncoder
from albert_tf.modeling.models import AlbertPretrainer
from albert_tf import runs
from albert_tf.sources import describe
from albert_tf.tasks.base import RuntimeOptions
from albert_tf.text.tokenization import FullTokenizer
from albert_tf.modeling import precision
from albert_tf.training.distribute import check_batch_sizes, get_strategy, is_chief
from albert_tf.training.trainer import Trainer, TrainerOptions, check_accumulation

METRIC_NAMES = ("loss", "masked_lm_loss", "masked_lm_accuracy", "sentence_order_loss",
                "sentence_order_accuracy")


# Flags of the original run_pretraining.py that are not options here.
ORIGINAL_FLAGS = {
    **TPU_FLAGS,
    "masked_lm_budget": Original(float, 0.0, "masking on the fly is not offered: mask the data "
                                 "with create_pretraining_data.py", only_default=True),
}


@dataclasses.dataclass(kw_only=True)
class PretrainingOptions(RuntimeOptions):
  """run_pretraining.py's flags (the original's, plus strategy, dtype and seed)."""
  input_file: str = option(help="Pretraining TFRecords: comma-separated paths or globs.",
                           training="fixed")
  albert_config_file: Optional[str] = option(None, "albert_config.json of the model to "
                                             "train.")
  albert_directory: Optional[str] = option(
      None, "Instead of --albert_config_file, a model directory to continue from: a released "
      "one (albert_config.json, model.ckpt-best) or a Hugging Face one (config.json, "
      "model.safetensors); its weights unless --init_checkpoint is given.")
  init_checkpoint: Optional[str] = option(None, "Initial weights: original TF1 or albert_tf "
                                          "checkpoint, or Hugging Face directory.")
  init_from_group0: bool = option(False, "Start groups that --init_checkpoint (original "
                                  "names) lacks from its group 0.")
  spm_model_file: Optional[str] = option(
      None, "The vocabulary to record in the run, for fine-tuning and exporting from it "
      "(default: the one --input_file's shards record, create_pretraining_data.py's).")
  vocab_file: Optional[str] = option(None, "A WordPiece vocabulary to record, instead of "
                                     "--spm_model_file.")
  do_lower_case: bool = option(True, "With --spm_model_file / --vocab_file: the casing to "
                               "record.")
  do_train: bool = option(False, "Train.")
  do_eval: bool = option(False, "Evaluate on --input_file after training.")
  train_batch_size: int = option(4096, "Global training batch size: the examples of one "
                                 "optimizer update.", training="fixed", at_least=1)
  gradient_accumulation_steps: int = option(
      1, "Split each update of --train_batch_size examples into this many micro-batches run "
      "one after the other, their gradients summed: the same update (the masked-LM loss "
      "still averaged over the whole update's masked tokens) in a fraction of the activation "
      "memory.", training="fixed", at_least=1)
  eval_batch_size: int = option(64, "Global evaluation batch size.", at_least=1)
  max_seq_length: int = option(512, "Sequence length of the data.", at_least=3)
  max_predictions_per_seq: int = option(20, "Masked-LM predictions per sequence in the data.",
                                        training="fixed", at_least=1)
  optimizer: str = option("lamb", "Optimizer.", choices=("lamb", "adamw"), training="fixed")
  learning_rate: float = option(0.00176, "Peak learning rate.", training="fixed", at_least=0)
  poly_power: float = option(1.0, "Power of the polynomial decay.", training="fixed", above=0)
  num_train_steps: int = option(125000, "Training steps.", training="may grow", at_least=1)
  num_warmup_steps: int = option(3125, "Linear warmup steps.", training="fixed", at_least=0)
  start_warmup_step: int = option(0, "Step at which the warmup starts.",
                                  training="fixed", at_least=0)
  save_checkpoints_steps: int = option(5000, "Steps between checkpoints.",
                                       training="fixed", at_least=1)
  keep_checkpoint_max: int = option(5, "Checkpoints to keep.", at_least=1)
  max_eval_steps: int = option(100, "Evaluation batches.", at_least=1)
  log_steps: int = option(100, "Steps between summaries.", at_least=1)
  export_original_checkpoint: bool = option(
      True, "Also write the final weights as model.ckpt-<step> in the original TF1 names.")

  def __post_init__(self):
    super().__post_init__()
    check_accumulation(self.train_batch_size, self.gradient_accumulation_steps)
    if self.num_warmup_steps > self.num_train_steps:
      raise ValueError(f"--num_warmup_steps={self.num_warmup_steps} exceeds "
                       f"--num_train_steps={self.num_train_steps}")


def batch_metrics(outputs, batch, global_batch: float, mlm_weight_sum):
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


class Pretraining:
  """The pretraining task on the shared Trainer: `train()` and `evaluate()`."""

  def __init__(self, opts: PretrainingOptions, strategy: Optional[tf.distribute.Strategy] = None):
    self.opts = opts
    if not (opts.do_train or opts.do_eval):
      raise ValueError("at least one of --do_train and --do_eval must be set")
    self.strategy = strategy or get_strategy(opts.distribution_strategy, opts.tpu,
                                                opts.tpu_zone, opts.gcp_project)
    # (a glob over the shards' directory also finds their vocabulary records)
    self.files = [f for f in expand_files(opts.input_file)
                  if not f.endswith(data.VOCABULARY_RECORD)]
    data.check_records(self.files, opts.max_seq_length, opts.max_predictions_per_seq)
    if not (opts.albert_config_file or opts.albert_directory):
      raise ValueError("pass --albert_config_file (the model to train) or --albert_directory "
                       "(a model directory to continue: released, Hugging Face, KerasHub or "
                       "TF-Hub, or a run's --output_dir)")
    described = describe(opts.albert_directory, config_file=opts.albert_config_file,
                         init_checkpoint=opts.init_checkpoint)
    self.config, self.init_checkpoint = described.config, described.checkpoint
    if opts.max_seq_length > self.config.max_position_embeddings:
      raise ValueError(f"--max_seq_length={opts.max_seq_length} exceeds max_position_embeddings="
                       f"{self.config.max_position_embeddings} of "
                       f"{opts.albert_config_file or opts.albert_directory}")
    check_batch_sizes(self.strategy, train_batch_size=opts.train_batch_size,
                      eval_batch_size=opts.eval_batch_size)
    earlier = runs.earlier(opts.output_dir)
    recorded = earlier.trained_dtype if earlier else None
    self.opts = opts = dataclasses.replace(opts, dtype=precision.resolve(
        opts.dtype, precision.probe_shape(
            self.config, opts.train_batch_size // opts.gradient_accumulation_steps
            // self.strategy.num_replicas_in_sync * opts.max_seq_length), recorded))
    runs.claim(opts.output_dir, dict(task="pretraining", model=self.config.to_dict(),
                                     **self.vocabulary()), self.strategy, opts)
    saved = os.path.join(opts.output_dir, "albert_config.json")
    if is_chief(self.strategy) and not os.path.exists(saved):
      self.config.to_json_file(saved)  # what fine-tuning and export read
    tf.random.set_seed(opts.seed)  # the data order depends on the global seed too
    train_data = data.dataset(self.files,
                              opts.train_batch_size // opts.gradient_accumulation_steps,
                              opts.max_seq_length,
                              opts.max_predictions_per_seq, True, opts.seed,
                              bucket_by_length=opts.bucket_by_length)
    self.trainer = Trainer(TrainerOptions(
        output_dir=opts.output_dir, train_steps=opts.num_train_steps,
        warmup_steps=opts.num_warmup_steps, start_warmup_step=opts.start_warmup_step,
        poly_power=opts.poly_power, learning_rate=opts.learning_rate, optimizer=opts.optimizer,
        train_batch_size=opts.train_batch_size,
        save_checkpoints_steps=opts.save_checkpoints_steps,
        keep_checkpoint_max=opts.keep_checkpoint_max, dtype=opts.dtype, seed=opts.seed,
        log_steps=opts.log_steps, progress=opts.progress, jit_compile=opts.jit_compile,
        description="pretraining",
        gradient_accumulation_steps=opts.gradient_accumulation_steps), self.strategy, self, train_data, initialize=self._initialize,
        data_files=self.files)
    self.model = self.trainer.model

  def vocabulary(self) -> Dict[str, object]:
    """What the run records of its vocabulary (as a fine-tuning run does): the one given,
    else the one --input_file's shards record; nothing when neither says one. Checked
    against the shards' fingerprint and the model's vocab_size."""
    opts = self.opts
    if opts.spm_model_file and opts.vocab_file:
      raise ValueError("pass --spm_model_file or --vocab_file, not both")
    recorded = data.recorded_vocabulary(self.files)
    given = opts.spm_model_file or opts.vocab_file
    flag = "--spm_model_file" if opts.spm_model_file else "--vocab_file"
    if given:
      if not tf.io.gfile.exists(given):
        raise FileNotFoundError(f"{flag}={given} not found")
      spm, vocab, lower, where = opts.spm_model_file, opts.vocab_file, opts.do_lower_case, \
          f"{flag}={given}"
    elif recorded:
      spm, vocab, lower = recorded["spm_model_file"], recorded["vocab_file"], \
          recorded["do_lower_case"]
      where = f"{spm or vocab} (the vocabulary --input_file's shards record)"
      if not tf.io.gfile.exists(spm or vocab):
        raise FileNotFoundError(f"{where} is missing; pass --spm_model_file or --vocab_file")
    else:
      return {}
    if recorded and recorded["fingerprint"] != fingerprint(files=[spm or vocab]):
      made = recorded["spm_model_file"] or recorded["vocab_file"]
      raise ValueError(f"{where} is not the vocabulary --input_file was made with ({made}, "
                       "as it was then)")
    FullTokenizer(vocab_file=vocab, spm_model_file=spm, do_lower_case=lower).check_fits(
        self.config.vocab_size, where)
    return {("spm_model_file" if spm else "vocab_file"): os.path.abspath(spm or vocab),
            "do_lower_case": bool(lower)}

  # -- the Trainer's view of the task

  def build_model(self) -> AlbertPretrainer:
    return AlbertPretrainer(AlbertEncoder(self.config, recompute=self.opts.recompute))

  def _initialize(self, model) -> None:
    if self.init_checkpoint:
      report = load_checkpoint(model, self.init_checkpoint, self.opts.init_from_group0)
      print(f"Initialized from {report.path} ({len(report.loaded)} variables)")

  def update_totals(self, micro_batches) -> Dict[str, tf.Tensor]:
    """The whole update's masked-token count, which its masked-LM loss is averaged over."""
    return dict(masked_lm_weight_sum=tf.add_n(
        [tf.reduce_sum(b["masked_lm_weights"]) for b in micro_batches]))

  def step_metrics(self, model, batch, training, global_batch, totals=None):
    if totals:
      weight_sum = totals["masked_lm_weight_sum"]
    else:
      ctx = tf.distribute.get_replica_context()
      weight_sum = ctx.all_reduce("sum", tf.reduce_sum(batch["masked_lm_weights"]))
    sums = batch_metrics(model(batch, training=training), batch, float(global_batch), weight_sum)
    return sums["loss"], sums

  def summarize(self, sums, steps: int, global_batch: int) -> Dict[str, float]:
    """Mean losses over `steps` and accuracies over all counted predictions."""
    sums = {k: float(v) / steps if k.endswith("loss") else float(v) for k, v in sums.items()}
    return dict(loss=sums["loss"], masked_lm_loss=sums["masked_lm_loss"],
                sentence_order_loss=sums["sentence_order_loss"],
                masked_lm_accuracy=sums["mlm_correct"] / max(sums["mlm_count"], 1e-9),
                sentence_order_accuracy=sums["sop_correct"] / max(sums["sop_count"], 1e-9))

  @property
  def step(self) -> int:
    return self.trainer.step

  # -- the run

  def train(self) -> Dict[str, float]:
    """Trains to `num_train_steps` from wherever the checkpoints left off."""
    last = self.trainer.train()
    if self.trainer.is_chief and self.opts.export_original_checkpoint:
      prefix = os.path.join(self.opts.output_dir, f"model.ckpt-{self.step}")
      if not tf.io.gfile.exists(prefix + ".index"):
        save_original_checkpoint(self.model, prefix, global_step=self.step)
        print(f"Wrote the final checkpoint in the original TF1 names: {prefix}")
    return last

  def evaluate(self) -> Dict[str, float]:
    """`max_eval_steps` batches of `input_file`; writes eval_results.txt."""
    opts = self.opts
    batches = data.dataset(self.files, opts.eval_batch_size, opts.max_seq_length,
                           opts.max_predictions_per_seq, is_training=False,
                           bucket_by_length=opts.bucket_by_length)
    try:
      result = self.trainer.evaluate_batches(batches, opts.eval_batch_size, opts.max_eval_steps)
    except ValueError:
      raise ValueError(f"--input_file has fewer than --eval_batch_size={opts.eval_batch_size} "
                       "records") from None
    result = dict(global_step=self.step, **{k: result[k] for k in METRIC_NAMES})
    if self.trainer.is_chief:
      write_results(os.path.join(opts.output_dir, "eval_results.txt"), result)
      with tf.summary.create_file_writer(os.path.join(opts.output_dir, "eval")).as_default(
          step=self.step):
        for k in METRIC_NAMES:
          tf.summary.scalar(k, result[k])
    for k, v in result.items():
      logging.info("eval %s = %s", k, v)
    return result


def run(opts: PretrainingOptions, strategy=None) -> Dict[str, Dict[str, float]]:
  """Trains and/or evaluates as the flags say; returns {"train": ..., "eval": ...}."""
  task = Pretraining(opts, strategy)
  results = {}
  if opts.do_train:
    results["train"] = task.train()
  if opts.do_eval:
    results["eval"] = task.evaluate()
  return results
