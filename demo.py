"""`make demo`: what albert_tf can do so far, end to end, on random weights.

Builds the released ALBERT sizes, writes an ALBERT-base pretrainer in the
original TF1 checkpoint names, reads it back into a fresh model, checks the
outputs are identical, trains a SentencePiece vocabulary on the pydoc topics
and tokenizes with it in Python and in-graph, and times float32 against
bfloat16 inference. (The full pipeline: pretraining, TF-Hub export and MRPC
fine-tuning, replaces this as those issues land.)
"""

import datetime
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags
import numpy as np
import tensorflow as tf
import tf_keras as keras

import albert_tf
from albert_tf import preprocessing, tokenization, vocab
from albert_tf.data import sample_corpus

flags.DEFINE_string("output_dir", None, "Where to write; default demo_output/run-<time>.")
FLAGS = flags.FLAGS


def _inputs(config, batch=2, seq=32, seed=0):
  """Random ids; the second example is padded after half its length."""
  rng = np.random.default_rng(seed)
  ids = rng.integers(5, config.vocab_size, (batch, seq)).astype(np.int32)
  mask = np.ones((batch, seq), np.int32)
  mask[1, seq // 2:] = 0
  types = np.zeros((batch, seq), np.int32)
  types[:, seq // 4:] = 1
  positions = np.tile(np.array([[3, 7]], np.int32), (batch, 1))
  return dict(input_word_ids=ids * mask, input_mask=mask, input_type_ids=types * mask,
              masked_lm_positions=positions)


def main(_):
  out_dir = FLAGS.output_dir or os.path.join(
      "demo_output", "run-" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
  if os.path.exists(out_dir) and os.listdir(out_dir):
    raise SystemExit(f"--output_dir {out_dir} exists and is not empty; choose another")
  os.makedirs(out_dir, exist_ok=True)

  print("1. The released ALBERT sizes (encoder parameters, vocabulary 30000):")
  for preset in ("base", "large", "xlarge", "xxlarge"):
    encoder = albert_tf.AlbertEncoder(preset)
    print(f"   {preset:8s} {encoder.count_params():>12,d}")
    del encoder
  keras.backend.clear_session()

  config = albert_tf.AlbertConfig.from_preset("base")
  print("\n2. ALBERT-base pretrainer (random weights) saved in the original TF1 names:")
  model = albert_tf.AlbertPretrainer(config)
  prefix = albert_tf.save_original_checkpoint(model, os.path.join(out_dir, "model.ckpt-best"))
  config.to_json_file(os.path.join(out_dir, "albert_config.json"))
  names = sorted(tf.train.load_checkpoint(prefix).get_variable_to_shape_map())
  print(f"   {prefix} ({len(names)} variables), e.g.")
  for name in names[:2] + [n for n in names if "inner_group_0/attention_1/self/query" in n]:
    print(f"     {name}")

  print("\n3. Read back into a fresh model:")
  fresh = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_json_file(
      os.path.join(out_dir, "albert_config.json")))
  report = albert_tf.load_original_checkpoint(fresh, prefix)
  inputs = _inputs(config)
  a, b = model(inputs), fresh(inputs)
  for key in ("sequence_output", "pooled_output", "mlm_logits", "sop_logits"):
    diff = float(np.abs(a[key].numpy() - b[key].numpy()).max())
    print(f"   {key:16s} shape {str(a[key].shape):16s} max |difference| {diff:.1e}")
  print(f"   restored {len(report.loaded)} variables; "
        f"SOP probabilities {tf.nn.softmax(b['sop_logits'])[0].numpy().round(3)}")

  print("\n4. A SentencePiece vocabulary trained on Python's own documentation (pydoc topics):")
  corpus = sample_corpus.write_pydoc_corpus(os.path.join(out_dir, "pydoc_corpus.txt"))
  spm_model = vocab.train_vocab(corpus, os.path.join(out_dir, "pydoc-3k"), vocab_size=3000)
  tokenizer = tokenization.FullTokenizer(spm_model_file=spm_model)
  in_graph = preprocessing.AlbertTokenizer(spm_model)
  packer = preprocessing.AlbertPacker(24, tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)
  text, second = "Naïve  ``déjà vu'': 1,000,000 Iterators!", "The yield statement."
  print(f"   {spm_model} ({tokenizer.vocab_size} pieces)")
  print(f"   {text!r} ->\n     {tokenizer.tokenize(text)}")
  packed = packer([in_graph(tf.constant([text])), in_graph(tf.constant([second]))])
  python = albert_tf.packing.pack_inputs(tokenizer.encode(text), tokenizer.encode(second), 24,
                                         tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)
  print(f"   packed in-graph with {second!r}:\n     {packed['input_word_ids'][0].numpy().tolist()}")
  print(f"   same ids as the Python tokenizer and packer: "
        f"{all(packed[k][0].numpy().tolist() == python[k] for k in python)}")

  print("\n5. Inference speed, batch 8 x 128 tokens (examples/s):")
  batch = _inputs(config, batch=8, seq=128)
  batch.pop("masked_lm_positions")
  for policy in ("float32", "mixed_bfloat16"):
    keras.mixed_precision.set_global_policy(policy)
    encoder = albert_tf.AlbertEncoder(config)
    run = tf.function(lambda x: encoder(x)["pooled_output"])
    run(batch).numpy()
    start = time.perf_counter()
    for _ in range(3):
      run(batch).numpy()
    print(f"   {policy:15s} {3 * 8 / (time.perf_counter() - start):6.2f}")
  keras.mixed_precision.set_global_policy("float32")
  print(f"\nEverything written is in {out_dir}/")


if __name__ == "__main__":
  app.run(main)
