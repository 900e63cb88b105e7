"""Trains an ALBERT SentencePiece vocabulary (unigram, the original options).

  python create_vocab.py --input_file='corpus/*.txt' --model_prefix=30k-clean --vocab_size=30000
"""

import os
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # TF imports tf_keras, not Keras 3 (1.7 s)

from absl import app

from albert_tf import cli
from albert_tf.text import vocab

cli.define_flags(vocab.VocabOptions)


def main(argv):
  cli.run_with_flags(argv, vocab.VocabOptions, vocab.run)


if __name__ == "__main__":
  app.run(main)
