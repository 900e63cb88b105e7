"""Fine-tunes ALBERT for token classification (named-entity recognition) on CoNLL-format data.

  python run_ner.py --data_dir=conll2003 --output_dir=out/conll2003 \
      --albert_directory=albert_base_v2 --do_train --do_eval --do_predict \
      --max_seq_length=128 --train_batch_size=32 --learning_rate=5e-5 \
      --train_step=4000 --warmup_step=400 --save_checkpoints_steps=500

--data_dir holds train.txt, dev.txt and test.txt: a token per line, its tag in the last
column (IOB2, IOB1 or BIOES; --tag_scheme detects it), blank lines between sentences,
-DOCSTART- lines skipped. The Chinese releases tag characters (MSRA, People's Daily:
`中 B-LOC`) with --vocab_file=vocab_chinese.txt.

Rerunning the same command after a crash resumes. Outputs in --output_dir:
model.ckpt-best (best dev F1), best_trial.txt, labels.txt, eval_results.txt (entity-level
precision, recall and F1, overall and per type), test_predictions.txt (test.txt with the
predicted tag appended, for conlleval), eval_log.csv, train_log.csv, learning_curve.png,
TensorBoard summaries (train/, eval/).
"""

from absl import app

from albert_tf.commands import table

main = table.main("run_ner")   # its flags, from albert_tf/commands/table.py

if __name__ == "__main__":
  app.run(main)
