"""`make demo`: the whole ALBERT pipeline on Python's own documentation, no download.

1. a SentencePiece vocabulary trained on the stdlib `pydoc_data` topics (create_vocab.py)
2. SOP + n-gram-masking pretraining data from the same text (create_pretraining_data.py)
3. a small ALBERT pretrained for a few minutes (run_pretraining.py)
4. TF-Hub SavedModels of its encoder and preprocessor (hub_export/export.py)
5. an MRPC-format paraphrase task generated from that text, fine-tuned from the
   SavedModel with run_classifier.py --albert_hub_module_handle=... --spm_model_file=from_tf_hub
6. dev accuracy and F1 next to the majority-class baseline
7. the fine-tuned model as a dynamic-int8 TFLite file that takes raw text, classifying
   two dev pairs with LiteRT; and where everything went.

Each step is printed as the command line that does it (run it to redo or adapt the step)
and runs that command's code, all in this one process; `--quick` shrinks every step for a
smoke run.
"""

import datetime
import json
import os
import shlex
import sys
import time
import warnings

from absl import app, flags, logging

from albert_tf import console  # pylint: disable=g-import-not-at-top,wrong-import-position

console.hide_start_up()   # before TensorFlow is imported: its lines go to <output_dir>/log.txt
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # TF imports tf_keras, not Keras 3 (1.7 s)
ROOT = os.path.dirname(os.path.abspath(__file__))
flags.DEFINE_string("output_dir", None, "Where to write; default demo_output/run-<time>.")
flags.DEFINE_bool("quick", False, "A much shorter run (smoke test), not meant to learn much.")
flags.DEFINE_integer("seed", 12345, "Seed of pretraining's and fine-tuning's initialization and "
                     "data order (the scripts' --seed).")
FLAGS = flags.FLAGS

# A small ALBERT: factorized embeddings (E=64 < H=128), one shared block applied 4 times.
MODEL = dict(vocab_size=2000, embedding_size=64, hidden_size=128, num_hidden_layers=4,
             num_hidden_groups=1, inner_group_num=1, num_attention_heads=4,
             intermediate_size=512, hidden_act="gelu", hidden_dropout_prob=0.0,
             attention_probs_dropout_prob=0.0, max_position_embeddings=128,
             type_vocab_size=2, initializer_range=0.02)
SEQ = 64  # short sequences keep the whole demo within minutes on 2 CPU cores


