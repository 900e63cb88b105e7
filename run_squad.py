"""Fine-tunes ALBERT on SQuAD v1.1 or v2.0 and writes predictions, with the original flags.

  python run_squad.py --train_file=squad/train-v2.0.json --predict_file=squad/dev-v2.0.json \
      --version_2_with_negative --output_dir=out/squad2 \
      --albert_config_file=albert_base/albert_config.json \
      --init_checkpoint=albert_base/model.ckpt-best --spm_model_file=albert_base/30k-clean.model \
      --do_train --do_predict --max_seq_length=384 --doc_stride=128 --max_query_length=64 \
      --train_batch_size=48 --learning_rate=3e-5 --num_train_epochs=2 --warmup_proportion=0.1 \
      --save_checkpoints_steps=1000

or, from an exported TF-Hub SavedModel:
  --albert_hub_module_handle=exports/albert_base --spm_model_file=from_tf_hub

Rerunning the same command after a crash resumes. Outputs in --output_dir:
predictions.json, nbest_predictions.json, null_odds.json (v2.0),
eval_results.txt (official EM/F1 when --predict_file has answers; for v2.0
also best_f1 and best_f1_thresh, the threshold to use on another set via
--null_score_diff_threshold), model.ckpt-best, eval_log.csv, train_log.csv,
learning_curve.png, TensorBoard summaries, and the cached features.
"""

from absl import app

from albert_tf.commands import table

main = table.main("run_squad")   # its flags, from albert_tf/commands/table.py

if __name__ == "__main__":
  app.run(main)
