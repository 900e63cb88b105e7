"""Trains an ALBERT SentencePiece vocabulary (unigram, the original options).

  python create_vocab.py --input_file='corpus/*.txt' --model_prefix=30k-clean --vocab_size=30000
"""

from absl import app

from albert_tf.commands import table

main = table.main("create_vocab")   # its flags, from albert_tf/commands/table.py

if __name__ == "__main__":
  app.run(main)
