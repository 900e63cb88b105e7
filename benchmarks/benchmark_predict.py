"""Rows per second of predictions on new text: predict.py's runtimes and dtypes, its Beam
pipeline, and transformers beside them.

  python benchmarks/benchmark_predict.py                   # 2,000 texts, ALBERT-base, 2 rounds
  python benchmarks/benchmark_predict.py --texts=200 --preset=tiny       # a check that it runs

Needs the optional peers for their rows: `pip install -e '.[bench]'` (torch CPU,
transformers, onnxruntime); without them only albert_tf's rows run.

The texts: --texts sentences of the pydoc topics, joined to lengths drawn log-uniformly
between 5 and 300 SentencePiece pieces. The model: an ALBERT-base-shaped single-label
classifier (random weights, a 30,000-piece vocabulary), a run directory as run_classifier.py
leaves it, at --max_seq_length=512. Every row is its own process, the rows alternate
round by round (machine noise hits each alike), and a row's figure is the median over
rounds of rows per second of the answering alone (model loading apart; the Beam row is the
whole pipeline, its workers' model loading included):

  tensorflow/float32, tensorflow/bfloat16, onnxruntime/float32, onnxruntime/int8
               predict.py --runtime --dtype --quantization (batches sorted by length)
  beam         predict.py --runner=DirectRunner --direct_num_workers=1 (in-process), on the
               run's serving export; beam:<runtime>/<dtype> on the run with those choices
  hf_pipeline  transformers' pipeline("text-classification", batch_size=--batch_size) on
               torch, over the run converted by convert_checkpoint.py --output_format=hf
  hf_onnx      onnxruntime on that transformers model exported by torch.onnx (dynamic
               batch and length), given the same length-sorted batches, tokenized by
               transformers' tokenizer

A row with `auto` (`auto/auto`, `tensorflow/auto`: `--runtime`, `--dtype`) measures and
chooses in each process (the run's record is removed first); the round's line says what it
chose and how long the first batch took, measuring included (issue 86).

A row `<runtime>/<dtype>@N` answers with the same run at N passes of the shared block
(`--depths` prepares those runs: the same weights, `num_hidden_layers=N` in its record, as
run_classifier.py --num_hidden_layers=N leaves it); its `x full` is its rows/s over the
same row at the model's depth (issue 84: >= 1.85x at half of ALBERT-base's 12).

  python benchmarks/benchmark_predict.py --depths=6,3 --texts=500 \
      --rows=tensorflow/float32,tensorflow/float32@6,tensorflow/float32@3

Agreement is the share of texts whose label equals float32 TensorFlow's; the goal (issue
63) is for albert_tf's fastest setting at agreement >= 0.99: >= 1.3x hf_pipeline, >= 1.0x
hf_onnx, and the Beam row >= 0.7x the local path.
"""

import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

from absl import app, flags

import benchmarking  # pylint: disable=g-bad-import-order

flags.DEFINE_integer("texts", 2000, "Texts to answer.")
flags.DEFINE_integer("batch_size", 32, "Rows per batch.")
flags.DEFINE_integer("rounds", 2, "Processes per row (alternating).")
flags.DEFINE_enum("preset", "base", ["base", "small", "tiny"], "The model's shape.")
flags.DEFINE_list("rows", ["tensorflow/float32", "tensorflow/bfloat16", "onnxruntime/float32",
                           "onnxruntime/int8", "beam", "hf_pipeline", "hf_onnx"],
                  "The rows to measure.")
flags.DEFINE_list("depths", [], "Passes of the shared block to prepare runs of (rows "
                  "<runtime>/<dtype>@N).")
flags.DEFINE_string("model", None, "A trained run_classifier.py --output_dir to measure "
                    "instead of the random --preset run (its @N rows: the same weights at N "
                    "passes).")
flags.DEFINE_string("input_file", None, "With --model: the texts, .jsonl of the run's text "
                    "columns (default: the pydoc texts, for a run of one text column).")
flags.DEFINE_string("child", None, "(internal) the row this process measures.")
flags.DEFINE_string("work_dir", None, "(internal) the prepared run, texts and peers.")
FLAGS = flags.FLAGS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LABELS = ["negative", "positive"]


