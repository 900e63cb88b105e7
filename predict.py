"""A trained run's answers for new text, one JSON line per input row, in input order.

  python predict.py --model=out/topics --input_file=new.jsonl --output_file=answers.jsonl
  python predict.py --model=out/MRPC --input_file=pairs.tsv \
      --text_columns=sentence1,sentence2 --output_file=mrpc_answers.jsonl
  python predict.py --model=out/topics --input_file=corpus.jsonl --output_file=out/a.jsonl \
      --runner=DirectRunner --direct_num_workers=2 --num_shards=4

--model is the --output_dir of run_classifier.py (GLUE or your own files), run_ner.py,
run_squad.py or run_race.py, or a serving export. Each answer follows `index` (and `id`,
with --id_column): a classifier's `label`/`labels`/`score` and `probabilities`, a tagger's
`entities`, SQuAD's `answer`, `start`, `end`, `score` (v2.0: `has_answer`), RACE's
`choice` and `probabilities` (docs/predict.md). --runtime=onnxruntime and --dtype=bfloat16
choose how; --runner runs it on Apache Beam.
"""

from absl import app

from albert_tf.commands import table

main = table.main("predict")   # its flags, from albert_tf/commands/table.py

if __name__ == "__main__":
  app.run(main)
