"""Pretraining figures: data-generation throughput and peak RSS, training examples/s.

  python benchmarks/benchmark_pretraining.py --mode=data    # 50 MB generated corpus
  python benchmarks/benchmark_pretraining.py --mode=train   # tiny and base, float32 and bfloat16

The corpus is the pydoc topics that ship with Python, repeated with shuffled
sentence orders until it reaches --corpus_mb, split over --num_files files.

--mode=data runs create_pretraining_data.py once per --data_runs entry (local:N is the
local path with --num_workers=N, direct:N the Beam DirectRunner with
--direct_num_workers=N, each at each --dupe_factors) and prints MB of corpus per
second, the peak RSS of the largest process (each worker is one process) and the
output's size. --baseline_checkout=DIR adds DIR's create_pretraining_data.py (an
older albert_tf checkout) as rows "baseline:N", on the same corpus and flags.
"""

import os
import random
import subprocess
import sys
import tempfile
import time

from absl import app, flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

flags.DEFINE_enum("mode", "data", ["data", "train"], "What to measure.")
flags.DEFINE_integer("corpus_mb", 50, "Size of the generated corpus.")
flags.DEFINE_integer("num_files", 10, "Input files of the corpus.")
flags.DEFINE_list("data_runs", ["local:1", "local:2", "direct:2"],
                  "--mode=data: local:N (--num_workers=N) and direct:N (--runner=DirectRunner "
                  "--direct_num_workers=N) runs.")
flags.DEFINE_string("baseline_checkout", None, "--mode=data: also run this checkout's "
                    "create_pretraining_data.py (rows baseline:N, N from --baseline_workers).")
flags.DEFINE_list("baseline_workers", ["1", "2"], "--num_workers of the baseline rows.")
flags.DEFINE_list("dupe_factors", ["1"], "--mode=data: dupe_factor of each run.")
flags.DEFINE_integer("max_seq_length", 512, "Sequence length of the data benchmark.")
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


def _descendants(pid):
  """pid and every process below it (from /proc)."""
  parents = {}
  for entry in os.listdir("/proc"):
    if entry.isdigit():
      try:
        with open(f"/proc/{entry}/stat") as f:
          parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
      except OSError:
        continue
  found, frontier = {pid}, [pid]
  while frontier:
    p = frontier.pop()
    for child, parent in parents.items():
      if parent == p and child not in found:
        found.add(child)
        frontier.append(child)
  return found


def _peak_rss(pid):
  """Peak RSS (VmHWM, GiB) of pid, and the largest among its descendants, now."""
  peaks = {}
  for p in _descendants(pid):
    try:
      with open(f"/proc/{p}/status") as f:
        for line in f:
          if line.startswith("VmHWM:"):
            peaks[p] = int(line.split()[1]) / 2**20
    except OSError:
      continue
  return peaks.get(pid, 0.0), max([v for p, v in peaks.items() if p != pid], default=0.0)


def _run_data(cmd):
  """(seconds, peak RSS GiB of the main process, of the largest worker, stdout)."""
  start = time.time()
  proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  main = worker = 0.0
  while proc.poll() is None:
    m, w = _peak_rss(proc.pid)
    main, worker = max(main, m), max(worker, w)
    time.sleep(0.2)
  out, err = proc.communicate()
  if proc.returncode:
    raise SystemExit(err[-3000:])
  return time.time() - start, main, worker, out


def measure_data(work):
  spm = _vocab(work)
  files = _corpus(work, FLAGS.corpus_mb, FLAGS.num_files)
  total = sum(os.path.getsize(p) for p in files) / 2**20
  runs = list(FLAGS.data_runs)
  if FLAGS.baseline_checkout:
    runs += [f"baseline:{n}" for n in FLAGS.baseline_workers]
  print(f"corpus {total:.1f} MB in {FLAGS.num_files} files, max_seq_length "
        f"{FLAGS.max_seq_length}; CPU: {_cpu()}")
  print("| run | dupe_factor | seconds | MB/s | MB/s per worker | peak RSS, main process "
        "(GiB) | peak RSS, largest worker (GiB) | output (MB) |")
  print("|---|---|---|---|---|---|---|---|")
  for dupe in FLAGS.dupe_factors:
    for run in runs:
      kind, workers = run.split(":")
      out_dir = os.path.join(work, f"out-{kind}-{workers}-{dupe}")
      root = FLAGS.baseline_checkout if kind == "baseline" else ROOT
      outputs = ",".join(os.path.join(out_dir, f"train-{k}.tfrecord") for k in range(4))
      cmd = [sys.executable, os.path.join(root, "create_pretraining_data.py"),
             f"--input_file={os.path.join(work, 'corpus-*.txt')}", f"--output_file={outputs}",
             f"--spm_model_file={spm}", f"--max_seq_length={FLAGS.max_seq_length}",
             f"--dupe_factor={dupe}", "--overwrite", "--noprogress"]
      cmd += ([f"--runner=DirectRunner", f"--direct_num_workers={workers}"] if kind == "direct"
              else [f"--num_workers={workers}"])
      seconds, main, worker, out = _run_data(cmd)
      size = sum(os.path.getsize(os.path.join(out_dir, f)) for f in os.listdir(out_dir)) / 2**20
      print(f"| {run} | {dupe} | {seconds:.1f} | {total / seconds:.2f} | "
            f"{total / seconds / int(workers):.2f} | {main:.2f} | "
            f"{worker if int(workers) > 1 else main:.2f} | {size:.0f} |", flush=True)
      last_line = out.strip().splitlines()[-1]
  print(f"last run's summary: {last_line}")


def _cpu():
  import re  # pylint: disable=import-outside-toplevel
  info = open("/proc/cpuinfo").read()
  name = re.search(r"model name\s*:\s*(.*)", info).group(1)
  flags_ = set(re.search(r"flags\s*:\s*(.*)", info).group(1).split())
  kinds = [f for f in ("amx_bf16", "avx512_bf16", "avx512f", "avx2") if f in flags_]
  return f"{name} ({', '.join(kinds)}), {os.cpu_count()} cores"


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
