"""Batch-1 serving latency: every albert_tf serving path beside transformers' in one run.

ALBERT-base (random weights, the released 30,000-id vocabulary size), batch 1, at each
--seq_lengths, the median of --calls calls after 5 warm-ups; each path in a fresh
process, the paths alternating round by round (--rounds), so machine noise hits all
alike. Needs the peers and the ONNX converter: `pip install -e '.[bench,onnx]'`.

  python benchmarks/benchmark_serving.py                         # every path, ~25 min on 2 cores
  python benchmarks/benchmark_serving.py --paths=saved_model,onnx,ort_peer --seq_lengths=32

Paths on packed ids (`input_word_ids`, `input_mask`, `input_type_ids` -> the encoder's
pooled and sequence outputs):
  tf_function      albert_tf's AlbertEncoder in a tf.function, in Python (no export)
  saved_model      the encoder SavedModel of hub_export/export.py, its `serving_default`
  saved_model_bf16 the same exported with --dtype=bfloat16
  onnx             hub_export/export_onnx.py's file under onnxruntime; onnx_int8 with
                   --quantization=dynamic_int8
  torch            peer: transformers' AlbertModel, torch eager (inference_mode);
                   torch_bf16 under autocast(bfloat16)
  ort_peer         peer: the same AlbertModel exported by torch.onnx, under onnxruntime;
                   ort_peer_int8 after onnxruntime's quantize_dynamic
Paths on raw text (a sentence pair that fills the length; the MRPC classifier's
probabilities, tokenization included):
  text_saved_model the raw-text classifier SavedModel (run_classifier.py --export_dir)
  tflite           export_tflite.py's file (raw text in); tflite_float16, tflite_int8
                   (--quantization=float16 / dynamic_int8)
  text_onnx        SentencePiece in Python (the shipped spiece.model) + the classifier's
                   ONNX file, as docs/serving.md's client
  text_torch       peer: transformers' tokenizer + AlbertForSequenceClassification
  text_ort_peer    peer: transformers' tokenizer + its torch.onnx export under onnxruntime
Every system gets the machine's cores (TF, onnxruntime and torch intra-op threads =
os.cpu_count(); TFLite num_threads the same).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags  # pylint: disable=wrong-import-position

import benchmarking  # pylint: disable=wrong-import-position

IDS_PATHS = ("tf_function", "saved_model", "saved_model_bf16", "onnx", "onnx_int8",
             "torch", "torch_bf16", "ort_peer", "ort_peer_int8")
TEXT_PATHS = ("text_saved_model", "tflite", "tflite_float16", "tflite_int8", "text_onnx",
              "text_torch", "text_ort_peer")
PEERS = ("torch", "torch_bf16", "ort_peer", "ort_peer_int8", "text_torch", "text_ort_peer")

flags.DEFINE_list("paths", list(IDS_PATHS + TEXT_PATHS), "What to time.")
flags.DEFINE_list("seq_lengths", ["32", "128", "512"], "Sequence lengths.")
flags.DEFINE_integer("calls", 30, "Timed calls per length and process.")
flags.DEFINE_integer("rounds", 2, "Processes per path (alternating).")
flags.DEFINE_string("work_dir", None, "Where the model files go; reused when it holds them "
                    "(default: a temporary directory).")
flags.DEFINE_string("json_output", None, "Also write every measurement here.")
flags.DEFINE_string("worker", None, "Internal: time one path (JSON spec) and print it.")
FLAGS = flags.FLAGS

WARMUP = 5
WORDS = ("the module returns a list of strings that name each attribute of the object "
         "and its class").split()


# ----------------------------------------------------------------------------- inputs

def ids_inputs(seq: int) -> dict:
  """int32 [1, seq] packed ids: a real token at every position."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  ids = np.random.default_rng(seq).integers(5, 2000, (1, seq)).astype(np.int32)
  ids[0, 0], ids[0, -1] = 2, 3   # [CLS] ... [SEP]
  return dict(input_word_ids=ids, input_mask=np.ones_like(ids),
              input_type_ids=np.zeros_like(ids))


