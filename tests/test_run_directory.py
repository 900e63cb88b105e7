"""The output directory: one run at a time (a lock), and a resumed run with the flags it
was trained with (run_config.json)."""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from albert_tf import files
from albert_tf.cli import option
from albert_tf.tasks import base


def _hold_lock(directory):
  """A separate process that takes the lock on `directory` and sleeps."""
  code = ("import sys, time; from albert_tf import files; files.lock_directory(sys.argv[1]); "
          "print('locked', flush=True); time.sleep(600)")
  process = subprocess.Popen([sys.executable, "-c", code, str(directory)],
                             stdout=subprocess.PIPE, text=True)
  assert process.stdout.readline().strip() == "locked"
  return process


def test_a_live_owner_keeps_the_lock_and_a_dead_one_loses_it(tmp_path, capsys):
  owner = _hold_lock(tmp_path / "run")
  try:
    with pytest.raises(FileExistsError, match=rf"--output_dir=.*run is in use by process "
                                              rf"{owner.pid} \(still running"):
      files.lock_directory(str(tmp_path / "run"))
  finally:
    owner.send_signal(signal.SIGKILL)
    owner.wait()
  path = files.lock_directory(str(tmp_path / "run"))
  assert f"its process {owner.pid} no longer runs" in capsys.readouterr().out
  with open(path) as f:
    assert json.load(f)["pid"] == os.getpid()
  assert files.lock_directory(str(tmp_path / "run")) == path    # this process again: no-op
  files.unlock_directory(str(tmp_path / "run"))
  assert not os.path.exists(path)


def test_a_lock_of_another_host_is_never_taken_over(tmp_path):
  (tmp_path / files.LOCK_NAME).write_text(json.dumps(dict(pid=1, host="elsewhere-42")))
  with pytest.raises(FileExistsError, match="in use by process 1 on host elsewhere-42"):
    files.lock_directory(str(tmp_path))


@dataclasses.dataclass(kw_only=True)
class _Options:
  output_dir: str = option(help="out")
  do_train: bool = option(True)
  learning_rate: float = option(1e-3, training="fixed")
  seed: int = option(1, training="fixed")
  train_step: int = option(10, training="may grow")
  predict_batch_size: int = option(8)


def _fake_checkpoint(directory):
  (directory / "ckpt-10.index").write_text("")
  (directory / "checkpoint").write_text('model_checkpoint_path: "ckpt-10"\n')


def test_resuming_refuses_changed_training_flags_but_lets_the_steps_grow(tmp_path):
  out = tmp_path / "run"
  record = dict(task="demo", model={"hidden_size": 8})
  base.claim_output_dir(str(out), record, opts=_Options(output_dir=str(out)))
  with open(out / "run_config.json") as f:
    assert json.load(f)["training"] == dict(learning_rate=1e-3, seed=1, train_step=10)
  _fake_checkpoint(out)
  # Flags that do not shape training, and predicting, may change.
  base.claim_output_dir(str(out), record, opts=_Options(output_dir=str(out), predict_batch_size=4))
  base.claim_output_dir(str(out), record, opts=_Options(output_dir=str(out), do_train=False,
                                                        learning_rate=5.0))
  with pytest.raises(ValueError, match=r"trained with other flags: --learning_rate=0.001 then, "
                                       r"--learning_rate=0.002 now; --seed=1 then, --seed=2 now\. "
                                       r"Resume with the same flags \(--train_step may grow\)"):
    base.claim_output_dir(str(out), record, opts=_Options(output_dir=str(out), learning_rate=2e-3,
                                                          seed=2))
  with pytest.raises(ValueError, match="--train_step=10 then, --train_step=5 now"):
    base.claim_output_dir(str(out), record, opts=_Options(output_dir=str(out), train_step=5))
  base.claim_output_dir(str(out), record, opts=_Options(output_dir=str(out), train_step=30))
  with open(out / "run_config.json") as f:
    assert json.load(f)["training"]["train_step"] == 30
  with pytest.raises(ValueError, match="holds another run .*differs in: model"):
    base.claim_output_dir(str(out), dict(record, model={"hidden_size": 16}),
                          opts=_Options(output_dir=str(out)))


def test_a_run_stopped_before_training_leaves_nothing_that_blocks_a_corrected_rerun(tmp_path):
  out = tmp_path / "run"
  base.claim_output_dir(str(out), dict(task="demo", model={"vocab_size": 30000}),
                        opts=_Options(output_dir=str(out)))
  (out / "mrpc_train_0123456789.tf_record").write_text("")      # cached features stay
  base.claim_output_dir(str(out), dict(task="demo", model={"vocab_size": 1500}),
                        opts=_Options(output_dir=str(out), learning_rate=0.5))
  with open(out / "run_config.json") as f:
    saved = json.load(f)
  assert saved["model"] == {"vocab_size": 1500} and saved["training"]["learning_rate"] == 0.5
  # A refused claim of a new directory leaves no directory behind.
  (tmp_path / "other").mkdir()
  (tmp_path / "other" / "notes.txt").write_text("mine")
  with pytest.raises(ValueError, match="is not empty"):
    base.claim_output_dir(str(tmp_path / "other"), {"task": "demo"})
  assert sorted(os.listdir(tmp_path / "other")) == ["notes.txt"]
