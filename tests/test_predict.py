"""predict.py and albert_tf.Predictor: a run's answers for new text, in input order,
read through the run's owner (albert_tf.runs), each batch padded to its own longest."""

import errno
import json

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from albert_tf import AlbertClassifier, AlbertConfig, AlbertEncoder, Predictor, problems, runs
from common import assert_close, run_script, write_classifier_run

CFG = dict(vocab_size=1500, embedding_size=16, hidden_size=32, num_hidden_layers=2,
           num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
SEQ = 48
TEXTS = ["the list", "a file in a directory, not a thread",
         "the class and its method call the function of a process with a signal " * 3,
         "dict", "", "path of the file", "the thread and the process"]


def _classifier(tmp_path, name, num_classes, seed, **record):
  keras.utils.set_random_seed(seed)
  model = AlbertClassifier(AlbertEncoder(AlbertConfig.from_dict(CFG)), num_classes)
  model({k: tf.zeros([1, 4], tf.int32) for k in ("input_word_ids", "input_mask",
                                                  "input_type_ids")})
  rng = np.random.default_rng(seed)   # a head that separates the classes
  model.classifier.output_weights.assign(rng.normal(0, 2, model.classifier.output_weights.shape))
  return write_classifier_run(tmp_path / name, model, CFG, SEQ, **record)


@pytest.fixture(scope="module")
def topics_run(tmp_path_factory, spm_model):
  """A multi-label run on files of one's own (untrained weights: the answers, not the
  learning, are under test)."""
  root = tmp_path_factory.mktemp("predict")
  _classifier(root, "topics", 4, 0, task="classification", spm_model_file=spm_model,
              problem_type=problems.MULTI, labels=["code", "data", "files", "system"],
              text_columns=["text"])
  return root / "topics"


def _packed_logits(run_dir, texts):
  """The run's model on every example packed to the run's full length, one at a time."""
  from albert_tf.text.packing import pack_inputs  # pylint: disable=import-outside-toplevel
  run = runs.Run.read(str(run_dir))
  model, tokenizer = run.model(), run.tokenizer()
  out = []
  for pair in texts:
    ids = [tokenizer.encode(t) for t in ([pair] if isinstance(pair, str) else pair)]
    packed = pack_inputs(ids[0], ids[1] if len(ids) > 1 else None, SEQ, tokenizer.cls_id,
                         tokenizer.sep_id, tokenizer.pad_id)
    out.append(model({k: tf.constant([v], tf.int32) for k, v in packed.items()},
                     training=False).numpy()[0])
  return np.array(out)


def test_the_predictor_answers_in_input_order_as_the_full_length_model(topics_run):
  predictor = Predictor.load(str(topics_run), batch_size=2, dtype="float32")
  answers = predictor.predict(TEXTS)
  logits = _packed_logits(topics_run, TEXTS)
  want = 1 / (1 + np.exp(-logits))
  labels = ["code", "data", "files", "system"]
  got = np.array([[a["probabilities"][name] for name in labels] for a in answers])
  assert_close(got, want, 1e-5)        # each batch padded to its own longest: same answers
  assert [a["labels"] for a in answers] == [
      [name for name, p in zip(labels, row) if p > 0.5] for row in got]
  # Dicts by the run's text column, and one batch of everything: the same answers.
  again = Predictor.load(str(topics_run), batch_size=100, dtype="float32").predict(
      [{"text": t} for t in TEXTS])
  assert [a["labels"] for a in again] == [a["labels"] for a in answers]
  with pytest.raises(ValueError, match=r"example 1: no field 'text'; this run reads 'text'"):
    predictor.predict(["fine", {"sentence": "no"}])


def test_predict_py_writes_one_answer_per_line_with_index_and_id(topics_run, tmp_path):
  rows = [dict(id=f"n{i}", text=t) for i, t in enumerate(TEXTS)]
  source = tmp_path / "new.jsonl"
  source.write_text("".join(json.dumps(r) + "\n" for r in rows))
  out = tmp_path / "answers" / "topics.jsonl"
  done = run_script("predict.py", "--dtype=float32", f"--model={topics_run}",
                    f"--input_file={source}",
                    f"--output_file={out}", "--id_column=id", "--batch_size=3", "--noprogress",
                    "--chunk_rows=2")     # (read, answered and written 2 rows at a time)
  assert done.returncode == 0, done.stderr[-3000:]
  assert f"Wrote {len(TEXTS)} answers to {out}" in done.stdout
  answers = [json.loads(line) for line in out.read_text().splitlines()]
  assert [(a["index"], a["id"]) for a in answers] == [(i, f"n{i}") for i in range(len(TEXTS))]
  direct = Predictor.load(str(topics_run), dtype="float32").predict(TEXTS)
  assert [a["labels"] for a in answers] == [d["labels"] for d in direct]
  # .txt: one text per line; an existing output file is never overwritten.
  text = tmp_path / "new.txt"
  text.write_text("\n".join(t.replace("\n", " ") for t in TEXTS) + "\n")
  done = run_script("predict.py", "--dtype=float32", f"--model={topics_run}",
                    f"--input_file={text}",
                    f"--output_file={out}", "--noprogress")
  assert done.returncode != 0 and "--output_file=" in done.stderr and "exists" in done.stderr
  assert [json.loads(line) for line in out.read_text().splitlines()] == answers


def test_a_glue_pair_run_reads_sentence_pairs(tmp_path, spm_model):
  run_dir = _classifier(tmp_path, "mrpc", 2, 1, task="MRPC", spm_model_file=spm_model)
  pairs = [("the list", "a list"), ("a file in a directory", "the thread"), ("dict", "")]
  source = tmp_path / "pairs.tsv"
  source.write_text("sentence1\tsentence2\n" + "".join(f"{a}\t{b}\n" for a, b in pairs))
  out = tmp_path / "mrpc.jsonl"
  done = run_script("predict.py", "--dtype=float32", f"--model={run_dir}", f"--input_file={source}",
                    f"--output_file={out}", "--noprogress")
  assert done.returncode == 0, done.stderr[-3000:]
  answers = [json.loads(line) for line in out.read_text().splitlines()]
  logits = _packed_logits(run_dir, pairs)
  probabilities = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
  assert_close([[a["probabilities"][k] for k in ("0", "1")] for a in answers], probabilities,
               1e-5)
  assert [a["label"] for a in answers] == [str(i) for i in probabilities.argmax(-1)]
  text = tmp_path / "one.txt"
  text.write_text("one text\n")
  done = run_script("predict.py", "--dtype=float32", f"--model={run_dir}", f"--input_file={text}",
                    f"--output_file={tmp_path / 'never.jsonl'}", "--noprogress")
  assert done.returncode != 0 and "reads 2 fields (sentence1, sentence2)" in done.stderr
  assert not (tmp_path / "never.jsonl").exists()


def test_onnxruntime_int8_and_bfloat16_answer_as_float32_tensorflow(topics_run, tmp_path):
  """--runtime=onnxruntime runs the run's ONNX export, written once into <run>/onnx/ and
  kept; float32 within 1e-5 of TensorFlow, dynamic int8 and bfloat16 close to it."""
  import shutil  # pylint: disable=import-outside-toplevel
  run = tmp_path / "topics"
  shutil.copytree(topics_run, run)
  labels = ["code", "data", "files", "system"]
  table = lambda answers: np.array([[a["probabilities"][k] for k in labels] for a in answers])
  want = table(Predictor.load(str(run), batch_size=3, dtype="float32").predict(TEXTS))
  got = table(Predictor.load(str(run), batch_size=3, runtime="onnxruntime",
                             dtype="float32").predict(TEXTS))
  assert_close(got, want, 1e-5)
  made = (run / "onnx" / "predict.onnx").stat().st_mtime_ns
  Predictor.load(str(run), runtime="onnxruntime", dtype="float32")    # kept: not written again
  assert (run / "onnx" / "predict.onnx").stat().st_mtime_ns == made
  # New best weights: the ONNX export is written again, and answers as they do.
  other = runs.Run.read(str(run)).model()
  other.classifier.output_weights.assign(-other.classifier.output_weights)
  runs.write_run(str(run), runs.read_record(str(run)), other)
  flipped = Predictor.load(str(run), batch_size=3, runtime="onnxruntime", dtype="float32")
  assert (run / "onnx" / "predict.onnx").stat().st_mtime_ns != made
  assert_close(table(flipped.predict(TEXTS)),
               table(Predictor.load(str(run), dtype="float32").predict(TEXTS)),
               1e-5)
  shutil.rmtree(run)
  shutil.copytree(topics_run, run)
  int8 = table(Predictor.load(str(run), runtime="onnxruntime",
                              quantization="dynamic_int8", dtype="float32").predict(TEXTS))
  assert (run / "onnx" / "predict-int8.onnx").exists()
  assert np.abs(int8 - want).max() < 0.05 and not np.array_equal(int8, want)
  bfloat16 = table(Predictor.load(str(run), dtype="bfloat16").predict(TEXTS))
  assert np.abs(bfloat16 - want).max() < 0.03 and not np.array_equal(bfloat16, want)
  with pytest.raises(ValueError, match="--dtype=bfloat16 is TensorFlow's"):
    Predictor.load(str(run), runtime="onnxruntime", dtype="bfloat16")
  with pytest.raises(ValueError, match="--quantization=dynamic_int8 is onnxruntime's"):
    Predictor.load(str(run), quantization="dynamic_int8", dtype="float32")


def test_runtime_auto_answers_with_the_faster_and_records_why_for_this_cpu(topics_run, tmp_path,
                                                                        capsys):
  """--runtime=auto times TensorFlow and ONNX Runtime on the first batch, answers with the
  faster and records the choice, its reason and the rates in <run>/onnx/runtime.json for
  this CPU and these weights; a later run on the same CPU reads it instead of measuring,
  one on another CPU measures again. The answers are float32 TensorFlow's within 1e-5
  whichever it takes."""
  import shutil  # pylint: disable=import-outside-toplevel
  from albert_tf.export import runtimes  # pylint: disable=import-outside-toplevel
  from albert_tf.commands import predict  # pylint: disable=import-outside-toplevel
  run = tmp_path / "topics"
  shutil.copytree(topics_run, run)
  labels = ["code", "data", "files", "system"]
  table = lambda answers: np.array([[a["probabilities"][k] for k in labels] for a in answers])
  want = table(Predictor.load(str(run), batch_size=3, dtype="float32").predict(TEXTS))
  capsys.readouterr()
  assert_close(table(Predictor.load(str(run), batch_size=3, runtime="auto",
                                    dtype="float32").predict(TEXTS)),
               want, 1e-5)
  record_file = run / "onnx" / "runtime.json"
  record = json.loads(record_file.read_text())
  rates = record["rows_per_second"]
  assert set(rates) == {"tensorflow/float32", "onnxruntime/float32"} and min(rates.values()) > 0
  assert record["pair"] == max(rates, key=rates.get)
  assert record["host"] == runtimes.host_kind()
  assert record["weights"] == runs.weights_fingerprint(runs.Run.read(str(run)).checkpoint)
  printed = capsys.readouterr().out
  assert f"--runtime=auto: {record['pair']} (tensorflow/float32 " in printed, printed
  assert "on a new shape)" in printed and "(on 3x" in printed, printed
  assert "pieces of the first batch)" in printed

  made = record_file.stat().st_mtime_ns
  inputs = tmp_path / "texts.txt"
  inputs.write_text("\n".join(TEXTS) + "\n")
  predict.run(predict.PredictOptions(model=str(run), input_file=str(inputs),
                                     output_file=str(tmp_path / "out.jsonl"), runtime="auto",
                                     batch_size=3, progress=False, dtype="float32"))
  assert record_file.stat().st_mtime_ns == made
  assert "as measured on this CPU before" in capsys.readouterr().out
  answers = [json.loads(line) for line in open(tmp_path / "out.jsonl")]
  assert_close(table(answers), want, 1e-5)

  record_file.write_text(json.dumps(dict(record, host="another CPU")))
  Predictor.load(str(run), batch_size=3, runtime="auto", dtype="float32").predict(TEXTS[:3])
  assert json.loads(record_file.read_text())["host"] == runtimes.host_kind()
  with pytest.raises(ValueError, match="--dtype=bfloat16 is TensorFlow's"):
    Predictor.load(str(run), runtime="onnxruntime", dtype="bfloat16")
  # A record of an older albert_tf (a runtime, float32 only) still holds for the two.
  record_file.write_text(json.dumps(dict(host=runtimes.host_kind(), weights=record["weights"],
                                         runtime="onnxruntime", reason="older")))
  capsys.readouterr()
  Predictor.load(str(run), batch_size=3, runtime="auto", dtype="float32")
  assert "--runtime=auto: onnxruntime/float32, as measured on this CPU before (older" in (
      capsys.readouterr().out)


# Rows/s of ALBERT-base (b8 s128, 2 cores) as issue 86 and docs/performance.md measured
# them, warm: bfloat16 3.4x float32 on an Intel Xeon with AMX; 0.87x on an AMD EPYC with
# AVX2 only (no bfloat16 instructions: emulated). (A new shape's first call on that model
# was not measured on those kinds: taken as 0.8x warm for each pair.)
AMX = {"tensorflow/float32": 14.09, "tensorflow/bfloat16": 47.98, "onnxruntime/float32": 11.4}
AVX2 = {"tensorflow/float32": 6.75, "tensorflow/bfloat16": 5.88, "onnxruntime/float32": 6.08}
# `make demo`'s 4-pass MRPC model, 64 rows of 40 pieces, on an AMD EPYC with AVX-512 and
# avx512_bf16 (issue 86's note): seconds of a warm call, and of a new shape's first call.
DEMO_WARM = {"tensorflow/float32": 0.0289, "tensorflow/bfloat16": 0.019}
DEMO_FIRST = {"tensorflow/float32": 0.0343, "tensorflow/bfloat16": 0.127}


def test_auto_takes_bfloat16_only_where_it_is_clearly_faster_and_answers_alike():
  """The rule, with the rates given: the fastest float32 pair, replaced by bfloat16 only at
  1.05x its speed or more with the same answers; each reason says why."""
  from albert_tf.export.runtimes import choose  # pylint: disable=import-outside-toplevel
  alike = {"tensorflow/bfloat16": None}
  pair, why = choose(AMX, alike)
  assert pair == "tensorflow/bfloat16", why
  assert "tensorflow/bfloat16: the same answers, 3.41x float32's speed" in why
  assert "tensorflow/float32 14.1 rows/s" in why
  pair, why = choose(AVX2, alike)
  assert pair == "tensorflow/float32" and "under 1.05x float32's speed" in why, why
  pair, why = choose(AMX, {"tensorflow/bfloat16": "row 3 of the batch answered x"})
  assert pair == "tensorflow/float32" and "not taken: row 3 of the batch answered x" in why
  # ONNX Runtime the faster float32: bfloat16 is weighed against it.
  pair, _ = choose(dict(AVX2, **{"onnxruntime/float32": 7.0}), alike)
  assert pair == "onnxruntime/float32"
  pair, _ = choose({"tensorflow/float32": 6.0, "tensorflow/bfloat16": 7.2,
                    "onnxruntime/float32": 7.0}, alike)
  assert pair == "onnxruntime/float32"                 # 7.2 < 1.05 x 7.0
  assert choose({"tensorflow/float32": 1.0, "tensorflow/bfloat16": 1.06}, alike)[0] == (
      "tensorflow/bfloat16")
  # Faster warm, but each new batch shape's first call 3.7 times as slow: a file of short
  # texts meets new shapes all the time; float32.
  pair, why = choose({p: 64 / t for p, t in DEMO_WARM.items()}, alike,
                     {p: 64 / t for p, t in DEMO_FIRST.items()})
  assert pair == "tensorflow/float32" and "slower than float32 on each new batch shape" in why
  assert "tensorflow/bfloat16 3368.4 rows/s (503.9 on a new shape)" in why, why


@pytest.mark.parametrize("machine", ["AMX", "AVX2"])
def test_predict_auto_auto_takes_bfloat16_on_amx_and_float32_without_it(
    topics_run, tmp_path, capsys, monkeypatch, machine):
  """predict.py --runtime=auto --dtype=auto, the three pairs' rates injected as measured on
  each CPU kind: the AMX machine's answers come from bfloat16 (its labels those of
  float32, checked on the batch), the AVX2 machine's from float32; the line printed and
  the record say which and why, and Beam takes the recorded pair."""
  import shutil  # pylint: disable=import-outside-toplevel
  from albert_tf.export import runtimes  # pylint: disable=import-outside-toplevel
  from albert_tf.commands import predict, predict_beam  # pylint: disable=import-outside-toplevel
  rates = {"AMX": AMX, "AVX2": AVX2}[machine]
  timed = []
  def time_of(pair, forward, warm_up, batch):
    timed.append(pair)
    rows = len(batch["input_word_ids"])
    return rows / (0.8 * rates[pair]), rows / rates[pair], forward(batch)
  monkeypatch.setattr(runtimes, "TIME", time_of)
  run = tmp_path / "topics"
  shutil.copytree(topics_run, run)
  inputs = tmp_path / "texts.txt"
  inputs.write_text("\n".join(TEXTS) + "\n")
  capsys.readouterr()
  predict.run(predict.PredictOptions(model=str(run), input_file=str(inputs), batch_size=4,
                                     output_file=str(tmp_path / "out.jsonl"), runtime="auto",
                                     dtype="auto", progress=False))
  assert sorted(timed) == sorted(runtimes.PAIRS)
  want = "tensorflow/bfloat16" if machine == "AMX" else "tensorflow/float32"
  printed = capsys.readouterr().out
  assert f"--runtime=auto --dtype=auto: {want} (" in printed, printed
  record = json.loads((run / "onnx" / "runtime.json").read_text())
  assert (record["pair"], record["dtype"]) == (want, want.split("/")[1])
  assert record["candidates"] == list(runtimes.PAIRS)
  labels = ["code", "data", "files", "system"]
  answers = [json.loads(line) for line in open(tmp_path / "out.jsonl")]
  table = lambda answers: np.array([[a["probabilities"][k] for k in labels] for a in answers])
  chosen = Predictor.load(str(run), batch_size=4, dtype=want.split("/")[1]).predict(TEXTS)
  float32 = Predictor.load(str(run), batch_size=4, dtype="float32").predict(TEXTS)
  assert [a["labels"] for a in answers] == [d["labels"] for d in float32]
  assert_close(table(answers), table(chosen), 1e-5)
  difference = np.abs(table(answers) - table(float32)).max()
  assert (0 < difference < 0.03) if machine == "AMX" else difference < 1e-5, difference
  assert predict_beam.auto_pair(runs.Run.read(str(run)), "auto", "auto", "none") == tuple(
      want.split("/"))
  # A pair never measured for these candidates: Beam takes float32 TensorFlow and says so.
  assert predict_beam.auto_pair(runs.Run.read(str(run)), "tensorflow", "auto", "none") == (
      "tensorflow", "float32")
  assert "nothing measured on this CPU" in capsys.readouterr().out


def _write_rows(path, rows):
  path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
  return str(path)


def test_bad_inputs_are_one_line_naming_the_file_and_line_and_nothing_is_written(
    topics_run, tmp_path):
  from albert_tf.commands import predict  # pylint: disable=import-outside-toplevel

  def refused(source, match, model=topics_run, **flags):
    out = tmp_path / "never.jsonl"
    with pytest.raises((ValueError, FileNotFoundError), match=match):
      predict.run(predict.PredictOptions(model=str(model), input_file=str(source),
                                         output_file=str(out), progress=False, **flags))
    assert not out.exists() and not list(tmp_path.glob("never.jsonl*"))

  good = dict(id="a", text="the list")
  refused(_write_rows(tmp_path / "a.jsonl", [good, "{not json"]), r"a.jsonl:2: not JSON")
  refused(_write_rows(tmp_path / "b.jsonl", [good, dict(id="b", txt="x")]),
          r"b.jsonl:2: no column 'text'; the columns are 'id', 'txt'")
  refused(_write_rows(tmp_path / "c.jsonl", [good, dict(id="c", text=3)]),
          r"c.jsonl:2: 'text' is 3, not text")
  # (in a later chunk than the first, after answers were written: none is left)
  refused(_write_rows(tmp_path / "c.jsonl", [good, good, dict(id="c", text=3)]),
          r"c.jsonl:3: 'text' is 3, not text", chunk_rows=1)
  # A disk that fills after the first chunk's answers: one WriteFailed naming the output,
  # and nothing left (the answers grew in <output>.tmp-<pid>, removed).
  from albert_tf import files  # pylint: disable=import-outside-toplevel

  class Filling:
    def __init__(self, f):
      self.f, self.writes = f, 0

    def __getattr__(self, name):
      return getattr(self.f, name)

    def __enter__(self):
      return self

    def __exit__(self, *exc):
      self.f.close()

    def write(self, text):
      self.writes += 1
      if self.writes > 1:
        raise OSError(errno.ENOSPC, "No space left on device")
      return self.f.write(text)
  with pytest.MonkeyPatch.context() as patch:
    patch.setattr(files, "open", lambda *a, **k: Filling(open(*a, **k)), raising=False)
    with pytest.raises(files.WriteFailed, match=r"cannot write .*never.jsonl: No space left on device") as failed:
      predict.run(predict.PredictOptions(
          model=str(topics_run), input_file=_write_rows(tmp_path / "e.jsonl", [good] * 3),
          output_file=str(tmp_path / "never.jsonl"), progress=False, chunk_rows=1, dtype="float32"))
  assert failed.value.exit_code == 1 and "\n" not in str(failed.value)
  assert not list(tmp_path.glob("never.jsonl*"))
  refused(_write_rows(tmp_path / "d.jsonl", [good]), r"d.jsonl:1: no column 'key'",
          id_column="key")
  (tmp_path / "not_a_run").mkdir()
  (tmp_path / "not_a_run" / "notes.txt").write_text("x")
  refused(tmp_path / "a.jsonl", r"--model=.*not_a_run is neither a run directory",
          model=tmp_path / "not_a_run")
  refused(tmp_path / "missing.jsonl", r"--input_file=.*missing.jsonl not found")
  # An empty line of a .txt file is an empty text, answered as such.
  source = tmp_path / "texts.txt"
  source.write_text("the list\n\nthe thread\n")
  out = tmp_path / "texts.jsonl"
  predict.run(predict.PredictOptions(model=str(topics_run), input_file=str(source),
                                     output_file=str(out), progress=False, dtype="float32"))
  answers = [json.loads(line) for line in out.read_text().splitlines()]
  assert [a["index"] for a in answers] == [0, 1, 2]
  assert answers[1]["labels"] == Predictor.load(str(topics_run), dtype="float32").predict(
      [""])[0]["labels"]


def test_chunks_hold_every_line_once_and_count_the_rows_before_them(tmp_path):
  from albert_tf.data import pipeline  # pylint: disable=import-outside-toplevel
  lines = ["", "short", "a longer line of text", "", "x" * 30, "é and ü", "last"]
  path = tmp_path / "lines.txt"
  path.write_bytes(("\n".join(lines) + "\n").encode())
  for size in (1, 3, 7, 16, 1000):
    chunks = pipeline.line_chunks(str(path), "txt", size)
    got = [raw.decode().rstrip("\n") for c in chunks for _, raw in pipeline.chunk_lines(c)]
    assert got == lines, size
    counts = dict(pipeline.count_chunk(c) for c in chunks)
    assert sum(rows for rows, _ in counts.values()) == len(lines)
  jsonl = tmp_path / "rows.jsonl"
  jsonl.write_text('{"text": "a"}\n\n{"text": "b"}\n')
  counts = [pipeline.count_chunk(c)[1] for c in pipeline.line_chunks(str(jsonl), "jsonl", 4)]
  assert (sum(r for r, _ in counts), sum(n for _, n in counts)) == (2, 3)  # blank: no row


def test_beam_runinference_answers_as_the_local_path_and_reruns_byte_for_byte(
    topics_run, tmp_path, monkeypatch):
  """predict.py --runner=DirectRunner with 2 workers, the input in many chunks: the local
  answers (through the run's serving export, made in <run>/serving) sorted by index,
  contiguous shards, bad rows in the errors file with their index, line and reason; a
  rerun writes the same bytes. The run was trained on a `description` column: Beam reads
  it, as the local path does, without --text_columns. More failed rows than
  --max_error_rate exit non-zero with the first reason, the outputs staying."""
  import shutil  # pylint: disable=import-outside-toplevel
  from albert_tf.commands import predict_beam  # pylint: disable=import-outside-toplevel
  from albert_tf.data import pipeline  # pylint: disable=import-outside-toplevel
  from albert_tf.commands import predict  # pylint: disable=import-outside-toplevel
  monkeypatch.setattr(pipeline, "CHUNK_BYTES", 1000)    # (the launcher plans the chunks)
  run = tmp_path / "topics"
  shutil.copytree(topics_run, run)
  record = json.loads((run / runs.RECORD).read_text())
  (run / runs.RECORD).write_text(json.dumps(dict(record, text_columns=["description"])))
  rng = np.random.default_rng(0)
  words = " ".join(TEXTS).split()
  rows = [dict(id=f"r{i}", description=" ".join(rng.choice(words, int(rng.integers(0, 30)))))
          for i in range(60)]
  rows[7] = "{not json"
  rows[20] = dict(id="r20", text="not the run's column")
  source = _write_rows(tmp_path / "rows.jsonl", rows)
  good = [(i, r) for i, r in enumerate(rows) if isinstance(r, dict) and "description" in r]
  local = {r["id"]: a for (_, r), a in zip(good, Predictor.load(str(run), dtype="float32").predict(
      [r["description"] for _, r in good]))}
  flags = dict(model=str(run), input_file=source, id_column="id", runner="DirectRunner",
               direct_num_workers=2, num_shards=3, progress=False, max_error_rate=0.05,
               dtype="float32")
  result = predict.run(predict.PredictOptions(output_file=str(tmp_path / "a" / "out.jsonl"),
                                              **flags))
  assert (result["rows"], result["errors"]) == (58, 2)
  shards = [tmp_path / "a" / f"out-{k:05d}-of-00003.jsonl" for k in range(3)]
  answers = [json.loads(line) for s in shards for line in s.read_text().splitlines()]
  assert [a["index"] for a in answers] == [i for i, _ in good]          # contiguous, in order
  labels = ["code", "data", "files", "system"]
  for a in answers:
    assert a["labels"] == local[a["id"]]["labels"]
  assert_close([[a["probabilities"][k] for k in labels] for a in answers],
               [[local[a["id"]]["probabilities"][k] for k in labels] for a in answers], 1e-5)
  errors = [json.loads(line) for line in
            (tmp_path / "a" / "out-errors.jsonl").read_text().splitlines()]
  assert [(e["index"], e["line"]) for e in errors] == [(7, 8), (20, 21)]
  assert "rows.jsonl:8: not JSON" in errors[0]["reason"]
  assert "rows.jsonl:21: no column 'description'" in errors[1]["reason"]
  assert (run / "serving" / "saved_model.pb").exists()
  # The rerun (in one process this time): the same bytes, though with the default
  # --max_error_rate (0.01) its 2 failed rows of 60 end it with the first reason; an
  # existing output is refused before any work.
  with pytest.raises(ValueError, match=r"2 of 60 rows failed, more than --max_error_rate="
                     r"0.01; the first: .*rows.jsonl:8: not JSON.*the answers written stay"):
    predict.run(predict.PredictOptions(output_file=str(tmp_path / "b" / "out.jsonl"),
                                       **dict(flags, direct_num_workers=1, max_error_rate=0.01)))
  for k in range(3):
    name = f"out-{k:05d}-of-00003.jsonl"
    assert (tmp_path / "b" / name).read_bytes() == (tmp_path / "a" / name).read_bytes()
  with pytest.raises(FileExistsError, match="out-00000-of-00003.jsonl"):
    predict.run(predict.PredictOptions(output_file=str(tmp_path / "a" / "out.jsonl"), **flags))
  # The serving export as --model: the same answers.
  again = Predictor.load(str(run / "serving"), dtype="float32").predict(
      [r["description"] for _, r in good[:10]])
  assert [a["labels"] for a in again] == [local[r["id"]]["labels"] for _, r in good[:10]]


def test_a_row_whose_answer_fails_is_answered_with_its_error_and_its_batch_completes():
  from albert_tf.commands import predict_beam  # pylint: disable=import-outside-toplevel

  class Model:   # answers the length of a text, and fails on "boom"
    def predict(self, examples):
      if any(e[0] == "boom" for e in examples):
        raise ValueError("cannot answer boom\n(more lines)")
      return [dict(score=len(e[0])) for e in examples]

  answers = predict_beam._answers(Model(), [["a"], ["boom"], ["abc"]])  # pylint: disable=protected-access
  assert answers == [dict(score=1), dict(error="ValueError: cannot answer boom"), dict(score=3)]
  rows = [(0, dict(line=1, id=None)), (1, dict(line=2, id="x")), (2, dict(line=3, id=None))]
  result = predict_beam.PredictionResult(rows, answers)
  out = list(predict_beam._lines((0, result), 2, 4))  # pylint: disable=protected-access
  assert [o for o in out if isinstance(o, tuple)] == [
      (0, (0, '{"index": 0, "score": 1}\n')), (1, (2, '{"index": 2, "score": 3}\n'))]
  errors = [o.value for o in out if not isinstance(o, tuple)]
  assert errors == [(1, 2, "ValueError: cannot answer boom")]


def test_beam_sends_a_squad_row_without_context_to_the_errors_and_refuses_a_non_run(
    tmp_path, spm_model):
  """On the DirectRunner: a SQuAD question without a context is an error line and the
  others are answered (an untrained SQuAD v2.0 run: the answers, not the learning, are
  under test); a --model that is neither a run nor an export stops before any work."""
  from albert_tf import AlbertQuestionAnswerer  # pylint: disable=import-outside-toplevel
  from albert_tf.commands import predict  # pylint: disable=import-outside-toplevel
  keras.utils.set_random_seed(0)
  model = AlbertQuestionAnswerer(AlbertEncoder(AlbertConfig.from_dict(CFG)), True)
  model({k: tf.zeros([1, 8], tf.int32) for k in ("input_word_ids", "input_mask",
                                                  "input_type_ids")} | {
                                                      "p_mask": tf.zeros([1, 8])})
  run = runs.write_run(str(tmp_path / "squad"), dict(
      task="SQuAD v2.0", model=CFG, hub=None, do_lower_case=True, max_seq_length=SEQ,
      spm_model_file=spm_model, doc_stride=16, max_query_length=8), model)
  rows = [dict(question="what is the list?", context="the list is a sequence of values."),
          dict(question="who?", context=""),
          dict(question="and the file?", context="a file in a directory holds data " * 4)]
  source = _write_rows(tmp_path / "questions.jsonl", rows)
  predict.run(predict.PredictOptions(model=run, input_file=source, runner="DirectRunner",
                                     output_file=str(tmp_path / "out" / "a.jsonl"),
                                     progress=False, max_error_rate=0.5, dtype="float32"))
  answers = [json.loads(line) for line in
             (tmp_path / "out" / "a-00000-of-00001.jsonl").read_text().splitlines()]
  local = Predictor.load(run, dtype="float32").predict([rows[0], rows[2]])
  assert [a["index"] for a in answers] == [0, 2]
  for got, want in zip(answers, local):
    assert (got["answer"], got["start"], got["has_answer"]) == (
        want["answer"], want["start"], want["has_answer"])
    assert_close([got["score"], got["null_score"]], [want["score"], want["null_score"]], 1e-5)
  errors = [json.loads(line) for line in
            (tmp_path / "out" / "a-errors.jsonl").read_text().splitlines()]
  assert [(e["index"], e["line"]) for e in errors] == [(1, 2)]
  assert "questions.jsonl:2: no context" in errors[0]["reason"]
  # A run that answers no row exits non-zero with the first reason; its errors file stays.
  bad = _write_rows(tmp_path / "bad.jsonl", [rows[1], dict(question="why?")])
  with pytest.raises(ValueError, match=r"no row answered \(2 failed; the first: "
                     r".*bad.jsonl:1: no context"):
    predict.run(predict.PredictOptions(model=run, input_file=bad, runner="DirectRunner",
                                       output_file=str(tmp_path / "out" / "bad.jsonl"),
                                       progress=False, dtype="float32"))
  assert len((tmp_path / "out" / "bad-errors.jsonl").read_text().splitlines()) == 2
  (tmp_path / "plain").mkdir()
  with pytest.raises(ValueError, match=r"--model=.*plain is neither a run directory"):
    predict.run(predict.PredictOptions(model=str(tmp_path / "plain"), input_file=source,
                                       runner="DirectRunner", progress=False,
                                       output_file=str(tmp_path / "never" / "a.jsonl"),
                                       dtype="float32"))
  assert not (tmp_path / "never").exists()