def prepare_model(work: str) -> None:
  """--model: the run (and its @N runs) rewritten as albert_tf's own encoder (a run
  fine-tuned from a TF-Hub SavedModel answers through the same code as the others)."""
  from albert_tf import runs  # pylint: disable=g-import-not-at-top
  run = runs.Run.read(FLAGS.model, "--model", kinds=["classification"])
  model, config = run.model(), run.config.to_dict()
  for depth in [None] + [int(d) for d in FLAGS.depths]:
    record = dict(run.record, hub=None, model=dict(
        config, **({} if depth is None else dict(num_hidden_layers=depth))))
    runs.write_run(os.path.join(work, "run" if depth is None else f"run@{depth}"), record,
                   model)
  for name in ("labels.txt", "thresholds.txt"):
    if os.path.exists(os.path.join(FLAGS.model, name)):
      for depth in [None] + FLAGS.depths:
        with open(os.path.join(FLAGS.model, name), encoding="utf-8") as f, open(os.path.join(
            work, "run" if depth is None else f"run@{depth}", name), "w", encoding="utf-8") as g:
          g.write(f.read())
  texts = FLAGS.input_file
  if texts is None:
    return
  with open(texts, encoding="utf-8") as f:
    records = [json.loads(line) for line in f if line.strip()][:FLAGS.texts]
  with open(os.path.join(work, "input.jsonl"), "w", encoding="utf-8") as f:
    f.write("".join(json.dumps(r) + "\n" for r in records))


