"""What every run shares: the flags common to the scripts, where the encoder and the
vocabulary come from, and the sequence of a fine-tuning run (check, read, featurize,
claim the output directory through `albert_tf.runs`, train, restore the best, evaluate,
predict).

A fine-tuning task subclasses `FinetuningTask` and gives only what is its own:
its inputs and features, its head (`build_model`), its loss per example, its
dev metric, and what inference writes.
"""

import dataclasses
import functools
import os
from typing import Dict, List, Optional

from absl import logging
import numpy as np
import tensorflow as tf

from albert_tf import runs
from albert_tf.sources import describe
from albert_tf.cli import Checked, option
from albert_tf.data.records import any_size
from albert_tf.files import reading_checkpoint
from albert_tf.modeling.config import AlbertConfig
from albert_tf.modeling.encoder import AlbertEncoder
from albert_tf.modeling.layers.dropout import random_generators
from albert_tf.formats import load_checkpoint, resolve
from albert_tf.export.loading import export_record
from albert_tf.formats.tf_hub import (FROM_TF_HUB, is_albert_tf_export, load_saved_model,
                                      vocabulary_from_hub)
from albert_tf.text.tokenization import FullTokenizer
from albert_tf.modeling import precision
from albert_tf.training.distribute import get_strategy, set_precision
from albert_tf.training.trainer import (BEST_PREFIX, Trainer, TrainerOptions, check_accumulation,
                                        mean_per_example, summarize_per_example)

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")
DTYPES = precision.DTYPES + (precision.AUTO,)


# ----------------------------------------------------------------------------- flags

@dataclasses.dataclass(kw_only=True)
class RuntimeOptions(Checked):
  """Flags of every training script: where, on what, how precisely, how verbosely."""
  output_dir: str = option(help="Checkpoints, summaries, results and predictions go here.")
  distribution_strategy: str = option("one_device", "tf.distribute strategy.",
                                      choices=STRATEGIES)
  tpu: Optional[str] = option(None, "TPU address for --distribution_strategy=tpu.")
  tpu_zone: Optional[str] = option(None, "GCE zone of --tpu (found from metadata if unset).")
  gcp_project: Optional[str] = option(None, "GCP project of --tpu (found from metadata if "
                                      "unset).")
  dtype: str = option("float32", "Compute dtype (variables stay float32; float16 uses loss "
                      "scaling); auto measures float32 and bfloat16 matmuls at the model's "
                      "shapes for about a second and takes the faster, kept on resume.",
                      choices=DTYPES, training="fixed")
  jit_compile: bool = option(False, "Compile the training step with XLA.")
  recompute: bool = option(
      False, "Recompute each transformer block in the backward pass instead of keeping its "
      "activations: far less training memory (ALBERT-large and larger at long sequences) for "
      "about two thirds of a forward pass more time; the same gradients.")
  bucket_by_length: bool = option(
      True, "Cut each batch's padding to the smallest of a few lengths (32, 64, 96, 128, then "
      "multiples of 64, up to --max_seq_length) that holds its longest example: the same "
      "examples and results, less computation on padding.")
  seed: int = option(12345, "Seed of the initialization and the data order.", training="fixed")
  log_steps: int = option(10, "Steps between training summaries.", at_least=1)
  progress: bool = option(True, "Show progress bars.")


@dataclasses.dataclass(kw_only=True)
class ModelOptions(Checked):
  """Where the model and its vocabulary come from (the original flags, and a directory)."""
  albert_directory: Optional[str] = option(
      None, "A model directory holding the config, weights and vocabulary: a released one "
      "(albert_config.json, model.ckpt-best, 30k-clean.model or vocab_chinese.txt), a "
      "Hugging Face one (config.json, model.safetensors, spiece.model or vocab.txt) or its "
      "repo id (org/name[@revision], through huggingface_hub), a KerasHub preset, a TF-Hub "
      "SavedModel, or a fine-tuning or pretraining run's --output_dir (its best checkpoint; a "
      "head of another shape starts fresh). Explicit --albert_config_file, "
      "--init_checkpoint, --spm_model_file or --vocab_file take precedence.")
  albert_config_file: Optional[str] = option(None, "albert_config.json of the model.")
  init_checkpoint: Optional[str] = option(None, "Original TF1 or albert_tf checkpoint, or "
                                          "Hugging Face directory, to start from.")
  albert_hub_module_handle: Optional[str] = option(
      None, "An encoder SavedModel: one written by hub_export/export.py, or an official "
      "TF2 TF-Hub ALBERT module (tensorflow/albert_en_base/3 ...); a directory or a handle "
      "tensorflow_hub resolves (https://tfhub.dev/..., a Kaggle Models URL, gs://...).")
  spm_model_file: Optional[str] = option(None, "SentencePiece model (30k-clean.model), or "
                                         "from_tf_hub.")
  vocab_file: Optional[str] = option(None, "WordPiece vocabulary (the Chinese releases' "
                                     "vocab_chinese.txt), or from_tf_hub; instead of "
                                     "--spm_model_file.")
  do_lower_case: bool = option(True, "Lower-case the input (every released model does).")


