"""run_ner.py stopped and run again: a crash in a step, and SIGTERM to the script itself,
resume to the weights of a run never stopped (the data and flags are test_ner.py's)."""

import dataclasses
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.tasks import token_classification as ner_task
from test_ner import files, options  # pylint: disable=unused-import  (a fixture)
from common import assert_close

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_a_crashed_run_resumes_to_the_uninterrupted_weights(files, tmp_path, monkeypatch):
  """Crashed in step 5 (checkpoints at 2 and 4): the rerun of the same command redoes step
  5 and ends at the weights of the run that was never interrupted, with token-level loss
  and bucketed batches (the training data's position is in the checkpoint)."""
  from albert_tf.training import trainer  # pylint: disable=import-outside-toplevel
  flags = dict(train_step=6, warmup_step=0, save_checkpoints_steps=2, do_eval=False,
               do_predict=False, dropout_prob=0.1)
  ner_task.run(options(files, tmp_path / "straight", **flags))
  original, calls = trainer.distribute_global_batch, []

  def crashing(*args):
    calls.append(1)
    if len(calls) == 5:
      raise KeyboardInterrupt("simulated crash")
    return original(*args)

  with monkeypatch.context() as m:
    m.setattr(trainer, "distribute_global_batch", crashing)
    with pytest.raises(KeyboardInterrupt):
      ner_task.run(options(files, tmp_path / "crashed", **flags))
  assert tf.train.latest_checkpoint(str(tmp_path / "crashed")).endswith("ckpt-4")
  resumed = []
  with monkeypatch.context() as m:
    m.setattr(trainer, "distribute_global_batch",
              lambda *args: resumed.append(1) or original(*args))
    ner_task.run(options(files, tmp_path / "crashed", **flags))
  assert len(resumed) == 2   # steps 5 and 6 only: it went on from checkpoint 4

  def weights(directory):
    run = ner_task.NerRun(options(files, directory, do_train=False, do_eval=True,
                                  do_predict=False))
    model = run.build_model()
    latest = tf.train.latest_checkpoint(str(directory))
    assert latest.endswith("ckpt-6")
    tf.train.Checkpoint(**model.checkpoint_items).read(latest).expect_partial()
    return [w.numpy() for w in model.weights]

  for a, b in zip(weights(tmp_path / "straight"), weights(tmp_path / "crashed")):
    assert_close(a, b, 1e-6)


def test_run_ner_py_stopped_by_sigterm_saves_that_step_and_the_rerun_ends_at_the_same_weights(
    files, tmp_path):
  """The script itself, as a scheduler stops it: SIGTERM at a step that is no checkpoint
  step saves that step, releases the lock, says so in one line and exits with 75; the
  same command again trains the rest and ends within 1e-6 of a run never stopped."""
  from albert_tf.training import trainer  # pylint: disable=import-outside-toplevel
  flags = dict(train_step=60, warmup_step=0, save_checkpoints_steps=50, do_eval=False,
               do_predict=False, dropout_prob=0.1, log_steps=1)
  stopped = tmp_path / "stopped"
  argv = [f"--{k}={v}" for k, v in dataclasses.asdict(options(files, stopped, **flags)).items()
          if v is not None]
  process = subprocess.Popen([sys.executable, str(ROOT / "run_ner.py")] + argv,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
  deadline = time.time() + 300
  while time.time() < deadline and process.poll() is None:
    rows = trainer.read_csv(str(stopped / "train_log.csv"))
    if rows and int(rows[-1]["step"]) >= 3:
      break
    time.sleep(0.02)
  assert process.poll() is None, process.stderr.read()[-3000:]
  process.send_signal(signal.SIGTERM)
  stderr = process.communicate(timeout=300)[1]
  step = int(trainer.read_csv(str(stopped / "train_log.csv"))[-1]["step"])
  assert 3 <= step < 50, step
  assert process.returncode == trainer.STOPPED_EXIT_CODE == 75, stderr[-3000:]
  assert stderr.strip().splitlines()[-1] == (
      f"run_ner.py: stopped by SIGTERM at step {step}; rerun the same command to continue")
  assert tf.train.latest_checkpoint(str(stopped)).endswith(f"/ckpt-{step}")
  assert not (stopped / ".albert_tf.lock").exists()

  ner_task.run(options(files, stopped, **flags))
  ner_task.run(options(files, tmp_path / "straight", **flags))
  assert [r["step"] for r in trainer.read_csv(str(stopped / "train_log.csv"))] == \
      [str(s) for s in range(1, 61)]   # each step logged once
  a = tf.train.load_checkpoint(str(tmp_path / "straight" / "ckpt-60"))
  b = tf.train.load_checkpoint(str(stopped / "ckpt-60"))
  keys = [k for k in a.get_variable_to_shape_map() if k.startswith(("encoder", "classifier"))]
  assert keys
  for key in keys:
    assert_close(a.get_tensor(key), b.get_tensor(key), 1e-6, err_msg=key)
