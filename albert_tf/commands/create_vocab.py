"""create_vocab.py: its flags, and the call that trains the vocabulary
(`albert_tf.text.vocab.train_vocab`: SentencePiece unigram with ALBERT's options)."""

import dataclasses

from albert_tf.cli import Checked, option
from albert_tf.text.vocab import train_vocab


@dataclasses.dataclass(kw_only=True)
class VocabOptions(Checked):
  """create_vocab.py's flags."""
  input_file: str = option(help="Text files: comma-separated paths or globs.")
  model_prefix: str = option(help="Writes <model_prefix>.model and <model_prefix>.vocab.")
  vocab_size: int = option(30000, "Number of pieces.", at_least=6)
  input_sentence_size: int = option(10_000_000, "Sentences sampled for training.", at_least=1)
  character_coverage: float = option(0.99995, "Characters covered by the vocabulary.",
                                     above=0, at_most=1)
  overwrite: bool = option(False, "Replace an existing model with the same prefix.")


def run(opts: VocabOptions) -> dict:
  """What create_vocab.py does."""
  path = train_vocab(opts.input_file, opts.model_prefix, opts.vocab_size,
                     opts.input_sentence_size, opts.character_coverage, overwrite=opts.overwrite)
  print(f"Wrote {path} and {opts.model_prefix}.vocab")
  return {}