@dataclasses.dataclass(kw_only=True)
class FinetuningOptions(ModelOptions, RuntimeOptions):
  """Flags every fine-tuning script shares; each script sets its own defaults."""
  max_seq_length: int = option(512, "Sequence length after tokenization and packing.", at_least=3)
  do_train: bool = option(False, "Fine-tune.")
  do_predict: bool = option(False, "Predict.")
  train_batch_size: int = option(32, "Global training batch size: the examples of one "
                                 "optimizer update.", training="fixed", at_least=1)
  gradient_accumulation_steps: int = option(
      1, "Split each update of --train_batch_size examples into this many micro-batches run "
      "one after the other, their gradients summed: the same update in a fraction of the "
      "activation memory.", training="fixed", at_least=1)
  predict_batch_size: int = option(8, "Prediction batch size.", at_least=1)
  learning_rate: float = option(5e-5, "Peak learning rate.", training="fixed", at_least=0)
  save_checkpoints_steps: int = option(1000, "Steps between checkpoints (each is evaluated "
                                       "on dev).", training="fixed", at_least=1)
  optimizer: str = option("adamw", "Optimizer.", choices=("adamw", "lamb"), training="fixed")
  dropout_prob: float = option(0.1, "Dropout on the pooled output.",
                               training="fixed", at_least=0, below=1)

  def __post_init__(self):
    super().__post_init__()
    check_accumulation(self.train_batch_size, self.gradient_accumulation_steps)
    warmup, steps = getattr(self, "warmup_step", None), getattr(self, "train_step", None)
    if warmup is not None and steps is not None and warmup > steps:
      raise ValueError(f"--warmup_step={warmup} exceeds --train_step={steps}")
    if self.albert_hub_module_handle and self.recompute:
      raise ValueError("--recompute cannot apply to --albert_hub_module_handle (a SavedModel "
                       "runs as exported); use --albert_config_file and --init_checkpoint")
    if self.albert_hub_module_handle and self.dtype not in ("float32", precision.AUTO):
      raise ValueError(f"--dtype={self.dtype} cannot apply to --albert_hub_module_handle: a "
                       "SavedModel computes in the precision it was exported in; use "
                       "--albert_config_file and --init_checkpoint for mixed precision")


@dataclasses.dataclass(kw_only=True)
class StepOptions(FinetuningOptions):
  """The flags of the scripts that train for a number of steps and evaluate on dev
  (run_classifier.py, run_ner.py)."""
  do_eval: bool = option(False, "Evaluate the best checkpoint on dev.")
  eval_batch_size: int = option(8, "Evaluation batch size.", at_least=1)
  train_step: int = option(1000, "Training steps.", training="may grow", at_least=1)
  warmup_step: int = option(0, "Linear warmup steps.", training="fixed", at_least=0)
  keep_checkpoint_max: int = option(5, "Recent checkpoints to keep (model.ckpt-best is kept "
                                    "apart).", at_least=1)
  export_dir: Optional[str] = option(None, "Write an end-to-end SavedModel of the best "
                                     "checkpoint here: raw text in, the task's answers out.")
  num_hidden_layers: Optional[int] = option(
      None, "Passes of the shared block (default: the model's): fewer answer faster with the "
      "same weights; with several groups, pass i uses group int(i / N * G) as the original "
      "maps layers. Recorded in the run, so every export has the same depth.", at_least=1)