def prepare(work: str) -> None:
  """The run directory, the texts (.txt and .jsonl) and the Hugging Face directory."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tf_keras as keras  # pylint: disable=g-import-not-at-top
  from albert_tf import AlbertClassifier, AlbertEncoder, problems, runs  # pylint: disable=g-import-not-at-top
  from albert_tf.data import sample_corpus  # pylint: disable=g-import-not-at-top
  from albert_tf.text import vocab  # pylint: disable=g-import-not-at-top
  from albert_tf.text.tokenization import FullTokenizer  # pylint: disable=g-import-not-at-top
  corpus = sample_corpus.write_pydoc_corpus(os.path.join(work, "pydoc.txt"))
  spm = vocab.train_vocab(corpus, os.path.join(work, "pydoc"), vocab_size=2000)
  config = benchmarking.preset_config(FLAGS.preset)
  if FLAGS.preset == "base":
    benchmarking.pad_vocabulary(spm, config.vocab_size)
  else:
    config = type(config).from_dict(dict(config.to_dict(), vocab_size=2000))
  rng = np.random.default_rng(0)
  if not FLAGS.model:
    keras.utils.set_random_seed(0)
    model = AlbertClassifier(AlbertEncoder(config), 2)
    model({k: np.zeros([1, 4], np.int32) for k in ("input_word_ids", "input_mask",
                                                     "input_type_ids")})
    # a head whose answers are not ties
    model.classifier.output_weights.assign(rng.normal(0, 1,
                                                      model.classifier.output_weights.shape))
    for depth in [None] + [int(d) for d in FLAGS.depths]:   # (the weights are depth's own)
      runs.write_run(os.path.join(work, "run" if depth is None else f"run@{depth}"), dict(
          task="classification", hub=None, spm_model_file=spm, do_lower_case=True,
          model=dict(config.to_dict(), **({} if depth is None else dict(num_hidden_layers=depth))),
          max_seq_length=512, problem_type=problems.SINGLE, labels=LABELS,
          text_columns=["text"]), model)
  tokenizer = FullTokenizer(spm_model_file=spm)
  words = " ".join(s.strip() for s in open(corpus, encoding="utf-8")).split()
  texts, lengths = [], []
  for _ in range(FLAGS.texts):
    want = int(round(math.exp(rng.uniform(math.log(5), math.log(300)))))
    start, end = int(rng.integers(len(words) - 400)), 1
    while len(tokenizer.tokenize(" ".join(words[start:start + end]))) < want:
      end += 1                                        # the fewest words of `want` pieces
    texts.append(" ".join(words[start:start + end]))
    lengths.append(len(tokenizer.tokenize(texts[-1])))
  with open(os.path.join(work, "texts.txt"), "w", encoding="utf-8") as f:
    f.write("".join(t + "\n" for t in texts))
  with open(os.path.join(work, "texts.jsonl"), "w", encoding="utf-8") as f:
    f.write("".join(json.dumps(dict(text=t)) + "\n" for t in texts))
  print(f"{len(texts)} texts, pieces: median {statistics.median(lengths):.0f}, "
        f"min {min(lengths)}, max {max(lengths)}, total {sum(lengths)}")
  try:
    from albert_tf.commands import convert  # pylint: disable=g-import-not-at-top
    convert.run(convert.ConvertOptions(model=os.path.join(work, "run"), output_format="hf",
                                       output_dir=os.path.join(work, "hf")))
  except Exception as e:  # pylint: disable=broad-except
    print(f"(no Hugging Face directory: {e})")


def texts_of(work):
  if FLAGS.model and FLAGS.input_file:    # the run's own columns
    with open(os.path.join(work, "input.jsonl"), encoding="utf-8") as f:
      return [json.loads(line) for line in f]
  with open(os.path.join(work, "texts.txt"), encoding="utf-8") as f:
    return [line.rstrip("\n") for line in f]


def child(row: str, work: str) -> dict:
  """Measures one row in this process: rows per second and the labels."""
  texts = texts_of(work)
  if row.startswith("beam"):
    from albert_tf.commands import predict  # pylint: disable=g-import-not-at-top
    out = tempfile.mkdtemp(prefix="beam_", dir=work)
    runtime, kind = (row.split(":")[1] if ":" in row else "tensorflow/float32").split("/")
    result = predict.run(predict.PredictOptions(
        model=os.path.join(work, "run"), input_file=os.path.join(work, "texts.jsonl"),
        output_file=os.path.join(out, "answers.jsonl"), batch_size=FLAGS.batch_size,
        runner="DirectRunner", direct_num_workers=1, progress=False, runtime=runtime,
        dtype="float32" if kind == "int8" else kind,
        quantization="dynamic_int8" if kind == "int8" else "none"))
    answers = [json.loads(line) for line in open(os.path.join(out, "answers-00000-of-00001.jsonl"))]
    return dict(rows_per_second=result["rows_per_second"], labels=[a["label"] for a in answers])
  if row.startswith(("tensorflow", "onnxruntime", "auto")):
    from albert_tf import Predictor  # pylint: disable=g-import-not-at-top
    row, _, depth = row.partition("@")
    runtime, kind = row.split("/")
    options = dict(runtime=runtime, dtype="float32" if kind == "int8" else kind)
    if kind == "int8":
      options["quantization"] = "dynamic_int8"
    run = os.path.join(work, f"run@{depth}" if depth else "run")
    if "auto" in (runtime, kind):     # each process measures: the choice's spread shows
      record = os.path.join(run, "onnx", "runtime.json")
      if os.path.exists(record):
        os.remove(record)
    predictor = Predictor.load(run, FLAGS.batch_size, **options)
    started = time.perf_counter()
    predictor.predict(texts[:max(FLAGS.batch_size, 8)])   # (the first traces, or measures)
    first = time.perf_counter() - started
    start = time.perf_counter()
    answers = predictor.predict(texts)
    seconds = time.perf_counter() - start
    result = dict(rows_per_second=len(texts) / seconds, labels=[a["label"] for a in answers],
                  first_batch_seconds=first)
    if "auto" in (runtime, kind):
      with open(os.path.join(run, "onnx", "runtime.json"), encoding="utf-8") as f:
        result["chose"] = json.load(f)["pair"]
    return result
  import numpy as np  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  hf = os.path.join(work, "hf")
  tokenizer = transformers.AutoTokenizer.from_pretrained(hf)
  if row == "hf_pipeline":
    pipe = transformers.pipeline("text-classification", model=hf, tokenizer=tokenizer,
                                 device="cpu", batch_size=FLAGS.batch_size)
    pipe(texts[:FLAGS.batch_size])
    start = time.perf_counter()
    answers = pipe(texts)
    seconds = time.perf_counter() - start
    names = {f"LABEL_{i}": name for i, name in enumerate(LABELS)}
    return dict(rows_per_second=len(texts) / seconds,
                labels=[names.get(a["label"], a["label"]) for a in answers])
  # hf_onnx: the transformers model through torch.onnx, under onnxruntime.
  import onnxruntime  # pylint: disable=g-import-not-at-top
  path = os.path.join(work, "hf.onnx")
  if not os.path.exists(path):
    model = transformers.AlbertForSequenceClassification.from_pretrained(hf).eval()
    sample = tokenizer(["a text", "another text here"], padding=True, return_tensors="pt",
                       return_token_type_ids=True)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    with torch.no_grad():
      torch.onnx.export(model, tuple(sample[n] for n in names), path, input_names=names,
                        output_names=["logits"], dynamic_axes=dict(axes, logits={0: "batch"}),
                        opset_version=17, dynamo=False)
  options = onnxruntime.SessionOptions()
  options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
  session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
  wanted = [i.name for i in session.get_inputs()]

  def answer(batch_texts):
    encoded = tokenizer(batch_texts, padding=True, truncation=True, max_length=512,
                        return_tensors="np", return_token_type_ids=True)
    return session.run(["logits"], {n: encoded[n].astype(np.int64) for n in wanted})[0]

  answer(texts[:FLAGS.batch_size])
  start = time.perf_counter()
  lengths = [len(t) for t in texts]
  order = np.argsort(lengths, kind="stable")
  logits = np.zeros((len(texts), 2), np.float32)
  for i in range(0, len(order), FLAGS.batch_size):
    rows = order[i:i + FLAGS.batch_size]
    logits[rows] = answer([texts[r] for r in rows])
  seconds = time.perf_counter() - start
  return dict(rows_per_second=len(texts) / seconds,
              labels=[LABELS[int(i)] for i in logits.argmax(-1)])


def main(argv):
  del argv
  if FLAGS.child:
    result = child(FLAGS.child, FLAGS.work_dir)
    print("RESULT " + json.dumps(result))
    return
  work = tempfile.mkdtemp(prefix="benchmark_predict_")
  if FLAGS.model:
    prepare_model(work)
  prepare(work)
  results = {row: [] for row in FLAGS.rows}
  labels = {}
  for round_ in range(FLAGS.rounds):
    for row in FLAGS.rows:
      command = [sys.executable, os.path.abspath(__file__), f"--child={row}",
                 f"--work_dir={work}", f"--texts={FLAGS.texts}", f"--batch_size={FLAGS.batch_size}",
                 f"--preset={FLAGS.preset}", f"--depths={','.join(FLAGS.depths)}"] + [
                     f"--{k}={getattr(FLAGS, k)}" for k in ("model", "input_file")
                     if getattr(FLAGS, k)]
      done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
      found = [l for l in done.stdout.splitlines() if l.startswith("RESULT ")]
      if done.returncode or not found:
        print(f"{row}: failed\n{done.stderr[-2000:]}")
        continue
      result = json.loads(found[0][len("RESULT "):])
      results[row].append(result["rows_per_second"])
      labels[row] = result["labels"]
      print(f"round {round_ + 1} {row}: {result['rows_per_second']:.2f} rows/s"
            + (f", chose {result['chose']}" if "chose" in result else "")
            + (f" (first batch {result['first_batch_seconds']:.1f} s)"
               if "first_batch_seconds" in result else ""), flush=True)
  reference = labels.get("tensorflow/float32")
  base = {name: statistics.median(v) for name, v in results.items() if v}
  print(f"\n{'row':<22} {'rows/s':>8} {'x hf_pipeline':>14} {'x hf_onnx':>10} {'agreement':>10}")
  for name, value in base.items():
    agree = (sum(a == b for a, b in zip(labels[name], reference)) / len(reference)
             if reference else float("nan"))
    ratio = lambda peer: f"{value / base[peer]:.2f}" if peer in base else "-"
    print(f"{name:<22} {value:8.2f} {ratio('hf_pipeline'):>14} {ratio('hf_onnx'):>10} "
          f"{agree:10.3f}")
  for name in base:
    full = name.partition("@")[0]
    if "@" in name and full in base:
      print(f"{name} / {full}: {base[name] / base[full]:.2f} x full")
    if name.startswith("beam"):
      same = name.split(":")[1] if ":" in name else "tensorflow/float32"
      if same in base:
        print(f"{name} / {same}: {base[name] / base[same]:.2f}")


if __name__ == "__main__":
  app.run(main)