def text_pair(seq: int) -> tuple:
  """A sentence pair whose pieces overflow `seq`, so every length is filled."""
  words = [WORDS[i % len(WORDS)] for i in range(seq)]
  return " ".join(words), " ".join(reversed(words))


# ----------------------------------------------------------------------------- files

def prepare(work: str, paths, seqs) -> dict:
  """Writes (once per work_dir) the files the paths load; returns their locations."""
  files = dict(run=os.path.join(work, "run"), hf=os.path.join(work, "hf"),
               saved_model=os.path.join(work, "encoder"),
               saved_model_bf16=os.path.join(work, "encoder_bf16"),
               onnx=os.path.join(work, "onnx", "encoder.onnx"),
               onnx_int8=os.path.join(work, "onnx", "encoder_int8.onnx"),
               text_onnx=os.path.join(work, "onnx", "classifier.onnx"),
               ort_peer=os.path.join(work, "peer", "albert_model.onnx"),
               ort_peer_int8=os.path.join(work, "peer", "albert_model_int8.onnx"),
               text_ort_peer=os.path.join(work, "peer", "classifier.onnx"))
  for seq in seqs:
    files[f"text_saved_model_{seq}"] = os.path.join(work, f"classifier_{seq}")
    for q, name in (("none", "tflite"), ("float16", "tflite_float16"),
                    ("dynamic_int8", "tflite_int8")):
      files[f"{name}_{seq}"] = os.path.join(work, f"{name}_{seq}.tflite")
  script = lambda name: os.path.join(os.path.dirname(os.path.dirname(__file__)), name)
  def run(*args):
    subprocess.run([sys.executable, *map(str, args)], check=True, capture_output=True)
  if not os.path.exists(files["run"]):
    benchmarking.classifier_run(work, max(seqs))
  config = os.path.join(work, "albert_config.json")
  if not os.path.exists(config):
    from albert_tf import runs  # pylint: disable=g-import-not-at-top
    runs.Run.read(files["run"]).config.to_json_file(config)
  spm = os.path.join(work, "pydoc.model")
  wanted = set(paths)
  encoder_flags = [f"--albert_config_file={config}",
                   f"--init_checkpoint={files['run']}/model.ckpt-best", f"--spm_model_file={spm}"]
  if "saved_model" in wanted and not os.path.exists(files["saved_model"]):
    run(script("hub_export/export.py"), *encoder_flags, f"--export_path={files['saved_model']}")
  if "saved_model_bf16" in wanted and not os.path.exists(files["saved_model_bf16"]):
    run(script("hub_export/export.py"), *encoder_flags, "--dtype=bfloat16",
        f"--export_path={files['saved_model_bf16']}")
  for name, q, source in (("onnx", "none", "--albert_directory"),
                          ("onnx_int8", "dynamic_int8", "--albert_directory"),
                          ("text_onnx", "none", "--model_dir")):
    if name in wanted and not os.path.exists(files[name]):
      run(script("hub_export/export_onnx.py"), f"{source}={files['run']}",
          f"--output_file={files[name]}", f"--quantization={q}")
  if wanted & set(PEERS) and not os.path.exists(files["hf"]):
    run(script("convert_checkpoint.py"), f"--model={files['run']}", "--output_format=hf",
        f"--output_dir={files['hf']}")
  if wanted & {"ort_peer", "ort_peer_int8", "text_ort_peer"}:
    _peer_onnx(files)
  for seq in seqs:
    if "text_saved_model" in wanted and not os.path.exists(files[f"text_saved_model_{seq}"]):
      # What run_classifier.py --export_dir writes at the end of training.
      from albert_tf.export.serving import export_classifier  # pylint: disable=g-import-not-at-top
      from albert_tf import runs  # pylint: disable=g-import-not-at-top
      classifier = runs.Run.read(files["run"])
      export_classifier(classifier.model(), files[f"text_saved_model_{seq}"],
                        classifier.tokenizer(), seq, classifier.labels)
    for q, name in (("none", "tflite"), ("float16", "tflite_float16"),
                    ("dynamic_int8", "tflite_int8")):
      target = files[f"{name}_{seq}"]
      if name in wanted and not os.path.exists(target):
        run(script("hub_export/export_tflite.py"), f"--model={files['run']}",
            f"--output_file={target}", f"--quantization={q}", f"--max_seq_length={seq}")
  return files


