"""Exports ALBERT as TF-Hub SavedModels: the encoder and/or the text preprocessor.

From a released model directory (albert_config.json, 30k-clean.model or, in the
Chinese releases, vocab_chinese.txt, and model.ckpt-best):

  python hub_export/export.py --albert_directory=albert_base \
      --export_path=hub/albert_base --export_preprocessing_path=hub/albert_preprocess

or from explicit files (original TF1 checkpoints and albert_tf's own both load):

  python hub_export/export.py --albert_config_file=out/albert_config.json \
      --init_checkpoint=out/model.ckpt-best --spm_model_file=30k-clean.model \
      --export_path=hub/albert_mine

(`--vocab_file=vocab_chinese.txt` instead of `--spm_model_file` for a WordPiece vocabulary).
"""

from absl import app

from albert_tf.commands import table

main = table.main("export_tf_hub")   # its flags, from albert_tf/commands/table.py

if __name__ == "__main__":
  app.run(main)