# ----------------------------------------------------------------------------- model source

@dataclasses.dataclass
class ModelSource:
  """The encoder and tokenizer a fine-tuning run starts from."""
  config: AlbertConfig
  tokenizer: FullTokenizer
  hub_handle: Optional[str] = None       # a local encoder SavedModel from hub_export
  init_checkpoint: Optional[str] = None  # original TF1 or albert_tf checkpoint
  recompute: bool = False                # AlbertEncoder(recompute=...)

  def build_encoder(self):
    """A fresh AlbertEncoder, or the SavedModel as a trainable hub.KerasLayer."""
    if self.hub_handle:
      import tensorflow_hub as hub  # pylint: disable=g-import-not-at-top
      return hub.KerasLayer(self.hub_handle, trainable=True, name="albert_hub")
    return AlbertEncoder(self.config, recompute=self.recompute)

  def initialize(self, model) -> None:
    """Loads --init_checkpoint into a task model (hub weights are already in place)."""
    if self.init_checkpoint:
      report = load_checkpoint(model, self.init_checkpoint)
      print(f"Initialized from {report.path} ({len(report.loaded)} variables"
            + (f"; fresh: {', '.join(report.freshly_initialized)}"
               if report.freshly_initialized else "") + ")")
    elif not self.hub_handle:
      logging.warning("No --init_checkpoint and no --albert_hub_module_handle: "
                      "fine-tuning from random weights")

  def record(self) -> dict:
    """What identifies the model and vocabulary in the run's record (`albert_tf.runs`)."""
    return dict(model=self.config.to_dict(),
                hub=os.path.abspath(self.hub_handle) if self.hub_handle else None,
                **{("spm_model_file" if self.tokenizer.spm_model_file else "vocab_file"):
                   os.path.abspath(self.tokenizer.vocabulary_file)},
                do_lower_case=self.tokenizer.do_lower_case)


def with_depth(config: AlbertConfig, opts, hub_handle: Optional[str]) -> AlbertConfig:
  """`config` with --num_hidden_layers passes of its shared block, where the flag is given
  (ALBERT's weights do not depend on the depth); one line where it does not fit."""
  layers = getattr(opts, "num_hidden_layers", None)
  if layers is None or layers == config.num_hidden_layers:
    return config
  if hub_handle:
    raise ValueError(f"--num_hidden_layers={layers}: --albert_hub_module_handle={hub_handle} "
                     "runs as exported, at its depth; pass it as --albert_directory, which "
                     "reads its weights into albert_tf's encoder at any depth")
  if layers < config.num_hidden_groups:
    raise ValueError(f"--num_hidden_layers={layers} is fewer than the model's "
                     f"num_hidden_groups={config.num_hidden_groups}: every group needs a pass")
  return dataclasses.replace(config, num_hidden_layers=layers)


