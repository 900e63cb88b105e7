"""The output directory: one run at a time (a lock), a resumed run with the flags it
was trained with (its record, `albert_tf.runs`), and writes that find the disk full."""

import dataclasses
import errno
import json
import os
import signal
import subprocess
import sys
import time
from unittest import mock

import pytest
import tensorflow as tf

from albert_tf import cli, files
from albert_tf.cli import option
from albert_tf.data import records
from albert_tf import runs
from albert_tf.training import logs
from albert_tf.training import trainer as training


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
  runs.claim(str(out), record, opts=_Options(output_dir=str(out)))
  assert runs.read_record(str(out))["training"] == dict(learning_rate=1e-3, seed=1, train_step=10)
  _fake_checkpoint(out)
  # Flags that do not shape training, and predicting, may change.
  runs.claim(str(out), record, opts=_Options(output_dir=str(out), predict_batch_size=4))
  runs.claim(str(out), record, opts=_Options(output_dir=str(out), do_train=False,
                                                        learning_rate=5.0))
  with pytest.raises(ValueError, match=r"trained with other flags: --learning_rate=0.001 then, "
                                       r"--learning_rate=0.002 now; --seed=1 then, --seed=2 now\. "
                                       r"Resume with the same flags \(--train_step may grow\)"):
    runs.claim(str(out), record, opts=_Options(output_dir=str(out), learning_rate=2e-3,
                                                          seed=2))
  with pytest.raises(ValueError, match="--train_step=10 then, --train_step=5 now"):
    runs.claim(str(out), record, opts=_Options(output_dir=str(out), train_step=5))
  runs.claim(str(out), record, opts=_Options(output_dir=str(out), train_step=30))
  assert runs.read_record(str(out))["training"]["train_step"] == 30
  with pytest.raises(ValueError, match="holds another run .*differs in: model"):
    runs.claim(str(out), dict(record, model={"hidden_size": 16}),
                          opts=_Options(output_dir=str(out)))


def test_a_run_stopped_before_training_leaves_nothing_that_blocks_a_corrected_rerun(tmp_path):
  out = tmp_path / "run"
  runs.claim(str(out), dict(task="demo", model={"vocab_size": 30000}),
                        opts=_Options(output_dir=str(out)))
  (out / "mrpc_train_0123456789.tf_record").write_text("")      # cached features stay
  runs.claim(str(out), dict(task="demo", model={"vocab_size": 1500}),
                        opts=_Options(output_dir=str(out), learning_rate=0.5))
  saved = runs.read_record(str(out))
  assert saved["model"] == {"vocab_size": 1500} and saved["training"]["learning_rate"] == 0.5
  # A refused claim of a new directory leaves no directory behind.
  (tmp_path / "other").mkdir()
  (tmp_path / "other" / "notes.txt").write_text("mine")
  with pytest.raises(ValueError, match="is not empty"):
    runs.claim(str(tmp_path / "other"), {"task": "demo"})
  assert sorted(os.listdir(tmp_path / "other")) == ["notes.txt"]


# ----------------------------------------------------------------------------- a full disk

def _no_space(*args, **kwargs):
  raise tf.errors.ResourceExhaustedError(
      None, None, "/x/part-00000.tempstate123; No space left on device [Op:SaveV2]")


def _leftovers(directory):
  """Temporaries a writer could leave: *.tmp-<pid>, .ckpt_*, .export_*, *_temp."""
  return [name for name in os.listdir(directory)
          if ".tmp-" in name or name.startswith((".ckpt_", ".export_")) or name.endswith("_temp")]


