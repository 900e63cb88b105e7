"""Using the scripts: numbers out of range are refused before anything is written, an
error is one message (no flag listing), and long work in a log file writes lines."""

import dataclasses
import io
import math
import pathlib
import subprocess
import sys
import time
import typing

import pytest

from albert_tf import progress as progress_lib
from albert_tf.cli import describe_bounds
from albert_tf.commands.create_pretraining_data import CreationOptions
from albert_tf.commands.export_tf_hub import ExportOptions
from albert_tf.tasks.classification import ClassifierOptions
from albert_tf.tasks.multiple_choice import RaceOptions
from albert_tf.tasks.pretraining import PretrainingOptions
from albert_tf.tasks.question_answering import SquadOptions
from albert_tf.commands.create_vocab import VocabOptions

ROOT = pathlib.Path(__file__).resolve().parents[1]
OPTIONS = [ClassifierOptions, SquadOptions, RaceOptions, PretrainingOptions, CreationOptions,
           VocabOptions, ExportOptions]


def _required(options_type):
  return {f.name: "x" for f in dataclasses.fields(options_type)
          if f.default is dataclasses.MISSING}


def _bad_values(field, kind):
  at_least, above, at_most, below = field.metadata["bounds"]
  bad = []
  if at_least is not None:
    bad.append(at_least - 1 if kind is int else at_least - 0.5)
  if above is not None:
    bad.append(above)
  if at_most is not None:
    bad.append(at_most + 1)
  if below is not None:
    bad.append(below)
  if kind is float:
    bad += [math.nan, math.inf]
  return bad


@pytest.mark.parametrize("options_type", OPTIONS, ids=lambda t: t.__name__)
def test_every_bounded_flag_refuses_values_out_of_range(options_type):
  hints = typing.get_type_hints(options_type)
  required = _required(options_type)
  options_type(**required)  # the defaults are in range
  bounded = [f for f in dataclasses.fields(options_type) if f.metadata.get("bounds")]
  assert bounded
  for field in bounded:
    for value in _bad_values(field, hints[field.name]):
      with pytest.raises(ValueError) as error:
        options_type(**required, **{field.name: value})
      assert str(error.value) == \
          f"--{field.name}={value}: must be {describe_bounds(field.metadata['bounds'])}"


def test_the_issue_s_flags_are_all_bounded():
  names = {f.name for t in OPTIONS for f in dataclasses.fields(t) if f.metadata.get("bounds")}
  assert {"learning_rate", "train_batch_size", "eval_batch_size", "predict_batch_size",
          "log_steps", "save_checkpoints_steps", "keep_checkpoint_max", "dropout_prob",
          "max_seq_length", "num_keep_checkpoint"} <= names
  with pytest.raises(ValueError, match="--warmup_step=11 exceeds --train_step=10"):
    ClassifierOptions(**_required(ClassifierOptions), train_step=10, warmup_step=11)
  with pytest.raises(ValueError, match="--num_warmup_steps=11 exceeds --num_train_steps=10"):
    PretrainingOptions(**_required(PretrainingOptions), num_train_steps=10, num_warmup_steps=11)


def test_a_usage_error_is_one_message_and_writes_nothing(tmp_path):
  out = tmp_path / "out"
  done = subprocess.run(
      [sys.executable, str(ROOT / "run_classifier.py"), f"--output_dir={out}",
       f"--data_dir={tmp_path}", "--task_name=MRPC", "--do_train", "--learning_rate=nan",
       "--eval_batch_size=0"], capture_output=True, text=True, timeout=300)
  assert done.returncode == 1
  lines = [l for l in done.stderr.splitlines() if not l.startswith(("20", "WARNING", "I0000",
                                                                     "E0000", "To enable"))]
  assert lines == ["run_classifier.py: error: --learning_rate=nan: must be at least 0; "
                   "--eval_batch_size=0: must be at least 1",
                   "(--helpfull lists every flag)"], done.stderr
  assert not out.exists() and "Fine-tunes ALBERT" not in done.stdout + done.stderr


def test_progress_in_a_log_file_is_a_line_per_tenth(monkeypatch):
  err = io.StringIO()
  monkeypatch.setattr(sys, "stderr", err)
  bar = progress_lib.progress_bar(total=200, desc="training", unit="step", initial=40)
  for _ in range(160):
    bar.update(1)
    bar.set_postfix({"loss": "0.123"})
  bar.close()
  lines = err.getvalue().splitlines()
  assert [l.split(":")[1].split("%")[0].strip() for l in lines] == \
      ["30", "40", "50", "60", "70", "80", "90", "100"]
  assert lines[-1].startswith("training: 100% (200/200 step, ") and lines[-1].endswith(
      "loss=0.123")
  assert "\r" not in err.getvalue()
  assert list(progress_lib.progress_bar(range(7), desc="features")) == list(range(7))