def resolve_model_source(opts: ModelOptions, max_seq_length: int) -> ModelSource:
  """Reads and cross-checks the model flags (`sources.describe`); every error names the
  flag or file.

  Checks: one model description (config file, model directory or run, or hub handle), the
  checkpoint exists, exactly one vocabulary (SentencePiece or WordPiece) whose size equals
  the model's vocab_size, and max_seq_length fits max_position_embeddings.
  """
  hub_handle = resolve(opts.albert_hub_module_handle, "--albert_hub_module_handle")
  directory, flag = getattr(opts, "albert_directory", None), "--albert_directory"
  if directory and hub_handle:
    raise ValueError("pass one of --albert_directory and --albert_hub_module_handle, not both")
  spm_model_file, vocab_file, do_lower_case = opts.spm_model_file, opts.vocab_file, opts.do_lower_case
  if FROM_TF_HUB in (spm_model_file, vocab_file) and not hub_handle:
    raise ValueError(f"--{'spm_model_file' if spm_model_file else 'vocab_file'}=from_tf_hub "
                     "needs --albert_hub_module_handle")
  if hub_handle:
    if not os.path.isdir(hub_handle):
      raise FileNotFoundError(f"--albert_hub_module_handle={opts.albert_hub_module_handle} is "
                              "not a directory (an encoder SavedModel) nor a handle "
                              "tensorflow_hub resolves")
    hub_module = load_saved_model(hub_handle)  # read once for config, vocabulary, weights
    if FROM_TF_HUB in (spm_model_file, vocab_file):
      spm_model_file, vocab_file, do_lower_case = vocabulary_from_hub(hub_module, hub_handle)
    if opts.albert_config_file:
      logging.warning("--albert_config_file is ignored: the config comes from the SavedModel")
    directory, flag = hub_handle, "--albert_hub_module_handle"
    if is_albert_tf_export(hub_module):
      # Its weights come in the hub.KerasLayer; a tf-models module (Google's TF2 ALBERTs)
      # has its weights read by name into albert_tf's own encoder, as from a directory.
      described = describe(directory, flag, init_checkpoint=opts.init_checkpoint,
                           spm_model_file=spm_model_file, vocab_file=vocab_file,
                           do_lower_case=do_lower_case)
      described.checkpoint = resolve(opts.init_checkpoint, "--init_checkpoint")
    else:
      hub_handle = None
  if not hub_handle:
    if not (directory or opts.albert_config_file):
      raise ValueError("pass --albert_directory (a released, Hugging Face, KerasHub or TF-Hub "
                       "model directory, or a run's --output_dir), --albert_config_file (with "
                       "--init_checkpoint) or --albert_hub_module_handle")
    described = describe(directory, flag,
                         config_file=None if flag != "--albert_directory" else opts.albert_config_file,
                         init_checkpoint=opts.init_checkpoint, spm_model_file=spm_model_file,
                         vocab_file=vocab_file, do_lower_case=do_lower_case)
  init, config = described.checkpoint, with_depth(described.config, opts, hub_handle)
  if init and not (tf.io.gfile.exists(init + ".index") or tf.io.gfile.isdir(init)):
    raise FileNotFoundError(f"--init_checkpoint={init}: no checkpoint there "
                            f"({init}.index not found)")
  tokenizer = described.tokenizer()
  if max_seq_length > config.max_position_embeddings:
    raise ValueError(f"--max_seq_length={max_seq_length} exceeds the model's "
                     f"max_position_embeddings={config.max_position_embeddings}")
  if max_seq_length < 3:
    raise ValueError(f"--max_seq_length={max_seq_length} leaves no room for [CLS] and [SEP]")
  return ModelSource(config, tokenizer, hub_handle, init, getattr(opts, "recompute", False))


# ----------------------------------------------------------------------------- fine-tuning

DID_NOT_LEARN = "did_not_learn"   # the results' (and eval_results.txt's) key for the line
# The learning rates ALBERT's paper fine-tunes its released models with (1e-5 to 5e-5).
FINE_TUNING_RATES = (1e-5, 5e-5)


def not_learned_line(what: str, learning_rate: float, steps: Optional[int]) -> str:
  """The line a run ends with when its best weights learned nothing: `what` showed it,
  then the likely cause and the flag to try (docs/own_data.md, "A run that did not
  learn"). A run collapses onto one answer most often for a learning rate too large
  for its weights; below that, for too few steps or labels the texts do not decide."""
  low, high = FINE_TUNING_RATES
  if learning_rate > high:
    cause = (f"--learning_rate={learning_rate:g} is above the {low:g} to {high:g} ALBERT is "
             f"fine-tuned with; try --learning_rate={learning_rate / 10:g}")
  else:
    cause = (f"too few steps for --learning_rate={learning_rate:g}; try more --train_step"
             + (f" than {steps}" if steps else "") + ", or check that the texts decide the "
             "labels")
  return f"This run did not learn: {what}. Likely cause: {cause} (docs/own_data.md)."


