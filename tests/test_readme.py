"""Every Python block of the README runs as written, on tiny stand-ins for the paths it
names (albert_base/, hub/, out/MRPC/serving)."""

import os
import pathlib
import re
import textwrap

import pytest

from albert_tf import AlbertClassifier, AlbertConfig, AlbertEncoder, AlbertPretrainer
from albert_tf import save_original_checkpoint
from albert_tf.hub import export
from albert_tf.text.tokenization import FullTokenizer
from common import TINY

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
  """(line, code) of every ```python block, indented ones (in lists) included."""
  text = README.read_text()
  blocks = []
  for match in re.finditer(r"^( *)```python\n(.*?)^\1```", text, re.M | re.S):
    blocks.append((text[:match.start()].count("\n") + 1, textwrap.dedent(match.group(2))))
  return blocks


def test_the_readme_has_python_blocks():
  assert len(python_blocks()) >= 4


@pytest.fixture(scope="module")
def paths(tmp_path_factory, spm_model):
  """What the README's paths stand for, tiny: a released-model directory, the two
  TF-Hub exports and a fine-tuned classifier's serving export."""
  root = tmp_path_factory.mktemp("readme")
  cfg = dict(TINY, vocab_size=1500, max_position_embeddings=128)
  base = root / "albert_base"
  base.mkdir()
  AlbertConfig.from_dict(cfg).to_json_file(str(base / "albert_config.json"))
  os.symlink(spm_model, base / "30k-clean.model")
  pretrainer = AlbertPretrainer(cfg)
  save_original_checkpoint(pretrainer, str(base / "model.ckpt-best"))
  export.export_encoder(pretrainer, str(root / "hub" / "albert_base"), spm_model_file=spm_model)
  export.export_preprocessor(spm_model, str(root / "hub" / "albert_preprocess"),
                             default_seq_length=128)
  classifier = AlbertClassifier(AlbertEncoder(AlbertConfig.from_dict(cfg)), num_classes=2)
  export.export_classifier(classifier, str(root / "out" / "MRPC" / "serving"),
                           FullTokenizer(spm_model_file=spm_model), 32, ("0", "1"))
  return root


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_readme_python_block_runs(index, paths, monkeypatch):
  line, code = python_blocks()[index]
  monkeypatch.chdir(paths)
  exec(compile(code, f"README.md:{line}", "exec"), {"__name__": "readme"})  # pylint: disable=exec-used
  if 'model.save("classifier")' in code:
    assert (paths / "classifier" / "saved_model.pb").exists()
