"""Same results before and after a change: every command line on tiny generated data.

Runs create_vocab.py, create_pretraining_data.py, run_pretraining.py,
hub_export/export.py, run_classifier.py (from the TF-Hub export), run_squad.py
(v2.0, from the pretraining checkpoint) and run_race.py with fixed seeds on a
tiny model, and prints what they logged (the last training row of each run
and its evaluation results) as one JSON object. Run it on two checkouts and
compare:

  python tools/reference_runs.py --repo=/tmp/before > before.json
  python tools/reference_runs.py > after.json            # same --inputs: same data
  python tools/reference_runs.py --compare before.json after.json

Only the command lines and `albert_tf.data.sample_corpus` are used, so any
revision of the project can be measured. Takes about 3 minutes on 2 cores.
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# No dropout: its random streams differ between processes, which would hide a change.
MODEL = dict(vocab_size=800, embedding_size=16, hidden_size=32, num_hidden_layers=2,
             num_hidden_groups=1, inner_group_num=1, num_attention_heads=4,
             intermediate_size=64, hidden_act="gelu", hidden_dropout_prob=0.0,
             attention_probs_dropout_prob=0.0, max_position_embeddings=64,
             type_vocab_size=2, initializer_range=0.02)
SEQ = 48


def run(repo, script, **flags):
  cmd = [sys.executable, os.path.join(repo, script), "--verbosity=-1"]
  for name, value in flags.items():
    cmd.append(f"--{name}" if value is True else f"--no{name}" if value is False
               else f"--{name}={value}")
  # One thread: threaded reductions otherwise make two runs of the same revision differ by
  # as much as a change would.
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=repo, PYTHONWARNINGS="ignore",
             TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS="1", OMP_NUM_THREADS="1")
  done = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
  if done.returncode:
    sys.exit(f"{script} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def last_row(path):
  with open(path) as f:
    row = list(csv.DictReader(f))[-1]
  return {k: float(v) for k, v in row.items() if k != "examples_per_second"}


def results(path):
  with open(path) as f:
    pairs = (line.rstrip("\n").split(" = ", 1) for line in f if " = " in line)
    out = {}
    for k, v in pairs:
      try:
        out[k] = float(v)
      except ValueError:
        pass
    return out


def measure(repo, inputs):
  """Runs everything in a fresh directory; the vocabulary and pretraining data are made
  in `inputs` once and reused (SentencePiece training is not bit-reproducible)."""
  sys.path.insert(0, repo)
  from albert_tf.data import sample_corpus  # pylint: disable=g-import-not-at-top
  out = {}
  os.makedirs(inputs, exist_ok=True)
  corpus, spm = os.path.join(inputs, "corpus.txt"), os.path.join(inputs, "spm.model")
  pre_data = os.path.join(inputs, "pre.tfrecord")
  init = os.path.join(inputs, "init", "model.ckpt-0")
  if not os.path.exists(pre_data):
    # Unseeded Keras initializers draw from Python's `random`: start from saved weights.
    from albert_tf import (AlbertPretrainer,  # pylint: disable=g-import-not-at-top
                           save_original_checkpoint)
    save_original_checkpoint(AlbertPretrainer(dict(MODEL)), init)
    sample_corpus.write_pydoc_corpus(corpus)
    run(repo, "create_vocab.py", input_file=corpus, model_prefix=spm[:-len(".model")],
        vocab_size=MODEL["vocab_size"])
    run(repo, "create_pretraining_data.py", input_file=corpus, output_file=pre_data,
        spm_model_file=spm, max_seq_length=SEQ, max_predictions_per_seq=8, dupe_factor=1)
  with tempfile.TemporaryDirectory() as tmp:
    config = os.path.join(tmp, "albert_config.json")
    with open(config, "w") as f:
      json.dump(MODEL, f)
    pre = os.path.join(tmp, "pretraining")
    run(repo, "run_pretraining.py", input_file=pre_data,
        output_dir=pre, albert_config_file=config, init_checkpoint=init, do_train=True,
        do_eval=True,
        train_batch_size=16, eval_batch_size=16, max_seq_length=SEQ,
        max_predictions_per_seq=8, learning_rate=2e-3, num_train_steps=40,
        num_warmup_steps=4, save_checkpoints_steps=20, max_eval_steps=5, log_steps=10)
    out["pretraining_train"] = last_row(os.path.join(pre, "train_log.csv"))
    out["pretraining_eval"] = results(os.path.join(pre, "eval_results.txt"))
    init = os.path.join(pre, "model.ckpt-40")
    hub = os.path.join(tmp, "hub")
    run(repo, "hub_export/export.py", albert_config_file=config, init_checkpoint=init,
        spm_model_file=spm, export_path=hub)

    glue = sample_corpus.write_paraphrase_task(os.path.join(tmp, "MRPC"), num_train=200,
                                               num_dev=64, num_test=32)
    mrpc = os.path.join(tmp, "mrpc")
    run(repo, "run_classifier.py", dropout_prob=0.0, task_name="MRPC", data_dir=glue,
        output_dir=mrpc,
        albert_hub_module_handle=hub, spm_model_file="from_tf_hub", max_seq_length=SEQ,
        do_train=True, do_eval=True, do_predict=True, train_batch_size=16,
        eval_batch_size=32, predict_batch_size=32, learning_rate=1e-3, train_step=30,
        warmup_step=3, save_checkpoints_steps=10, log_steps=10)
    out["glue_train"] = last_row(os.path.join(mrpc, "train_log.csv"))
    out["glue_eval"] = results(os.path.join(mrpc, "eval_results.txt"))

    squad_dir = os.path.join(tmp, "squad")
    os.makedirs(squad_dir)
    train_json = sample_corpus.write_squad_task(os.path.join(squad_dir, "train.json"), 160,
                                                version_2_with_negative=True, seed=1)
    dev_json = sample_corpus.write_squad_task(os.path.join(squad_dir, "dev.json"), 40,
                                              version_2_with_negative=True, seed=2)
    squad = os.path.join(tmp, "squad_out")
    run(repo, "run_squad.py", dropout_prob=0.0, train_file=train_json, predict_file=dev_json,
        version_2_with_negative=True, output_dir=squad, albert_config_file=config,
        init_checkpoint=init, spm_model_file=spm, do_train=True, do_predict=True,
        max_seq_length=SEQ, doc_stride=16, max_query_length=12, train_batch_size=16,
        predict_batch_size=16, learning_rate=1e-3, num_train_epochs=1,
        save_checkpoints_steps=10, log_steps=10)
    out["squad_train"] = last_row(os.path.join(squad, "train_log.csv"))
    out["squad_eval"] = results(os.path.join(squad, "eval_results.txt"))

    race_data = sample_corpus.write_race_task(os.path.join(tmp, "race"),
                                              sizes=(("train", 40), ("dev", 12), ("test", 8)))
    race = os.path.join(tmp, "race_out")
    run(repo, "run_race.py", dropout_prob=0.0, data_dir=race_data, output_dir=race,
        albert_config_file=config,
        init_checkpoint=init, spm_model_file=spm, do_train=True, do_eval=True,
        do_predict=True, max_seq_length=SEQ, max_qa_length=16, train_batch_size=8,
        eval_batch_size=8, predict_batch_size=8, learning_rate=1e-3, train_step=20,
        warmup_step=2, save_checkpoints_steps=10, log_steps=10)
    out["race_train"] = last_row(os.path.join(race, "train_log.csv"))
    out["race_eval"] = results(os.path.join(race, "eval_results.txt"))
  return out


def compare(before_path, after_path):
  with open(before_path) as f:
    before = json.load(f)
  with open(after_path) as f:
    after = json.load(f)
  worst = 0.0
  print(f"{'run':18s} {'metric':28s} {'before':>12s} {'after':>12s} {'|diff|':>9s}")
  for run_name in before:
    for key, old in before[run_name].items():
      new = after.get(run_name, {}).get(key)
      diff = abs(new - old) if new is not None else float("inf")
      worst = max(worst, diff)
      print(f"{run_name:18s} {key:28s} {old:12.6g} "
            f"{'missing' if new is None else f'{new:12.6g}':>12s} {diff:9.2g}")
  print(f"largest difference: {worst:.3g}")


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--repo", default=HERE, help="checkout whose command lines to run")
  parser.add_argument("--inputs",
                      default=os.path.join(tempfile.gettempdir(), "albert_tf_reference"),
                      help="where the vocabulary and pretraining data are made once and reused")
  parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
  args = parser.parse_args()
  if args.compare:
    compare(*args.compare)
  else:
    print(json.dumps(measure(os.path.abspath(args.repo), args.inputs), indent=1))


if __name__ == "__main__":
  main()