class FinetuningTask:
  """One fine-tuning run: every input checked before any work, then train / infer.

  Subclasses set `name` and `best_metric`, implement `build_model`,
  `per_example_loss`, `train_dataset`, `evaluate` and `infer`, and override
  the hooks below where they have something to do.
  """
  name = "fine-tuning"
  best_metric = "accuracy"

  def __init__(self, opts: FinetuningOptions):
    self.opts = opts
    self.check_options()
    self.read_inputs()
    opts = self.opts   # (as check_options completed it)
    self.source = resolve_model_source(opts, opts.max_seq_length)
    self.opts = opts = dataclasses.replace(opts, dtype=self.resolve_dtype())
    self.strategy = get_strategy(opts.distribution_strategy, opts.tpu, opts.tpu_zone,
                                 opts.gcp_project)
    self.check_outputs()
    runs.claim(opts.output_dir, dict(task=self.name, **self.source.record(),
                                     max_seq_length=opts.max_seq_length,
                                     **self.run_record().to_record()),
               self.strategy, opts, {k: getattr(opts, k, None) for k in ("train_file",
                                                                          "data_dir")})
    self.build_features()
    self._predict_fns = {}
    self._trained_model = None   # set by train(); inference reuses it

  def resolve_dtype(self) -> str:
    """--dtype, with `auto` measured (or kept from the run this output directory holds); a
    SavedModel encoder computes as it was exported: float32."""
    opts = self.opts
    if self.source.hub_handle and opts.dtype == precision.AUTO:
      return "float32"
    earlier = runs.earlier(opts.output_dir)
    recorded = earlier.trained_dtype if earlier else None
    return precision.resolve(opts.dtype, precision.probe_shape(
        self.source.config, self.micro_batch_size * opts.max_seq_length), recorded)

  # -- what a task gives besides `build_model`, `per_example_loss` (float32 [b] tensors:
  # `loss`, optimized, and metrics, averaged for the logs), `train_dataset`, `evaluate`
  # (dev metrics including `best_metric`) and `infer` (evaluates / predicts / exports with
  # the restored model; returns results)

  def check_options(self) -> None:
    """Flag errors that need no file."""

  def read_inputs(self) -> None:
    """Reads and checks every input file."""

  def check_outputs(self) -> None:
    """Checks output targets before the output directory is claimed."""

  def run_record(self) -> runs.Settings:
    """The kind's settings (`albert_tf.runs`): besides the model, what makes a run another
    run."""
    return runs.Settings()

  def build_features(self) -> None:
    """Builds or reuses the cached features."""

  def can_evaluate(self) -> bool:
    return True

  def train_steps(self) -> int:
    return self.opts.train_step

  def warmup_steps(self) -> int:
    return self.opts.warmup_step

  def keep_checkpoint_max(self) -> int:
    return self.opts.keep_checkpoint_max

  @property
  def micro_batch_size(self) -> int:
    """What the training data is batched by: an update's examples over its micro-batches."""
    return self.opts.train_batch_size // self.opts.gradient_accumulation_steps

  def needs_inference(self) -> bool:
    return self.opts.do_predict or getattr(self.opts, "do_eval", False)

  # -- the Trainer's view of the task

  def step_metrics(self, model, batch, training, global_batch, totals=None):
    del totals   # losses per example need no update-wide count
    return mean_per_example(self.per_example_loss(model, batch, training), global_batch)

  def summarize(self, sums, steps: int, global_batch: int) -> Dict[str, float]:
    return summarize_per_example(sums, steps, global_batch)

  # -- the run

  def run(self) -> Dict[str, Dict[str, float]]:
    """Trains (if --do_train), then restores the best weights and infers."""
    results = {}
    if self.opts.do_train:
      results["train"] = self.train()
    if not self.needs_inference():
      return results
    set_precision(self.opts.dtype)
    # The trained model itself when this run trained: the best weights are read into it,
    # and the functions traced for its evaluations during training are reused (a new
    # model traced them all again: a tenth of a short run's time).
    model = self._trained_model
    if model is None:
      with self.strategy.scope():
        model = self.build_model()
    weights = self.restore_for_inference(model)
    print(f"Evaluating / predicting with {weights}")
    results.update(self.infer(model, weights))
    return results

  def not_learned(self, what: Optional[str], results: Dict[str, object]) -> None:
    """Adds the "did not learn" line to `results` (an eval_results.txt's) when `what` says
    what showed it (the command prints it last)."""
    if what:
      results[DID_NOT_LEARN] = not_learned_line(what, self.opts.learning_rate,
                                                getattr(self.opts, "train_step", None))

  def train(self) -> Dict[str, float]:
    opts = self.opts
    steps = self.train_steps()
    trainer_opts = TrainerOptions(
        output_dir=opts.output_dir, train_steps=steps, warmup_steps=self.warmup_steps(),
        learning_rate=opts.learning_rate, optimizer=opts.optimizer,
        train_batch_size=opts.train_batch_size,
        save_checkpoints_steps=opts.save_checkpoints_steps,
        keep_checkpoint_max=self.keep_checkpoint_max(), dtype=opts.dtype, seed=opts.seed,
        log_steps=opts.log_steps, progress=opts.progress, jit_compile=opts.jit_compile,
        description="fine-tuning", gradient_accumulation_steps=opts.gradient_accumulation_steps)
    tf.random.set_seed(opts.seed)  # the shuffle order depends on the global seed too
    trainer = Trainer(trainer_opts, self.strategy, self, self.train_dataset(),
                      evaluate_fn=self.evaluate if self.can_evaluate() else None,
                      best_metric=self.best_metric, initialize=self.source.initialize,
                      on_best=functools.partial(runs.write_best_trial, opts.output_dir))
    result = trainer.train()
    self._trained_model = trainer.model
    best = trainer.best()
    if best:
      print(f"Best dev {self.best_metric} {best[1]:.4f} at step {best[0]}: "
            f"{os.path.join(opts.output_dir, BEST_PREFIX)}")
    return result

  def best_step(self) -> Optional[int]:
    """The step of model.ckpt-best, or None before any."""
    return runs.best_step(self.opts.output_dir)

  def restore_for_inference(self, model) -> str:
    """Loads model.ckpt-best of the output dir, else its latest checkpoint, else the
    source's initial weights; returns what was loaded."""
    prefix = runs.checkpoint_of(self.opts.output_dir)
    if prefix:
      with reading_checkpoint(prefix):
        tf.train.Checkpoint(**model.checkpoint_items).read(prefix).expect_partial()
      return prefix
    self.source.initialize(model)
    return self.source.init_checkpoint or self.source.hub_handle or "random initialization"

  def check_export_dir(self) -> None:
    """--export_dir must be new, empty, or an export of this --output_dir (replaced)."""
    export_dir = self.opts.export_dir
    if export_dir and os.path.exists(export_dir) and os.listdir(export_dir) \
        and (export_record(export_dir) or {}).get("output_dir") != os.path.abspath(
            self.opts.output_dir):
      raise FileExistsError(f"--export_dir={export_dir} exists and is not empty (and is not an "
                            f"export of --output_dir={self.opts.output_dir})")

  def export_once(self, weights: str, kind: str, settings: tuple, write) -> None:
    """Calls `write(overwrite=..., record=...)` to export `weights` to --export_dir, unless it
    already holds their export with the same `settings` (`runs.made_once`, the cache of
    everything made from a run); an export of other weights of this run is replaced."""
    opts = self.opts
    record = dict(output_dir=os.path.abspath(opts.output_dir), weights=weights,
                  fingerprint=runs.weights_fingerprint(weights, *settings))

    def export(path):
      write(overwrite=os.path.isdir(path) and bool(os.listdir(path)), record=record)
      print(f"Exported the end-to-end {kind} SavedModel to {path}")

    runs.made_once(opts.output_dir, os.path.abspath(opts.export_dir), weights, export, kind,
                   *settings)

  def predict(self, model, data: tf.data.Dataset, inputs: Optional[List[str]] = None):
    """Yields (batch, outputs as NumPy) over `data`, with one traced function per model."""
    if id(model) not in self._predict_fns:
      random_generators(model)   # made now: one made in the first trace traces it twice
      keys = inputs
      # One trace of unknown sizes, made first, serves every batch shape (a last partial
      # batch, each bucket width): reduce_retracing calls it for any shape it covers,
      # where a trace per shape cost a run two or three (~0.2 s each for a tiny model).
      self._predict_fns[id(model)] = tf.function(
          lambda batch: model(batch if keys is None else {k: batch[k] for k in keys},
                              training=False), autograph=False, reduce_retracing=True)
      self._predict_fns[id(model)].get_concrete_function(any_size(data.element_spec))
    predict = self._predict_fns[id(model)]
    for batch in data:
      outputs = predict(batch)
      yield batch, tf.nest.map_structure(lambda t: t.numpy(), outputs)

  def predict_logits(self, model, data: tf.data.Dataset) -> np.ndarray:
    """The model's outputs [N, ...] over `data`, in order."""
    return np.concatenate([out for _, out in self.predict(model, data)], axis=0)
