"""Fine-tuning from a TF-Hub module built as Google built theirs, against albert_tf's own
export of the same checkpoint; and (with the [bench] extra) the module converted to
Hugging Face, against transformers.

From a released directory (albert_config.json, model.ckpt-best or --checkpoint_name,
30k-clean.model: the demo's pretraining output once converted by convert_checkpoint.py
does), it writes
1. albert_tf's export (hub_export/export.py), and
2. tf-models-official's (its tf2_albert_encoder_checkpoint_converter, then its
   export_tfhub_lib.export_model with an `albert` EncoderConfig, with_mlm=True),
runs run_classifier.py from each with the same data, steps and seeds, and prints the dev
accuracies; then converts module 2 with convert_checkpoint.py --output_format=hf and, where
transformers is installed, prints the largest difference of its outputs from the module's.

  python benchmarks/tf_models_module.py --release=DIR --data_dir=GLUE_MRPC_DIR \
      --work_dir=/tmp/modules [--seeds=1,2,3 --train_step=300]
"""

import os
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from absl import app, flags
import numpy as np

from common import export_tf_models_module  # the builder the tests use

flags.DEFINE_string("release", None, "A released-layout directory (original TF1 names).")
flags.DEFINE_string("checkpoint_name", "model.ckpt-best", "Its checkpoint prefix.")
flags.DEFINE_string("data_dir", None, "MRPC-format data (train.tsv, dev.tsv, test.tsv).")
flags.DEFINE_string("work_dir", None, "Where the modules and runs go (must not exist).")
flags.DEFINE_list("seeds", ["1", "2", "3"], "Fine-tuning seeds, each from both modules.")
flags.DEFINE_integer("train_step", 300, "Fine-tuning steps.")
flags.DEFINE_integer("max_seq_length", 64, "Sequence length.")
flags.DEFINE_bool("parity_only", False, "Only the transformers parity, on the modules an "
                  "earlier run left in --work_dir (e.g. from a venv with the [bench] extra).")
flags.DEFINE_float("learning_rate", 2e-4, "Peak learning rate (the demo's, for its small model).")


def _script(name, *args):
  done = subprocess.run([sys.executable, os.path.join(ROOT, name), *args], capture_output=True,
                        text=True, cwd=ROOT)
  if done.returncode:
    raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
  return done.stdout


def _dev_accuracy(run_dir):
  with open(os.path.join(run_dir, "eval_results.txt")) as f:
    values = {k.strip(): v for k, _, v in (line.partition(" = ") for line in f) if v}
  return float(values.get("eval_accuracy", values.get("accuracy")))


def main(_):
  release, work = FLAGS.release, FLAGS.work_dir
  spm = os.path.join(release, "30k-clean.model")
  modules = {"albert_tf export": os.path.join(work, "albert_tf_export"),
             "tf-models module": os.path.join(work, "tf_models_module")}
  hf_dir = os.path.join(work, "module_as_hf")
  if not FLAGS.parity_only:
    _fine_tune(release, spm, work, modules, hf_dir)
  _parity(modules["tf-models module"], hf_dir)


def _fine_tune(release, spm, work, modules, hf_dir):
  """Both modules written, fine-tuned with each seed, the dev accuracies printed."""
  os.makedirs(work)
  _script("hub_export/export.py", f"--albert_directory={release}",
          f"--checkpoint_name={FLAGS.checkpoint_name}",
          f"--export_path={modules['albert_tf export']}")
  export_tf_models_module(release, FLAGS.checkpoint_name, spm, modules["tf-models module"])
  results = {}
  for name, module in modules.items():
    for seed in FLAGS.seeds:
      out = os.path.join(work, f"{name.split()[0]}_{seed}")
      _script("run_classifier.py", "--task_name=MRPC", f"--data_dir={FLAGS.data_dir}",
              f"--output_dir={out}", f"--albert_hub_module_handle={module}",
              "--spm_model_file=from_tf_hub", "--do_train", "--do_eval",
              f"--max_seq_length={FLAGS.max_seq_length}", f"--train_step={FLAGS.train_step}",
              f"--warmup_step={FLAGS.train_step // 10}", "--train_batch_size=32",
              f"--learning_rate={FLAGS.learning_rate}",
              f"--save_checkpoints_steps={FLAGS.train_step // 5}",
              f"--seed={seed}", "--noprogress")
      results.setdefault(name, []).append(_dev_accuracy(out))
  for name, accuracies in results.items():
    print(f"{name}: dev accuracy {', '.join(f'{a:.4f}' for a in accuracies)} "
          f"(mean {np.mean(accuracies):.4f}, spread {np.ptp(accuracies):.4f})")
  _script("convert_checkpoint.py", f"--model={modules['tf-models module']}",
          "--output_format=hf", f"--output_dir={hf_dir}")


def _parity(module_dir, hf_dir):
  """The largest differences of transformers' outputs on the converted module from the module's."""
  try:
    import torch  # pylint: disable=g-import-not-at-top
    import transformers  # pylint: disable=g-import-not-at-top
  except ImportError:
    print("transformers is not installed (pip install 'albert_tf[bench]'): parity skipped")
    return
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(0)
  module = tf.saved_model.load(module_dir)
  hf = transformers.AlbertForMaskedLM.from_pretrained(hf_dir).eval()
  vocab = hf.config.vocab_size
  for batch, seq in ((2, 16), (3, FLAGS.max_seq_length)):
    ids = rng.integers(5, vocab, (batch, seq)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1:, seq // 2:] = 0
    types = np.zeros_like(ids)
    types[:, seq // 3:] = 1
    ours = module(dict(input_word_ids=ids, input_mask=mask, input_type_ids=types), training=False)
    positions = np.tile(np.arange(4, dtype=np.int32), (batch, 1))
    mlm = module.mlm(dict(input_word_ids=ids, input_mask=mask, input_type_ids=types,
                          masked_lm_positions=positions), training=False)["mlm_logits"].numpy()
    with torch.no_grad():
      out = hf(input_ids=torch.tensor(ids, dtype=torch.long),
               attention_mask=torch.tensor(mask, dtype=torch.long),
               token_type_ids=torch.tensor(types, dtype=torch.long), output_hidden_states=True)
    sequence = out.hidden_states[-1].numpy()
    keep = mask.astype(bool)
    print(f"batch {batch} seq {seq}: sequence_output max |diff| "
          f"{np.abs(sequence - ours['sequence_output'].numpy())[keep].max():.2e}, mlm_logits "
          f"{np.abs(out.logits.numpy()[:, :4] - mlm).max():.2e}")


if __name__ == "__main__":
  FLAGS = flags.FLAGS
  flags.mark_flags_as_required(["release", "data_dir", "work_dir"])
  app.run(main)