def test_files_that_are_not_utf8_or_mistyped_are_named_with_their_place(tmp_path):
  from albert_tf import AlbertConfig  # pylint: disable=import-outside-toplevel
  from albert_tf.data import glue, race, squad  # pylint: disable=import-outside-toplevel
  (tmp_path / "MRPC").mkdir()
  (tmp_path / "MRPC" / "train.tsv").write_bytes(
      b"Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\tok\tfine\n1\t3\t4\tbad \xff here\tx\n")
  with pytest.raises(ValueError, match=r"MRPC/train.tsv:3:11: not UTF-8 \(byte 0xff\)"):
    glue.read_examples(str(tmp_path / "MRPC"), glue.get_task("mrpc"), "train")
  (tmp_path / "dev.json").write_bytes(b'{"version": "1.1",\n "data": [{"title": "\xe9"}]}')
  with pytest.raises(ValueError, match=r"dev.json:2:22: not UTF-8 \(byte 0xe9\)"):
    squad.read_squad_examples(str(tmp_path / "dev.json"), False, False)
  (tmp_path / "RACE" / "dev" / "middle").mkdir(parents=True)
  (tmp_path / "RACE" / "dev" / "middle" / "1.txt").write_bytes(b'{"article": "caf\xe9"}')
  with pytest.raises(ValueError, match=r"middle/1.txt:1:17: not UTF-8"):
    race.read_examples(str(tmp_path), "dev", ("middle",))
  (tmp_path / "albert_config.json").write_text('{"vocab_size": 30, "initializer_range": "0.02"}')
  with pytest.raises(ValueError, match=r"albert_config.json: AlbertConfig.initializer_range must "
                                       r"be a number, got '0.02'"):
    AlbertConfig.from_json_file(str(tmp_path / "albert_config.json"))


def test_mixed_precision_with_a_tf_hub_encoder_is_refused_not_ignored():
  with pytest.raises(ValueError, match="--dtype=bfloat16 cannot apply to "
                                       "--albert_hub_module_handle"):
    ClassifierOptions(**_required(ClassifierOptions), albert_hub_module_handle="hub/albert_base",
                      dtype="bfloat16")


def test_the_dtype_probe_decides_auto_and_the_bfloat16_hint(monkeypatch, capsys):
  """--dtype=auto takes bfloat16 only where the probe measures its matmuls clearly faster
  (the figures stubbed both ways: an AMD EPYC's and an Intel Xeon's without AMX), keeps a
  recorded choice without measuring, and an explicit bfloat16 that the probe finds slower
  prints one hint line; float32 measures nothing."""
  from albert_tf.modeling import precision  # pylint: disable=import-outside-toplevel
  shape = (1024, 768, 3072)
  faster = precision.ProbeResult(shape, {"float32": 262.0, "bfloat16": 1419.0})
  slower = precision.ProbeResult(shape, {"float32": 262.0, "bfloat16": 154.0})
  barely = precision.ProbeResult(shape, {"float32": 262.0, "bfloat16": 280.0})
  calls = []

  def stub(result):
    return lambda s: calls.append(s) or result

  for probe, want in ((faster, "bfloat16"), (slower, "float32"), (barely, "float32")):
    monkeypatch.setattr(precision, "PROBE", stub(probe))
    assert precision.resolve("auto", shape) == want
    out = capsys.readouterr().out
    assert f"--dtype=auto: {want} (matmul [1024, 768] x [768, 3072]: bfloat16 " in out, out
  assert calls == [shape] * 3
  monkeypatch.setattr(precision, "PROBE", stub(slower))
  assert precision.resolve("bfloat16", shape) == "bfloat16"
  err = capsys.readouterr().err
  assert err.count("\n") == 1 and "hint: bfloat16 runs slower than float32" in err, err
  monkeypatch.setattr(precision, "PROBE", stub(faster))
  assert precision.resolve("bfloat16", shape) == "bfloat16"
  assert capsys.readouterr().err == ""

  def no_probe(s):
    raise AssertionError("measured")

  monkeypatch.setattr(precision, "PROBE", no_probe)
  assert precision.resolve("float32", shape) == "float32"
  assert precision.resolve("auto", shape, recorded="bfloat16") == "bfloat16"
  assert "as this run chose when it started" in capsys.readouterr().out
  with pytest.raises(ValueError, match="--dtype must be one of float32, bfloat16, float16, auto"):
    precision.resolve("bf16", shape)


def test_the_dtype_probe_measures_both_dtypes_in_about_a_second():
  from albert_tf.modeling import precision  # pylint: disable=import-outside-toplevel
  started = time.perf_counter()
  result = precision.measure((256, 64, 256), seconds=0.4)
  assert time.perf_counter() - started < 10
  assert set(result.rates) == {"float32", "bfloat16"} and min(result.rates.values()) > 0.01
  assert result.choice() in ("float32", "bfloat16") and result.speedup > 0
