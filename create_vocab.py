"""Trains an ALBERT SentencePiece vocabulary (unigram, the original options).

  python create_vocab.py --input_file='corpus/*.txt' --model_prefix=30k-clean --vocab_size=30000
"""

from absl import app, flags

from albert_tf import vocab

flags.DEFINE_string("input_file", None, "Text files: comma-separated paths or globs.")
flags.DEFINE_string("model_prefix", None, "Writes <model_prefix>.model and <model_prefix>.vocab.")
flags.DEFINE_integer("vocab_size", 30000, "Number of pieces.")
flags.DEFINE_integer("input_sentence_size", 10_000_000, "Sentences sampled for training.")
flags.DEFINE_float("character_coverage", 0.99995, "Characters covered by the vocabulary.")
flags.DEFINE_bool("overwrite", False, "Replace an existing model with the same prefix.")
flags.mark_flags_as_required(["input_file", "model_prefix"])
FLAGS = flags.FLAGS


def main(_):
  try:
    path = vocab.train_vocab(FLAGS.input_file, FLAGS.model_prefix, FLAGS.vocab_size,
                             FLAGS.input_sentence_size, FLAGS.character_coverage,
                             overwrite=FLAGS.overwrite)
  except (FileNotFoundError, FileExistsError, ValueError) as e:
    raise app.UsageError(str(e)) from None
  print(f"Wrote {path} and {FLAGS.model_prefix}.vocab")


if __name__ == "__main__":
  app.run(main)