def test_a_log_row_on_a_full_device_is_one_named_error_and_no_half_row(tmp_path):
  """A real ENOSPC (/dev/full takes no byte): WriteFailed names the file and says that
  rerunning continues; a log that fails mid-row is left as it was."""
  if not os.path.exists("/dev/full"):
    pytest.skip("no /dev/full on this system")
  full = tmp_path / "train_log.csv"
  os.symlink("/dev/full", full)
  with pytest.raises(files.WriteFailed) as failure:
    logs.append_csv(str(full), 1, dict(loss=0.5))
  message = str(failure.value)
  assert message.startswith(f"cannot write {full}: No space left on device")
  assert "rerun the same command to continue" in message and "\n" not in message

  log = tmp_path / "eval_log.csv"
  logs.append_csv(str(log), 1, dict(loss=0.5))
  before = log.read_bytes()
  real_open = open

  class FullFile:   # writes that fail after part of the row went out
    def __init__(self, f):
      self.f = f
    def write(self, text):
      self.f.write(text[:3])
      self.f.flush()
      raise OSError(errno.ENOSPC, "No space left on device", str(log))
    def __enter__(self):
      return self
    def __exit__(self, *exc):
      self.f.close()

  with mock.patch("builtins.open", lambda p, mode="r", **kw: FullFile(real_open(p, mode, **kw))
                  if mode == "a" else real_open(p, mode, **kw)):
    with pytest.raises(files.WriteFailed, match="eval_log.csv: No space left on device"):
      logs.append_csv(str(log), 2, dict(loss=0.25))
  assert log.read_bytes() == before


@pytest.mark.parametrize("writer", ["checkpoint", "records", "file", "export"])
def test_every_writer_turns_a_full_disk_into_one_line_and_leaves_no_temporary(tmp_path, writer):
  """Each kind of writer (TF checkpoints, TFRecords, files, SavedModel exports) failing
  with ENOSPC: a WriteFailed naming its target, nothing beside it, what was there kept."""
  target = tmp_path / "out" / "target"
  target.parent.mkdir()
  (target.parent / "kept.txt").write_text("earlier work")
  if writer == "checkpoint":
    with mock.patch.object(tf.train.Checkpoint, "write", _no_space), \
        pytest.raises(files.WriteFailed, match=f"cannot write {target}: No space left"):
      training.write_checkpoint(dict(v=tf.Variable(1.0)), str(target))
  elif writer == "records":
    with mock.patch.object(tf.io.TFRecordWriter, "write", _no_space), \
        pytest.raises(files.WriteFailed, match=f"cannot write {target}: No space left"):
      records.write_records([dict(a=[1])], str(target))
  elif writer == "file":
    def fail(f):
      raise OSError(errno.EROFS, "Read-only file system", f.name)
    with pytest.raises(files.WriteFailed, match=r"Read-only file system; .*make it writable"):
      with files.atomic_open(str(target)) as f:
        fail(f)
  else:
    from albert_tf import AlbertPretrainer  # pylint: disable=import-outside-toplevel
    from albert_tf.export import tf_hub as export  # pylint: disable=import-outside-toplevel
    from common import TINY  # pylint: disable=import-outside-toplevel
    with mock.patch.object(tf.saved_model, "save", _no_space), \
        pytest.raises(files.WriteFailed, match=f"cannot write {target}: No space left"):
      export.export_encoder(AlbertPretrainer(TINY), str(target))
  assert sorted(os.listdir(target.parent)) == ["kept.txt"], _leftovers(target.parent)
  assert (target.parent / "kept.txt").read_text() == "earlier work"


def test_the_scripts_end_a_stop_or_a_full_disk_with_its_line_and_status(capsys):
  """cli.run_with_flags: an exception with an `exit_code` ends the program with its one
  line on stderr and that status (WriteFailed 1, Stopped 75), no traceback; another
  OSError still raises."""
  @dataclasses.dataclass
  class Options:
    pass

  for error, status in ((files.WriteFailed("/o/ckpt-3", "No space left on device", 2048), 1),
                        (training.Stopped("SIGTERM", 7), 75)):
    def run(options, error=error):
      raise error
    with pytest.raises(SystemExit) as done:
      cli.run_with_flags(["prog"], Options, run)
    assert done.value.code == status
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith(f": {error}\n"), err
  assert str(training.Stopped("SIGTERM", 7)) == (
      "stopped by SIGTERM at step 7; rerun the same command to continue")

  def broken(options):
    raise OSError(errno.EIO, "Input/output error")
  with pytest.raises(OSError):
    cli.run_with_flags(["prog"], Options, broken)