def _peer_onnx(files: dict) -> None:
  """transformers' AlbertModel and AlbertForSequenceClassification through torch.onnx
  (dynamic batch and sequence), and the model's dynamic int8 quantization."""
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  from onnxruntime.quantization import QuantType, quantize_dynamic  # pylint: disable=g-import-not-at-top
  from onnxruntime.quantization.shape_inference import quant_pre_process  # pylint: disable=g-import-not-at-top
  os.makedirs(os.path.dirname(files["ort_peer"]), exist_ok=True)
  example = tuple(torch.ones((1, 16), dtype=torch.long) for _ in range(3))
  axes = {k: {0: "batch", 1: "seq"} for k in ("input_ids", "attention_mask", "token_type_ids")}
  for key, cls, outputs in (("ort_peer", transformers.AlbertModel,
                             ["last_hidden_state", "pooler_output"]),
                            ("text_ort_peer", transformers.AlbertForSequenceClassification,
                             ["logits"])):
    if os.path.exists(files[key]):
      continue
    model = cls.from_pretrained(files["hf"]).eval()

    class Wrapped(torch.nn.Module):  # positional inputs, plain tuple outputs
      def __init__(self):
        super().__init__()
        self.model = model

      def forward(self, input_ids, attention_mask, token_type_ids):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                         token_type_ids=token_type_ids)
        return tuple(out[k] for k in outputs)

    with torch.no_grad():
      torch.onnx.export(Wrapped(), example, files[key],
                        input_names=list(axes), output_names=outputs, dynamic_axes=axes,
                        opset_version=17, dynamo=False)
  if not os.path.exists(files["ort_peer_int8"]):
    # torch.onnx reaches a shared weight through Identity nodes, which quantize_dynamic
    # skips (a file 14% smaller, no faster); onnxruntime's own pre-processing folds them.
    optimized = files["ort_peer_int8"] + ".pre.onnx"
    quant_pre_process(files["ort_peer"], optimized, skip_symbolic_shape=True)
    quantize_dynamic(optimized, files["ort_peer_int8"], weight_type=QuantType.QInt8)
    os.remove(optimized)


# ----------------------------------------------------------------------------- workers

