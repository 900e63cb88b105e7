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

import os
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # TF imports tf_keras, not Keras 3 (1.7 s)

from absl import app

from albert_tf import cli
from albert_tf.commands import export_tf_hub

cli.define_flags(export_tf_hub.ExportOptions, original=export_tf_hub.ORIGINAL_FLAGS)


def main(argv):
  cli.run_with_flags(argv, export_tf_hub.ExportOptions, export_tf_hub.run)


if __name__ == "__main__":
  app.run(main)
