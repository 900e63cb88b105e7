"""SQuAD featurization time of one question on a long context without spaces.

A context of --context_kb kilobytes of letters with no space (one "word" that
SentencePiece splits into many pieces) goes through `squad.convert_examples`
at the original window settings (seq 384, query 64, stride 128); prints the
pieces, windows and seconds. The script imports the albert_tf of the checkout
it sits in: copy it into an older checkout to time that one.

  python benchmarks/benchmark_squad_long_context.py --context_kb=1024
"""

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags
import numpy as np

from albert_tf.data import squad
from albert_tf.text import tokenization
from benchmarking import pydoc_vocabulary

flags.DEFINE_integer("context_kb", 1024, "Context size in kilobytes.")
flags.DEFINE_string("spm_model_file", None, "SentencePiece model; default: train one on pydoc.")
FLAGS = flags.FLAGS


def main(_):
  model = pydoc_vocabulary(3000, FLAGS.spm_model_file)
  tokenizer = tokenization.FullTokenizer(spm_model_file=model)
  rng = np.random.default_rng(0)
  letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
  context = "".join(rng.choice(letters, FLAGS.context_kb * 1024))
  example = squad.SquadExample("long", "What is it?", context)
  started = time.time()
  windows = list(squad.convert_examples([example], tokenizer, 384, 128, 64, is_training=False,
                                        progress=False))
  seconds = time.time() - started
  pieces = sum(len(m["starts"]) for _, m in windows)
  print(f"context {FLAGS.context_kb} KB: {len(windows)} windows, {pieces} window pieces, "
        f"{seconds:.1f} s")
  print(f"RESULT seconds={seconds:.3f}")


if __name__ == "__main__":
  app.run(main)