def _ort_session(path: str):
  import onnxruntime  # pylint: disable=g-import-not-at-top
  options = onnxruntime.SessionOptions()
  options.intra_op_num_threads = os.cpu_count()
  return onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def _ids_call(path: str, files: dict):
  """seq -> a function of no arguments that serves one [1, seq] example."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  if path in ("onnx", "onnx_int8"):
    session = _ort_session(files[path])
    return lambda seq: (lambda feeds=ids_inputs(seq): session.run(None, feeds))
  if path in ("ort_peer", "ort_peer_int8"):
    session = _ort_session(files[path])
    def make(seq):
      x = ids_inputs(seq)
      feeds = dict(input_ids=x["input_word_ids"].astype(np.int64),
                   attention_mask=x["input_mask"].astype(np.int64),
                   token_type_ids=x["input_type_ids"].astype(np.int64))
      return lambda: session.run(None, feeds)
    return make
  if path in ("torch", "torch_bf16"):
    import torch  # pylint: disable=g-import-not-at-top
    import transformers  # pylint: disable=g-import-not-at-top
    torch.set_num_threads(os.cpu_count())
    model = transformers.AlbertModel.from_pretrained(files["hf"]).eval()
    def make(seq):
      x = {k: torch.from_numpy(v).long() for k, v in ids_inputs(seq).items()}
      def call():
        with torch.inference_mode(), torch.autocast("cpu", torch.bfloat16,
                                                    enabled=path == "torch_bf16"):
          return model(input_ids=x["input_word_ids"], attention_mask=x["input_mask"],
                       token_type_ids=x["input_type_ids"]).pooler_output.float().numpy()
      return call
    return make
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if path == "tf_function":
    from albert_tf import sources  # pylint: disable=g-import-not-at-top
    encoder = sources.read(files["run"]).model.encoder
    serve = tf.function(lambda x: encoder(x, training=False))
    def make(seq):
      x = {k: tf.constant(v) for k, v in ids_inputs(seq).items()}
      return lambda: {k: v.numpy() for k, v in serve(x).items()
                      if k in ("pooled_output", "sequence_output")}
    return make
  serve = tf.saved_model.load(files[path]).signatures["serving_default"]
  def make(seq):
    x = {k: tf.constant(v) for k, v in ids_inputs(seq).items()}
    return lambda: serve(**x)["pooled_output"].numpy()
  return make


def _text_call(path: str, files: dict):
  """seq -> a function of no arguments that classifies one raw sentence pair."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  if path.startswith("tflite"):
    from albert_tf.export import tflite  # pylint: disable=g-import-not-at-top
    def make(seq):
      runner = tflite.load_interpreter(model_path=files[f"{path}_{seq}"],
                                       num_threads=os.cpu_count()).get_signature_runner()
      a, b = text_pair(seq)
      inputs = dict(sentence1=np.array([a.encode()], dtype=object),
                    sentence2=np.array([b.encode()], dtype=object))
      return lambda: runner(**inputs)["probabilities"]
    return make
  if path == "text_saved_model":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    import tensorflow_text  # pylint: disable=g-import-not-at-top,unused-import  (its ops)
    def make(seq):
      serve = tf.saved_model.load(files[f"{path}_{seq}"]).signatures["serving_default"]
      a, b = text_pair(seq)
      x = dict(sentence1=tf.constant([a]), sentence2=tf.constant([b]))
      return lambda: serve(**x)["probabilities"].numpy()
    return make
  if path == "text_onnx":   # docs/serving.md's client: SentencePiece + onnxruntime
    import sentencepiece  # pylint: disable=g-import-not-at-top
    with open(files[path] + ".json") as f:
      info = json.load(f)
    session = _ort_session(files[path])
    pieces = sentencepiece.SentencePieceProcessor(
        model_file=os.path.join(os.path.dirname(files[path]), info["vocabulary"]))
    def make(seq):
      a_text, b_text = text_pair(seq)
      def call():
        a, b = pieces.encode(a_text.lower()), pieces.encode(b_text.lower())
        while len(a) + len(b) > seq - 3:   # longest first, as the packer truncates
          (a if len(a) > len(b) else b).pop()
        ids = [info["cls_id"]] + a + [info["sep_id"]] + b + [info["sep_id"]]
        feeds = {"input_word_ids": np.array([ids], np.int32),
                 "input_mask": np.ones((1, len(ids)), np.int32),
                 "input_type_ids": np.array([[0] * (len(a) + 2) + [1] * (len(b) + 1)],
                                            np.int32)}
        return session.run(["logits"], feeds)[0]
      return call
    return make
  import transformers  # pylint: disable=g-import-not-at-top
  tokenizer = transformers.AutoTokenizer.from_pretrained(files["hf"])
  if path == "text_ort_peer":
    session = _ort_session(files[path])
    def make(seq):
      a, b = text_pair(seq)
      def call():
        x = tokenizer(a, b, truncation="longest_first", max_length=seq, return_tensors="np",
                      return_token_type_ids=True)
        return session.run(None, {k: x[k].astype(np.int64) for k in
                                  ("input_ids", "attention_mask", "token_type_ids")})[0]
      return call
    return make
  import torch  # pylint: disable=g-import-not-at-top
  torch.set_num_threads(os.cpu_count())
  model = transformers.AutoModelForSequenceClassification.from_pretrained(files["hf"]).eval()
  def make(seq):
    a, b = text_pair(seq)
    def call():
      with torch.inference_mode():
        x = tokenizer(a, b, truncation="longest_first", max_length=seq, return_tensors="pt",
                      return_token_type_ids=True)
        return torch.softmax(model(**x).logits, -1).numpy()
    return call
  return make


