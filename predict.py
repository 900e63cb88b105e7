"""A trained run's answers for new text, one JSON line per input line, in input order.

  python predict.py --model=out/topics --input_file=new.jsonl --output_file=answers.jsonl
  python predict.py --model=out/MRPC --input_file=pairs.tsv \
      --text_columns=sentence1,sentence2 --output_file=mrpc_answers.jsonl

--model is a run_classifier.py --output_dir (a GLUE task or your own files). Its answers
are those of test_predictions.jsonl: `label` and `probabilities`, `labels` (multi-label)
or `score` (regression), after `index` and, with --id_column, `id`.
"""

import os
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # TF imports tf_keras, not Keras 3

from absl import app

from albert_tf import cli
from albert_tf.commands import predict

cli.define_flags(predict.PredictOptions)


def main(argv):
  cli.run_with_flags(argv, predict.PredictOptions, predict.run)


if __name__ == "__main__":
  app.run(main)