def mrpc_flags(glue_dir: str, output_dir: str, train_step: int, seed: int, **more) -> dict:
  """run_classifier.py's flags of the demo's MRPC fine-tuning, besides the model's source:
  one declaration for the demo's run, its student and tools/lite_table.py's runs."""
  return dict(task_name="MRPC", data_dir=glue_dir, output_dir=output_dir, **more,
              max_seq_length=SEQ, do_train=True, do_eval=True, train_batch_size=32,
              eval_batch_size=64, predict_batch_size=64, learning_rate=2e-4,
              train_step=train_step, warmup_step=train_step // 10,
              save_checkpoints_steps=max(train_step // 5, 1), optimizer="adamw",
              log_steps=max(train_step // 60, 1), seed=seed)


# The steps run in this one process, each printed as the command line that does the same
# alone: one TensorFlow start-up instead of one per step. What each script runs is
# albert_tf/commands/table.py's.


def command_line(flag_values: dict) -> list:
  """The flags as a script takes them: --name=value, --name / --noname for booleans."""
  return [(f"--{k}" if v else f"--no{k}") if isinstance(v, bool) else f"--{k}={v}"
          for k, v in flag_values.items()]


def _run(step: str, script: str, **flag_values) -> float:
  """Runs `script`'s command with these flags, printing its command line; returns the
  seconds taken."""
  shown = [script] + command_line(flag_values)
  print(f"\n== {step}\n$ python {' '.join(shlex.quote(c) for c in shown)}", flush=True)
  from albert_tf import cli  # pylint: disable=g-import-not-at-top
  from albert_tf.commands import table  # pylint: disable=g-import-not-at-top
  options, run, _ = table.COMMANDS[table.BY_SCRIPT[script]].load()
  cli.tune_gc()   # as the scripts do, once TensorFlow is imported
  started = time.time()
  run(options(**flag_values))
  sys.stdout.flush()
  return time.time() - started


def _classify_on_device(tflite_file: str, glue_dir: str) -> None:
  """Classifies a positive and a negative dev pair with the TFLite file (LiteRT)."""
  from albert_tf.data import glue  # pylint: disable=g-import-not-at-top
  from albert_tf.export import tflite  # pylint: disable=g-import-not-at-top
  from albert_tf.commands.export_tflite import example_inputs  # pylint: disable=g-import-not-at-top
  dev = glue.read_examples(glue_dir, glue.get_task("MRPC"), "dev")
  pairs = [next(e for e in dev if e.label == label) for label in ("1", "0")]
  runner = tflite.load_interpreter(model_path=tflite_file).get_signature_runner()
  for example in pairs:
    inputs = example_inputs(example, ["sentence1", "sentence2"])
    probabilities = runner(**inputs)["probabilities"][0]
    print(f"  {example.text_a!r}\n  {example.text_b!r}\n"
          f"    -> paraphrase probability {probabilities[1]:.3f} (label {example.label})")
  ms = tflite.latency_ms(tflite_file, inputs, num_threads=1)
  print(f"  {os.path.getsize(tflite_file) / 2**20:.1f} MiB, {ms:.1f} ms per pair on one thread")


def _rows_per_second(run_dirs, glue_dir: str, rounds: int = 3):
  """Each run's dev pairs per second through predict.py's Predictor in float32 (its batches
  of 64 sorted by length), the best of `rounds` alternating passes over 5 copies of dev."""
  from albert_tf import Predictor  # pylint: disable=g-import-not-at-top
  from albert_tf.data import glue  # pylint: disable=g-import-not-at-top
  pairs = [dict(sentence1=e.text_a, sentence2=e.text_b)
           for e in glue.read_examples(glue_dir, glue.get_task("MRPC"), "dev")] * 5
  # float32 both: the speed-up is the passes' (predict.py's default dtype, auto, may take
  # bfloat16 for one run and not the other on a model this small).
  predictors = [Predictor.load(path, 64, dtype="float32") for path in run_dirs]
  best = [0.0] * len(run_dirs)
  for _ in range(rounds + 1):   # (the first round traces)
    for i, predictor in enumerate(predictors):
      started = time.perf_counter()
      predictor.predict(pairs)
      best[i] = max(best[i], len(pairs) / (time.perf_counter() - started))
  return best


def _results(path: str) -> dict:
  values = {}
  with open(path) as f:
    for line in f:
      key, _, value = line.partition(" = ")
      try:
        values[key.strip()] = float(value)
      except ValueError:    # (the line of a run that did not learn)
        values[key.strip()] = value.strip()
  return values


def main(argv):
  del argv
  out = os.path.abspath(FLAGS.output_dir or os.path.join(
      ROOT, "demo_output", "run-" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S")))
  if os.path.exists(out) and os.listdir(out):
    raise app.UsageError(f"--output_dir {out} exists and is not empty; choose another")
  os.makedirs(out, exist_ok=True)
  console.keep_logs()       # (absl's lines into log.txt; shown if the user asked for them)
  console.write_log(out)
  if not console.quiet():
    logging.set_verbosity(logging.WARNING)
  quick = FLAGS.quick
  warnings.filterwarnings("ignore")
  started = time.time()
  timings = {}
  sys.path.insert(0, ROOT)
  from albert_tf.data import sample_corpus  # pylint: disable=g-import-not-at-top

  corpus = sample_corpus.write_pydoc_corpus(os.path.join(out, "pydoc_corpus.txt"))
  print(f"Corpus: the pydoc topics of Python {sys.version.split()[0]}, "
        f"{os.path.getsize(corpus) / 1e6:.1f} MB -> {corpus}")
  spm_prefix = os.path.join(out, "vocab", "pydoc-2k")
  os.makedirs(os.path.dirname(spm_prefix))
  timings["vocabulary"] = _run("1. SentencePiece vocabulary", "create_vocab.py",
                               input_file=corpus, model_prefix=spm_prefix,
                               vocab_size=MODEL["vocab_size"])
  spm_model = spm_prefix + ".model"

  data = os.path.join(out, "pretraining_data")
  os.makedirs(data)
  shards = ",".join(os.path.join(data, f"pydoc-{i}.tfrecord") for i in range(2))
  timings["pretraining data"] = _run(
      "2. Pretraining data (sentence-order pairs, n-gram masking)", "create_pretraining_data.py",
      input_file=corpus, output_file=shards, spm_model_file=spm_model, max_seq_length=SEQ,
      max_predictions_per_seq=20, dupe_factor=1 if quick else 4,
      num_workers=1 if quick else 2)   # each worker process imports TensorFlow anew

  config_file = os.path.join(out, "albert_config.json")
  with open(config_file, "w") as f:
    # --quick: the shared block applied once, a graph a quarter the size to trace in
    # each step (the run's time is mostly tracing, not steps).
    json.dump(dict(MODEL, num_hidden_layers=1) if quick else MODEL, f, indent=2)
  pretrain_dir = os.path.join(out, "pretraining")
  pretrain_steps = 20 if quick else 700
  timings["pretraining"] = _run(
      "3. Pretraining (masked LM + sentence order, the faster dtype here)", "run_pretraining.py",
      input_file=os.path.join(data, "pydoc-*.tfrecord"), output_dir=pretrain_dir,
      albert_config_file=config_file, do_train=True, do_eval=True, train_batch_size=32,
      eval_batch_size=32, max_seq_length=SEQ, max_predictions_per_seq=20, optimizer="lamb",
      learning_rate=2e-3, num_train_steps=pretrain_steps, num_warmup_steps=pretrain_steps // 10,
      save_checkpoints_steps=max(pretrain_steps // 4, 1), max_eval_steps=20, dtype="auto",
      log_steps=max(pretrain_steps // 50, 1), seed=FLAGS.seed)

  hub_dir = os.path.join(out, "hub")
  timings["TF-Hub export"] = _run(
      "4. TF-Hub SavedModels (encoder with .mlm/.sop, preprocessor)", "hub_export/export.py",
      # The pretraining run: its config, its latest weights and the vocabulary its data
      # was made with (create_pretraining_data.py recorded it beside the shards).
      albert_directory=pretrain_dir, export_path=os.path.join(hub_dir, "albert_encoder"),
      export_preprocessing_path=os.path.join(hub_dir, "albert_preprocess"),
      default_seq_length=SEQ)

  glue_dir = os.path.join(out, "glue_data", "MRPC")
  sample_corpus.write_paraphrase_task(glue_dir, num_train=300 if quick else 3000,
                                      num_dev=100 if quick else 400, num_test=100 if quick else 400)
  print(f"\nMRPC-format paraphrase task (train.tsv, dev.tsv, test.tsv as GLUE has them): {glue_dir}")
  mrpc_dir = os.path.join(out, "mrpc")
  train_step = 10 if quick else 300
  timings["fine-tuning"] = _run(
      "5. Fine-tuning on MRPC from the TF-Hub SavedModel", "run_classifier.py",
      **mrpc_flags(glue_dir, mrpc_dir, train_step, FLAGS.seed,
                   albert_hub_module_handle=os.path.join(hub_dir, "albert_encoder"),
                   spm_model_file="from_tf_hub", do_predict=True,
                   export_dir=os.path.join(mrpc_dir, "serving")))

  student_dir = os.path.join(out, "mrpc_lite")
  depth = 1 if quick else MODEL["num_hidden_layers"]   # (the MRPC run's passes)
  passes = max(depth // 2, 1)
  timings["ALBERT lite"] = _run(
      f"6. ALBERT lite: the shared block applied {passes} times, taught by the MRPC run",
      "run_classifier.py", **mrpc_flags(glue_dir, student_dir, train_step, FLAGS.seed,
                                        num_hidden_layers=passes, teacher=mrpc_dir))
  speed = _rows_per_second([mrpc_dir, student_dir], glue_dir)

  pre = _results(os.path.join(pretrain_dir, "eval_results.txt"))
  mrpc = _results(os.path.join(mrpc_dir, "eval_results.txt"))
  lite = _results(os.path.join(student_dir, "eval_results.txt"))
  print("\n== 7. Results")
  print(f"Pretraining ({pretrain_steps} steps of 32 x {SEQ} tokens), on its training data as the "
        "original evaluates:")
  print(f"  masked-LM accuracy        {pre['masked_lm_accuracy']:.3f}")
  print(f"  sentence-order accuracy   {pre['sentence_order_accuracy']:.3f}")
  print(f"MRPC-format dev set (best of {train_step} fine-tuning steps, at step "
        f"{int(mrpc['global_step'])}):")
  passes_of = lambda n: f"{n} pass" + ("es" if n > 1 else "")
  print(f"  {'':34s}accuracy    F1   pairs/s (predict.py, float32)")
  print(f"  {'fine-tuned ALBERT (' + passes_of(depth) + ')':34s}{mrpc['accuracy']:.3f}   "
        f"{mrpc['f1']:.3f}   {speed[0]:7.0f}")
  print(f"  {'ALBERT lite, taught (' + passes_of(passes) + ')':34s}{lite['accuracy']:.3f}   "
        f"{lite['f1']:.3f}   {speed[1]:7.0f} ({speed[1] / speed[0]:.2f}x)")
  print(f"  {'majority class':34s}{mrpc['majority_baseline_accuracy']:.3f}   "
        f"{mrpc['majority_baseline_f1']:.3f}")
  tflite_file = os.path.join(out, "mrpc_dynamic_int8.tflite")
  timings["TFLite"] = _run(
      "8. On device: the MRPC model as a dynamic-int8 TFLite file (raw text in)",
      "hub_export/export_tflite.py", model=mrpc_dir, output_file=tflite_file,
      quantization="dynamic_int8")
  _classify_on_device(tflite_file, glue_dir)

  print("\nWhere everything went:")
  for what, path in (
      ("vocabulary", spm_model), ("pretraining data", data),
      ("pretraining run (TensorBoard, checkpoints)", pretrain_dir),
      ("pretraining learning curve", os.path.join(pretrain_dir, "learning_curve.png")),
      ("TF-Hub encoder / preprocessor", hub_dir),
      ("MRPC run (model.ckpt-best, eval_results.txt)", mrpc_dir),
      ("MRPC learning curve", os.path.join(mrpc_dir, "learning_curve.png")),
      ("GLUE submission file", os.path.join(mrpc_dir, "MRPC.tsv")),
      (f"ALBERT lite run ({passes} passes, taught)", student_dir),
      ("serving SavedModel (raw sentences in)", os.path.join(mrpc_dir, "serving")),
      ("TFLite model (raw sentences in)", tflite_file)):
    print(f"  {what:46s} {path}")
  print(f"  TensorBoard: tensorboard --logdir {out}")
  print("\nTimings: " + ", ".join(f"{k} {v:.0f} s" for k, v in timings.items())
        + f"; total {time.time() - started:.0f} s")


if __name__ == "__main__":
  app.run(main)