def worker(spec: dict) -> dict:
  """{seq: median ms} of one path, timed in this process."""
  if spec["path"] in ("tf_function", "saved_model", "saved_model_bf16", "text_saved_model"):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    tf.config.threading.set_intra_op_parallelism_threads(os.cpu_count())
  factory = (_ids_call if spec["path"] in IDS_PATHS else _text_call)(spec["path"], spec["files"])
  result = {}
  for seq in spec["seqs"]:
    call = factory(seq)
    for _ in range(WARMUP):
      call()
    times = []
    for _ in range(spec["calls"]):
      start = time.perf_counter()
      call()
      times.append(time.perf_counter() - start)
    result[str(seq)] = 1000 * statistics.median(times)
  return result


# ----------------------------------------------------------------------------- main

def cpu_description() -> str:
  flags_line = ""
  with open("/proc/cpuinfo") as f:
    for line in f:
      if line.startswith("flags"):
        flags_line = line
        break
  kind = ("Intel Xeon with AMX" if "amx_bf16" in flags_line else
          "AVX-512 + avx512_bf16, no AMX" if "avx512_bf16" in flags_line else
          "AVX-512" if "avx512f" in flags_line else "AVX2")
  return f"{os.cpu_count()} cores, {kind}"


def main(_):
  if FLAGS.worker:
    print(json.dumps(worker(json.loads(FLAGS.worker))))
    return
  unknown = set(FLAGS.paths) - set(IDS_PATHS + TEXT_PATHS)
  if unknown:
    raise app.UsageError(f"--paths: unknown {', '.join(sorted(unknown))}; choose from "
                         f"{', '.join(IDS_PATHS + TEXT_PATHS)}")
  seqs = [int(s) for s in FLAGS.seq_lengths]
  work = FLAGS.work_dir or tempfile.mkdtemp(prefix="serving_bench_")
  os.makedirs(work, exist_ok=True)
  print(f"Writing the model files in {work} ...", flush=True)
  files = prepare(work, FLAGS.paths, seqs)
  results = {p: [] for p in FLAGS.paths}
  for r in range(FLAGS.rounds):
    for p in FLAGS.paths:
      spec = dict(path=p, seqs=seqs, calls=FLAGS.calls, files=files)
      done = subprocess.run([sys.executable, os.path.abspath(__file__),
                             "--worker=" + json.dumps(spec)], capture_output=True, text=True)
      if done.returncode:
        raise RuntimeError(f"{p} failed:\n{done.stderr[-3000:]}")
      results[p].append(json.loads(done.stdout.strip().splitlines()[-1]))
      print(f"round {r + 1}: {p} {results[p][-1]}", flush=True)
  print(f"\nALBERT-base, batch 1, ms per call: median of {FLAGS.calls} calls, the median of "
        f"{FLAGS.rounds} processes (each process's in brackets); {cpu_description()}")
  print("| path | " + " | ".join(f"seq {s}" for s in seqs) + " |")
  print("|---|" + "---|" * len(seqs))
  for group in (IDS_PATHS, TEXT_PATHS):
    for p in [p for p in group if p in results]:
      cells = []
      for s in seqs:
        each = [r[str(s)] for r in results[p]]
        cells.append(f"{statistics.median(each):.1f} [{' / '.join(f'{v:.1f}' for v in each)}]")
      print(f"| {p}{' (peer)' if p in PEERS else ''} | " + " | ".join(cells) + " |")
  for group, name in ((IDS_PATHS, "ids"), (TEXT_PATHS, "raw text")):
    ours = [p for p in group if p in results and p not in PEERS]
    peers = [p for p in group if p in results and p in PEERS]
    if not (ours and peers):
      continue
    for s in seqs:
      best = lambda ps: min(ps, key=lambda p: statistics.median(r[str(s)] for r in results[p]))
      a, b = best(ours), best(peers)
      ms = lambda p: statistics.median(r[str(s)] for r in results[p])
      print(f"{name}, seq {s}: fastest albert_tf {a} {ms(a):.1f} ms, fastest peer {b} "
            f"{ms(b):.1f} ms: {ms(b) / ms(a):.2f}x")
  if FLAGS.json_output:
    with open(FLAGS.json_output, "w") as f:
      json.dump(dict(cpu=cpu_description(), results=results), f, indent=1)


if __name__ == "__main__":
  app.run(main)
