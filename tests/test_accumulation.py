"""Gradient accumulation: N micro-batches make exactly the update of one N-times larger batch.

The gradient itself is compared (AdamW and LAMB hide a wrong scale in the weights),
then the losses and weights of whole runs: one device with length bucketing, two
replicas with --recompute, bfloat16. Pretraining's (whose masked-LM loss is averaged
over the whole update's masked tokens) is in test_pretraining.py.
"""

import csv
import os

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertConfig, AlbertPretrainer, save_original_checkpoint
from albert_tf.tasks import classification as classifier
from albert_tf.training import trainer as trainer_lib
from test_glue import CFG, SEQ, write_keyword_task


@pytest.fixture(scope="module")
def files(tmp_path_factory, spm_model):
  root = tmp_path_factory.mktemp("accumulation")
  AlbertConfig.from_dict(CFG).to_json_file(str(root / "albert_config.json"))
  init = save_original_checkpoint(AlbertPretrainer(CFG), str(root / "init" / "model.ckpt-best"))
  data = write_keyword_task(str(root / "MRPC"), sizes=(("train", 200), ("dev", 40)))
  return dict(config=str(root / "albert_config.json"), init=init, spm=spm_model, data=data)


def options(files, output_dir, **kwargs):
  base = dict(data_dir=files["data"], output_dir=str(output_dir), task_name="MRPC",
              albert_config_file=files["config"], init_checkpoint=files["init"],
              spm_model_file=files["spm"], max_seq_length=SEQ, train_batch_size=16,
              learning_rate=2e-3, train_step=3, warmup_step=1, save_checkpoints_steps=3,
              log_steps=1, progress=False, do_train=True, dropout_prob=0.0)
  base.update(kwargs)
  return classifier.ClassifierOptions(**base)


def _losses(output_dir):
  with open(os.path.join(output_dir, "train_log.csv")) as f:
    return [float(r["loss"]) for r in csv.DictReader(f)]


def _weights(output_dir, step):
  reader = tf.train.load_checkpoint(os.path.join(output_dir, f"ckpt-{step}"))
  return {k: reader.get_tensor(k) for k in sorted(reader.get_variable_to_shape_map())
          if k.startswith(("encoder/", "classifier/")) and "OPTIMIZER_SLOT" not in k}


def _pad_to(batch, width):
  """A batch's token axis padded (with zeros: padding) to `width`."""
  return {k: tf.pad(v, [[0, 0], [0, width - v.shape[1]]]) if v.shape.rank == 2 and
          k != "label_ids" else v for k, v in batch.items()}


@pytest.mark.parametrize("strategy", ["one_device", "mirrored"])
def test_the_accumulated_gradient_is_the_large_batch_gradient(files, tmp_path, strategy):
  """Micro-batches (of one example on one device, two on two replicas: each cut to its own
  bucket length) leave in the buffers the gradient of the 16 examples as one batch, loss
  averaged over the 16."""
  steps = 16 if strategy == "one_device" else 8
  opts = options(files, tmp_path / "out", gradient_accumulation_steps=steps,
                 distribution_strategy=strategy)
  task = classifier.ClassifierRun(opts)
  trainer = trainer_lib.Trainer(
      trainer_lib.TrainerOptions(output_dir=opts.output_dir, train_steps=3, learning_rate=1e-3,
                                 train_batch_size=16, gradient_accumulation_steps=steps),
      task.strategy, task, task.train_dataset())
  micro = [trainer._next_batch() for _ in range(steps)]  # pylint: disable=protected-access
  widths = [int(b["input_word_ids"].shape[1]) for b in micro]
  for batch in micro:
    trainer._micro_step(trainer_lib.distribute_global_batch(  # pylint: disable=protected-access
        task.strategy, batch, 16 // steps), {})
  got = [b.read_value().numpy() for b in trainer._buffers]  # pylint: disable=protected-access
  width = max(widths)
  large = {k: tf.concat([_pad_to(b, width)[k] for b in micro], 0) for k in micro[0]}
  model = trainer.model
  with tf.GradientTape() as tape:
    loss, _ = task.step_metrics(model, large, True, 16)
  want = tape.gradient(loss, model.trainable_variables)
  assert len(set(widths)) > 1   # the micro-batches were cut to their own lengths
  compared = 0
  for g, w, v in zip(got, want, model.trainable_variables):
    if w is None:
      assert not np.any(g), v.name    # variables the loss does not reach get nothing
      continue
    w = tf.convert_to_tensor(w).numpy()
    np.testing.assert_allclose(g, w, atol=1e-6 + 1e-4 * np.abs(w).max(), err_msg=v.name)
    compared += 1
  assert compared == len(model.trainable_variables) and np.abs(got[0]).max() > 0


@pytest.mark.slow
@pytest.mark.parametrize("setting,steps,atol", [
    ("bucketing", 16, 1e-5),                # one device; micro-batches of 1, each bucketed
    ("mirrored_recompute", 2, 1e-5),        # two replicas, --recompute; micro-batches of 8
    ("bfloat16", 4, 3e-3),
])
def test_accumulated_runs_equal_the_large_batch(files, tmp_path, setting, steps, atol):
  extra = dict(mirrored_recompute=dict(distribution_strategy="mirrored", recompute=True),
               bfloat16=dict(dtype="bfloat16")).get(setting, {})
  classifier.run(options(files, tmp_path / "large", **extra))
  classifier.run(options(files, tmp_path / "micro", gradient_accumulation_steps=steps, **extra))
  np.testing.assert_allclose(_losses(tmp_path / "micro"), _losses(tmp_path / "large"),
                             atol=atol, rtol=0)
  large, micro = _weights(tmp_path / "large", 3), _weights(tmp_path / "micro", 3)
  assert sorted(large) == sorted(micro) and len(large) > 10
  worst = max(float(np.abs(large[k] - micro[k]).max()) for k in large)
  print(f"{setting}: largest weight difference {worst:.2g}")
  assert worst <= atol


def test_the_accumulation_flag_is_checked(files, tmp_path):
  with pytest.raises(ValueError, match=r"--train_batch_size=16 is not divisible by "
                                       r"--gradient_accumulation_steps=3"):
    options(files, tmp_path / "out", gradient_accumulation_steps=3)
  with pytest.raises(ValueError, match=r"--gradient_accumulation_steps=0"):
    options(files, tmp_path / "out", gradient_accumulation_steps=0)
  with pytest.raises(ValueError, match=r"--train_batch_size / --gradient_accumulation_steps=3 "
                                       r"is not divisible by the 2 replicas"):
    classifier.run(options(files, tmp_path / "odd", train_batch_size=12,
                           gradient_accumulation_steps=4, distribution_strategy="mirrored"))
  assert not os.path.exists(tmp_path / "odd" / "ckpt-3.index")
