"""TFLite (LiteRT) files of a classifier against its serving SavedModel, at batch 1.

For each of SavedModel / float32 / float16 / dynamic_int8 / int8: file size,
median latency of one raw-text example on 1 and 2 threads (each in a fresh
process, the variants alternating), and, with --model_dir and --data_dir, dev
accuracy and label agreement with the SavedModel.

  # sizes and latency of the ALBERT-base shape (30k vocabulary, seq 128, random weights)
  python benchmarks/benchmark_tflite.py
  # accuracy too: a run_classifier.py output directory and its GLUE data
  python benchmarks/benchmark_tflite.py --model_dir=out/MRPC --data_dir=glue/MRPC

Without --model_dir a classifier of the ALBERT-base shape is written as a run
directory (random weights; a pydoc vocabulary of 2,000 pieces padded to the
released 30,000 ids, so the embedding table has the released size).
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

flags.DEFINE_string("model_dir", None, "A run_classifier.py output directory (default: "
                    "ALBERT-base, random weights).")
flags.DEFINE_string("data_dir", None, "The run's GLUE data (dev.tsv for accuracy, train.tsv "
                    "for int8 calibration; default: generated MRPC-format data).")
flags.DEFINE_integer("max_seq_length", 128, "Packed length.")
flags.DEFINE_integer("rounds", 3, "Latency processes per variant and thread count.")
flags.DEFINE_integer("max_dev_examples", 400, "Dev examples for accuracy.")
flags.DEFINE_list("threads", ["1", "2"], "Thread counts.")
flags.DEFINE_string("worker", None, "Internal: time one variant in this process.")
flags.DEFINE_integer("worker_threads", 1, "Internal.")
flags.DEFINE_string("work_dir", None, "Where the files go (default: a temporary directory).")
FLAGS = flags.FLAGS

VARIANTS = ("none", "float16", "dynamic_int8", "int8")


def _saved_model(run, seq_length: int, path: str) -> None:
  from albert_tf.export.serving import export_classifier  # pylint: disable=g-import-not-at-top
  export_classifier(run.model(), path, run.tokenizer(), seq_length, run.labels,
                    inputs=run.text_inputs)


def _time_worker(path: str, threads: int) -> float:
  """Median ms of one call in this process (a SavedModel directory or a .tflite file)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  texts = {"sentence1": "The quick brown fox jumps over the lazy dog " * 8,
           "sentence2": "A fast auburn fox leapt over a sleepy hound " * 8}
  if os.path.isdir(path):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    import tensorflow_text  # pylint: disable=g-import-not-at-top,unused-import  (its ops)
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    serve = tf.saved_model.load(path).signatures["serving_default"]
    names = set(serve.structured_input_signature[1])
    call = lambda: serve(**{k: tf.constant([v]) for k, v in texts.items() if k in names})
  else:
    from albert_tf.export import tflite  # pylint: disable=g-import-not-at-top
    runner = tflite.load_interpreter(model_path=path, num_threads=threads).get_signature_runner()
    names = set(runner.get_input_details())
    inputs = {k: np.array([v.encode()], dtype=object) for k, v in texts.items() if k in names}
    call = lambda: runner(**inputs)
  for _ in range(3):
    call()
  times = []
  for _ in range(30):
    start = time.perf_counter()
    call()
    times.append(time.perf_counter() - start)
  return 1000 * statistics.median(times)


