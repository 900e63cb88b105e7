"""Pretraining figures: data-generation throughput and peak RSS, training examples/s.

  python benchmarks/benchmark_pretraining.py --mode=data    # 50 MB generated corpus
  python benchmarks/benchmark_pretraining.py --mode=train   # tiny and base, float32 and bfloat16

The corpus is the pydoc topics that ship with Python, repeated with shuffled
sentence orders until it reaches --corpus_mb, split over --num_files files.
"""

import os
import random
import resource
import subprocess
import sys
import tempfile
import time

from absl import app, flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

flags.DEFINE_enum("mode", "data", ["data", "train"], "What to measure.")
flags.DEFINE_integer("corpus_mb", 50, "Size of the generated corpus.")
flags.DEFINE_integer("num_files", 10, "Input files of the corpus.")
flags.DEFINE_integer("num_workers", 2, "create_pretraining_data.py --num_workers.")
flags.DEFINE_integer("max_seq_length", 512, "Sequence length of the data benchmark.")
flags.DEFINE_integer("dupe_factor", 1, "dupe_factor of the data benchmark.")
flags.DEFINE_integer("train_steps", 30, "Timed training steps per configuration.")
flags.DEFINE_string("work_dir", None, "Scratch directory (default: a temporary one).")
FLAGS = flags.FLAGS


def _vocab(work):
  from albert_tf.text import vocab
  from albert_tf.data import sample_corpus
  model = os.path.join(work, "pydoc.model")
  if not os.path.exists(model):
    corpus = sample_corpus.write_pydoc_corpus(os.path.join(work, "pydoc.txt"))
    vocab.train_vocab(corpus, model[:-len(".model")], vocab_size=3000)
  return model


def _corpus(work, megabytes, num_files):
  from albert_tf.data import sample_corpus
  docs = [d for d in sample_corpus.pydoc_documents() if d]
  rng = random.Random(0)
  per_file = megabytes * 2**20 // num_files
  paths = []
  for k in range(num_files):
    path = os.path.join(work, f"corpus-{k:02d}.txt")
    paths.append(path)
    size = 0
    with open(path, "w", encoding="utf-8") as f:
      while size < per_file:
        doc = list(rng.choice(docs))
        rng.shuffle(doc)
        text = "\n".join(doc) + "\n\n"
        f.write(text)
        size += len(text.encode("utf-8"))
  return paths


def measure_data(work):
  spm = _vocab(work)
  files = _corpus(work, FLAGS.corpus_mb, FLAGS.num_files)
  total = sum(os.path.getsize(p) for p in files)
  outputs = ",".join(os.path.join(work, f"out-{k}.tfrecord") for k in range(4))
  cmd = [sys.executable, os.path.join(ROOT, "create_pretraining_data.py"),
         f"--input_file={os.path.join(work, 'corpus-*.txt')}", f"--output_file={outputs}",
         f"--spm_model_file={spm}", f"--max_seq_length={FLAGS.max_seq_length}",
         f"--dupe_factor={FLAGS.dupe_factor}", f"--num_workers={FLAGS.num_workers}",
         "--overwrite"]
  start = time.time()
  result = subprocess.run(cmd, capture_output=True, text=True)
  seconds = time.time() - start
  if result.returncode:
    raise SystemExit(result.stderr[-3000:])
  peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20  # GiB (ru_maxrss is KiB)
  print(result.stdout.strip().splitlines()[-1])
  print(f"corpus {total / 2**20:.1f} MB in {FLAGS.num_files} files, {FLAGS.num_workers} workers, "
        f"max_seq_length {FLAGS.max_seq_length}, dupe_factor {FLAGS.dupe_factor}: "
        f"{seconds:.1f} s = {total / 2**20 / seconds:.2f} MB/s; "
        f"peak RSS of the largest process {peak:.2f} GiB")


def measure_train(work):
  from albert_tf import AlbertConfig, PRESETS
  from albert_tf.data import pretraining as pd
  spm = _vocab(work)
  configs = {
      "tiny": (dict(vocab_size=30000, embedding_size=64, hidden_size=128, num_hidden_layers=4,
                    num_attention_heads=4, intermediate_size=256, max_position_embeddings=512),
               32, 128),
      "base": (PRESETS["base_v2"], 8, 128),
  }
  corpus = _corpus(work, 2, 1)
  for name, (cfg, batch, seq) in configs.items():
    data = os.path.join(work, f"train-{seq}.tfrecord")
    if not os.path.exists(data):
      pd.write_pretraining_data(corpus, [data], spm, pd.DataOptions(
          max_seq_length=seq, max_predictions_per_seq=20, dupe_factor=1), progress=False)
    config_file = os.path.join(work, f"{name}.json")
    AlbertConfig.from_dict(cfg).to_json_file(config_file)
    for dtype in ("float32", "bfloat16"):
      out = tempfile.mkdtemp(dir=work)
      log_steps = max(FLAGS.train_steps // 3, 1)
      cmd = [sys.executable, os.path.join(ROOT, "run_pretraining.py"), f"--input_file={data}",
             f"--output_dir={out}", f"--albert_config_file={config_file}", "--do_train",
             f"--train_batch_size={batch}", f"--max_seq_length={seq}",
             "--max_predictions_per_seq=20", f"--num_train_steps={log_steps + FLAGS.train_steps}",
             "--num_warmup_steps=2", f"--save_checkpoints_steps={10**6}",
             f"--log_steps={log_steps}", f"--dtype={dtype}", "--noexport_original_checkpoint"]
      result = subprocess.run(cmd, capture_output=True, text=True)
      if result.returncode:
        raise SystemExit(result.stderr[-3000:])
      with open(os.path.join(out, "train_log.csv")) as f:
        rows = f.read().strip().splitlines()[1:]
      rates = [float(r.split(",")[-1]) for r in rows[1:]]  # the first window includes tracing
      print(f"{name:5s} batch {batch} seq {seq} {dtype:8s}: "
            f"{sum(rates) / len(rates):.1f} examples/s (windows: "
            f"{', '.join(f'{r:.1f}' for r in rates)})")


def main(_):
  work = FLAGS.work_dir or tempfile.mkdtemp(prefix="albert_bench_")
  os.makedirs(work, exist_ok=True)
  (measure_data if FLAGS.mode == "data" else measure_train)(work)


if __name__ == "__main__":
  app.run(main)
