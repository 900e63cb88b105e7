"""A command prints its own lines: no TensorFlow C++ start-up line, no absl line, unless the
user asks (--verbosity, TF_CPP_MIN_LOG_LEVEL); the INFO lines are in <output_dir>/log.txt;
a TensorFlow error that stops a command is one line with its cause.

The scripts run as processes of their own (TensorFlow's start-up lines are printed when it
is imported), in an environment without the TF_CPP_MIN_LOG_LEVEL the test run sets.
"""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
CPP = re.compile(r"^\d{4}-\d\d-\d\d .*: [IWE] ", re.M)     # TensorFlow's C++ log format
ABSL = re.compile(r"^[IWE]\d{4} ", re.M)                   # absl's (Python's and C++'s)
PYLOG = re.compile(r"^(DEBUG|INFO|WARNING|ERROR):[\w.]+:", re.M)  # Python logging's default


def _script(*args, **env):
  environment = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
  environment.update(env)
  done = subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True,
                        env=environment, cwd=ROOT, timeout=300, check=False)
  return done, done.stdout + done.stderr


@pytest.fixture(scope="module")
def model(tmp_path_factory, spm_model):
  import tf_keras as keras  # pylint: disable=import-outside-toplevel
  from albert_tf import AlbertConfig, AlbertPretrainer, save_original_checkpoint  # pylint: disable=import-outside-toplevel
  from test_glue import CFG  # pylint: disable=import-outside-toplevel
  root = tmp_path_factory.mktemp("console_model")
  keras.utils.set_random_seed(0)
  AlbertConfig.from_dict(dict(CFG, num_hidden_layers=1)).to_json_file(
      str(root / "albert_config.json"))
  init = save_original_checkpoint(AlbertPretrainer(dict(CFG, num_hidden_layers=1)),
                                  str(root / "model.ckpt"))
  return dict(config=root / "albert_config.json", init=init, spm=spm_model)


@pytest.mark.slow
def test_a_run_and_predict_print_their_own_lines_and_log_the_rest(model, tmp_path):
  rows = [dict(text=f"text number {i} is {'good' if i % 2 else 'bad'}",
               label="good" if i % 2 else "bad") for i in range(64)]
  data = tmp_path / "rows.jsonl"
  data.write_text("".join(json.dumps(r) + "\n" for r in rows))
  run = tmp_path / "run"
  done, out = _script("run_classifier.py", f"--train_file={data}", f"--dev_file={data}",
                      f"--output_dir={run}", f"--albert_config_file={model['config']}",
                      f"--init_checkpoint={model['init']}", f"--spm_model_file={model['spm']}",
                      "--do_train", "--do_eval", "--train_step=2", "--save_checkpoints_steps=2",
                      "--max_seq_length=16", "--train_batch_size=8",
                      f"--export_dir={tmp_path / 'serving'}")    # (TensorFlow logs a save)
  assert done.returncode == 0, out[-3000:]
  assert not CPP.search(out) and not ABSL.search(out) and not PYLOG.search(out), out
  assert "step 2 dev: accuracy" in out and "Best dev accuracy" in out and "eval: " in out
  log = (run / "log.txt").read_text(encoding="utf-8")
  assert re.search(r"^I\d{4} .*Wrote 64 train features", log, re.M), log[:2000]
  assert re.search(r"^I\d{4} .*Assets written to", log, re.M), log[:2000]

  answers = tmp_path / "answers.jsonl"
  done, out = _script("predict.py", f"--model={run}", f"--input_file={data}",
                      f"--output_file={answers}")
  assert done.returncode == 0, out[-3000:]
  assert not CPP.search(out) and not ABSL.search(out), out
  assert "Wrote 64 answers" in out and len(answers.read_text().splitlines()) == 64

  # Asked for, the lines come back (TF_CPP_MIN_LOG_LEVEL set, below: the same rule); a
  # refusal is still its one line.
  done, out = _script("predict.py", f"--model={run}", f"--input_file={data}",
                      f"--output_file={answers}", "--verbosity=1")
  assert done.returncode == 1 and CPP.search(out), out[-2000:]
  assert f"--output_file={answers} exists; nothing was written" in done.stderr


def test_the_user_asks_for_the_logs_by_verbosity_or_tensorflow_s_variable(monkeypatch):
  from albert_tf import console  # pylint: disable=import-outside-toplevel
  monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
  assert not console.asks_for_logs(["predict.py", "--model=m", "--noprogress"])
  for flags in (["--verbosity=1"], ["--verbosity", "1"], ["-v=1"], ["-v", "0"]):
    assert console.asks_for_logs(["predict.py", *flags]), flags
  monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
  assert console.asks_for_logs(["predict.py"])


def test_the_hidden_lines_are_the_libraries_own_formats_and_no_other():
  """What the console filters out of fd 2 (into log.txt): TensorFlow's C++ lines, absl's,
  TFLite's INFO (as `make demo`'s on-device step printed it); a TFLite error, Python
  logging's default format (kept out by other means) and a command's lines stay."""
  from albert_tf import console  # pylint: disable=import-outside-toplevel
  hidden = ["2026-12-06 04:33:21.123916: E external/local_xla/xla/stream_executor/cuda/"
            "cuda_platform.cc:51] failed call to cuInit", "I0000 00:00:1796531091.290004    "
            "2980 devices.cc:67] Number of eligible GPUs",
            "INFO: Created TensorFlow Lite XNNPACK delegate for CPU."]
  shown = ["ERROR: tensors 3 and 4 do not match", "predict.py: error: --model=x not found",
           "Wrote 400 answers to a.jsonl (1430.0 rows/s)", "INFO:tensorflow:Assets written"]
  assert all(console.CPP_LOG.match(line) for line in hidden)
  assert not any(console.CPP_LOG.match(line) for line in shown)


def test_a_tensorflow_error_that_stops_a_command_is_one_line_with_its_cause(
    monkeypatch, capsys, tmp_path):
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  from albert_tf import cli, console  # pylint: disable=import-outside-toplevel
  monkeypatch.setitem(console._state, "quiet", True)  # pylint: disable=protected-access
  monkeypatch.setitem(console._state, "path", str(tmp_path / "log.txt"))  # pylint: disable=protected-access
  monkeypatch.setattr(console, "keep_logs", lambda: None)
  monkeypatch.setattr(cli, "options_from_flags", lambda *a, **k: None)

  def run(_):
    raise tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor with "
                                           "shape[64,12,512,512]\n\tan op's many lines")
  with pytest.raises(SystemExit) as stopped:
    cli.run_with_flags(["prog"], object, run)
  assert stopped.value.code == 1
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and re.fullmatch(
      r".*: error: ResourceExhaustedError: OOM when allocating tensor with "
      r"shape\[64,12,512,512\] \(the traceback: .*log.txt\)", err[0]), err