def _accuracy(path: str, saved_path: str, run, data_dir: str, limit: int) -> tuple:
  """(dev accuracy, label agreement with the SavedModel, largest probability difference
  from it) of a .tflite file."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from albert_tf.data import glue  # pylint: disable=g-import-not-at-top
  from albert_tf.export import tflite  # pylint: disable=g-import-not-at-top
  from albert_tf.commands.export_tflite import example_inputs  # pylint: disable=g-import-not-at-top
  dev = glue.read_examples(data_dir, run.glue_task, "dev")[:limit]
  labels = np.array([run.problem.target(e.label, "") for e in dev])
  saved = tf.saved_model.load(saved_path).signatures["serving_default"]
  saved_names = run.text_inputs
  want = np.concatenate([saved(**{n: tf.constant([getattr(e, a) for e in dev[i:i + 32]])
                                  for n, a in zip(saved_names, ("text_a", "text_b"))}
                               )["probabilities"].numpy() for i in range(0, len(dev), 32)])
  if path == saved_path:
    return float(np.mean(want.argmax(-1) == labels)), 1.0, 0.0
  runner = tflite.load_interpreter(model_path=path).get_signature_runner()
  got = np.concatenate([runner(**example_inputs(e, run.text_inputs))["probabilities"]
                        for e in dev])
  return (float(np.mean(got.argmax(-1) == labels)),
          float(np.mean(got.argmax(-1) == want.argmax(-1))), float(np.abs(got - want).max()))


def main(_):
  if FLAGS.worker:
    print(json.dumps(_time_worker(FLAGS.worker, FLAGS.worker_threads)))
    return
  from albert_tf import runs  # pylint: disable=g-import-not-at-top
  from albert_tf.commands import export_tflite  # pylint: disable=g-import-not-at-top
  work = FLAGS.work_dir or tempfile.mkdtemp(prefix="tflite_bench_")
  os.makedirs(work, exist_ok=True)
  model_dir, data_dir = FLAGS.model_dir, FLAGS.data_dir
  with_accuracy = bool(model_dir and data_dir)
  if not model_dir:
    model_dir, generated = benchmarking.classifier_run(work, FLAGS.max_seq_length)
    data_dir = data_dir or generated
  run = runs.Run.read(model_dir, "--model_dir", ["classification"])
  seq = FLAGS.max_seq_length
  paths = {"SavedModel": os.path.join(work, "saved_model")}
  if not os.path.exists(paths["SavedModel"]):
    _saved_model(run, seq, paths["SavedModel"])
  for q in VARIANTS:
    paths[q] = os.path.join(work, f"{q}.tflite")
    if not os.path.exists(paths[q]):
      export_tflite.run(export_tflite.TFLiteOptions(model=model_dir, output_file=paths[q], quantization=q,
                                      max_seq_length=seq, data_dir=data_dir))
  latency = {(k, t): [] for k in paths for t in FLAGS.threads}
  for _ in range(FLAGS.rounds):
    for t in FLAGS.threads:
      for k, path in paths.items():
        out = subprocess.run([sys.executable, __file__, f"--worker={path}",
                              f"--worker_threads={t}"], capture_output=True, text=True, check=True)
        latency[(k, t)].append(json.loads(out.stdout.strip().splitlines()[-1]))
  def size(path):
    if os.path.isdir(path):
      return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
    return os.path.getsize(path)
  print(f"\n{run.config.hidden_size}-hidden, {run.config.num_hidden_layers}-layer classifier, "
        f"seq {seq}, batch 1; median of {FLAGS.rounds} processes")
  header = "| model | file (MB) | " + " | ".join(f"ms, {t} thread(s)" for t in FLAGS.threads)
  header += " | dev accuracy | agreement | max prob. difference |" if with_accuracy else " |"
  print(header)
  print("|" + "---|" * (header.count("|") - 1))
  base = {t: statistics.median(latency[("SavedModel", t)]) for t in FLAGS.threads}
  for k, path in paths.items():
    cells = [k, f"{size(path) / 1e6:.1f}"]
    for t in FLAGS.threads:
      ms = statistics.median(latency[(k, t)])
      cells.append(f"{ms:.1f} ({base[t] / ms:.2f}x)")
    if with_accuracy:
      acc, agree, diff = _accuracy(path, paths["SavedModel"], run, data_dir,
                                   FLAGS.max_dev_examples)
      cells += [f"{acc:.3f}", f"{agree:.3f}", f"{diff:.1e}"]
    print("| " + " | ".join(cells) + " |")
  print(f"(files in {work})")


if __name__ == "__main__":
  app.run(main)
