"""docs/own_data.md's table of --long_text at real lengths: dev accuracy of run_classifier.py
on generated texts of 8 or more windows, by where the deciding sentence is.

Builds what the tests build (a pydoc SentencePiece vocabulary and a randomly initialized
small ALBERT, its config as tests/test_glue.py's CFG), writes JSONL sets of 800 train and
200 dev texts of pydoc sentences, each at least `--windows` windows of --max_seq_length=64
pieces 32 apart, with one deciding sentence ("Indeed, ..." for yes, "However, ..." for
no) first, in the middle or last, then runs run_classifier.py for --long_text=truncate and
for windows under each --window_pooling, at each seed, two runs at a time:

  python tools/windows_table.py --seeds=0,1,2,3 --out=/tmp/windows_table
"""

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CFG = dict(vocab_size=1500, embedding_size=16, hidden_size=32, num_hidden_layers=2,
           num_hidden_groups=1, num_attention_heads=2, intermediate_size=64,
           max_position_embeddings=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
MODES = (("truncate", None), ("windows", "mean"), ("windows", "max"), ("windows", "cls_max"))


def long_rows(count, rng, tokenizer, position, windows, seq=64, stride=32):
  """Texts of at least `windows` windows; the deciding sentence at `position`."""
  from albert_tf.data import sample_corpus  # pylint: disable=import-outside-toplevel
  sentences = [s for doc in sample_corpus.pydoc_documents() for s in doc
               if 5 <= len(s.split()) <= 15 and "indeed" not in s.lower()
               and "however" not in s.lower()]
  pieces = seq - 2 + (windows - 1) * stride
  rows = []
  for _ in range(count):
    label = str(rng.choice(["yes", "no"]))
    word = {"yes": "indeed", "no": "however"}[label]
    filler = []
    while len(tokenizer.encode(" ".join(filler))) < pieces:
      filler.append(sentences[int(rng.integers(len(sentences)))])
    at = {"first": 0, "middle": len(filler) // 2, "last": len(filler)}[position]
    text = " ".join(filler[:at] + [f"{word.capitalize()}, it is so; {word}."] + filler[at:])
    rows.append(dict(text=text, label=label))
  return rows


def prepare(out: str, seeds, windows: int):
  """The vocabulary, one model per seed and the data sets; returns their paths."""
  import tf_keras as keras  # pylint: disable=import-outside-toplevel
  from albert_tf import AlbertConfig, AlbertPretrainer, save_original_checkpoint  # pylint: disable=import-outside-toplevel
  from albert_tf.data import sample_corpus  # pylint: disable=import-outside-toplevel
  from albert_tf.text import vocab  # pylint: disable=import-outside-toplevel
  from albert_tf.text.packing import window_starts  # pylint: disable=import-outside-toplevel
  from albert_tf.text.tokenization import FullTokenizer  # pylint: disable=import-outside-toplevel
  os.makedirs(out, exist_ok=True)
  spm = os.path.join(out, "pydoc.model")
  if not os.path.exists(spm):
    vocab.train_vocab(sample_corpus.write_pydoc_corpus(os.path.join(out, "pydoc.txt")),
                      os.path.join(out, "pydoc"), vocab_size=1500)
  models = {}
  for seed in seeds:
    root = os.path.join(out, f"model{seed}")
    if not os.path.exists(os.path.join(root, "albert_config.json")):
      os.makedirs(root, exist_ok=True)
      keras.utils.set_random_seed(seed)
      save_original_checkpoint(AlbertPretrainer(CFG), os.path.join(root, "model.ckpt"))
      AlbertConfig.from_dict(CFG).to_json_file(os.path.join(root, "albert_config.json"))
    models[seed] = root
  tokenizer = FullTokenizer(spm_model_file=spm)
  data = {}
  for position in ("first", "middle", "last"):
    rng = np.random.default_rng(0)
    directory = os.path.join(out, f"data_{position}")
    os.makedirs(directory, exist_ok=True)
    for split, count in (("train", 800), ("dev", 200)):
      rows = long_rows(count, rng, tokenizer, position, windows)
      with open(os.path.join(directory, f"{split}.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    counts = [len(window_starts(len(tokenizer.encode(r["text"])), 62, 32)) for r in rows]
    words = np.mean([len(r["text"].split()) for r in rows])
    print(f"{position}: {min(counts)}-{max(counts)} windows of 64 pieces, {words:.0f} words "
          "a text")
    data[position] = directory
  return spm, models, data


def one_run(out, spm, model, data, position, mode, pooling, seed, steps, learning_rate):
  """Dev accuracy of one run_classifier.py run."""
  name = f"{position}_{mode}_{pooling}_{seed}"
  output = os.path.join(out, "runs", name)
  command = [sys.executable, os.path.join(HERE, "run_classifier.py"),
             f"--train_file={data}/train.jsonl", f"--dev_file={data}/dev.jsonl",
             f"--albert_config_file={model}/albert_config.json",
             f"--init_checkpoint={model}/model.ckpt", f"--spm_model_file={spm}",
             "--max_seq_length=64", f"--train_step={steps}", "--warmup_step=50",
             "--save_checkpoints_steps=100", "--train_batch_size=16",
             f"--learning_rate={learning_rate}", f"--seed={seed}", "--do_train", "--do_eval",
             "--noprogress", f"--long_text={mode}", f"--output_dir={output}"]
  if pooling:
    command += ["--doc_stride=32", f"--window_pooling={pooling}"]
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  subprocess.run(["rm", "-rf", output], check=True)
  done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=HERE)
  found = re.search(r"eval: .*?\baccuracy = ([0-9.]+)", done.stdout)
  if not found:
    raise RuntimeError(f"{name}: {done.stderr[-2000:]}")
  return (position, mode, pooling, seed), float(found.group(1))


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--out", default="/tmp/windows_table")
  parser.add_argument("--seeds", default="0,1,2,3")
  parser.add_argument("--windows", type=int, default=8)
  parser.add_argument("--train_step", type=int, default=500)
  parser.add_argument("--learning_rate", type=float, default=2e-3)
  parser.add_argument("--parallel", type=int, default=2)
  args = parser.parse_args()
  seeds = [int(s) for s in args.seeds.split(",")]
  spm, models, data = prepare(args.out, seeds, args.windows)
  jobs = [(position, mode, pooling, seed) for position in data for mode, pooling in MODES
          for seed in seeds]
  results = {}
  with concurrent.futures.ThreadPoolExecutor(args.parallel) as pool:
    futures = [pool.submit(one_run, args.out, spm, models[seed], data[position], position,
                           mode, pooling, seed, args.train_step, args.learning_rate)
               for position, mode, pooling, seed in jobs]
    for future in concurrent.futures.as_completed(futures):
      key, accuracy = future.result()
      results[key] = accuracy
      print(key, accuracy, flush=True)
  print("\n| deciding sentence | mode | dev accuracy, seeds " + ", ".join(map(str, seeds))
        + " | lowest |\n|---|---|---|---|")
  for position in data:
    for mode, pooling in MODES:
      values = [results[(position, mode, pooling, s)] for s in seeds]
      shown = mode if pooling is None else f"windows, `{pooling}`"
      print(f"| {position} | {shown} | {', '.join(f'{v:.3f}' for v in values)} | "
            f"**{min(values):.3f}** |")


if __name__ == "__main__":
  main()
