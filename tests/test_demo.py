"""`make demo` end to end, shrunk (--quick): every step runs and reports, every output exists."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

from common import run_script

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_demo_quick_runs_every_step(tmp_path):
  out = tmp_path / "demo"
  done = run_script("demo.py", "--quick", f"--output_dir={out}", cwd=ROOT)
  assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
  text = done.stdout
  for step in ("1. SentencePiece vocabulary", "2. Pretraining data", "3. Pretraining",
               "4. TF-Hub SavedModels", "5. Fine-tuning on MRPC from the TF-Hub SavedModel",
               "6. ALBERT lite", "7. Results", "8. On device"):
    assert f"== {step}" in text, step
  assert "--albert_hub_module_handle=" in text and "--spm_model_file=from_tf_hub" in text
  assert "masked-LM accuracy" in text and "majority class" in text
  # The student, taught by the MRPC run, beside it with its pairs/s (--quick's model has
  # one pass: a student of the same depth).
  assert "--teacher=" in text and "ALBERT lite, taught (1 pass)" in text
  assert re.search(r"ALBERT lite, taught \(1 pass\) +0\.\d{3} +0\.\d{3} +\d+ \(\d\.\d\dx\)",
                   text), text[-1500:]
  assert text.count("paraphrase probability") == 2 and "ms per pair on one thread" in text
  for path in ("vocab/pydoc-2k.model", "pretraining/learning_curve.png",
               "pretraining/eval_results.txt", "hub/albert_encoder/saved_model.pb",
               "hub/albert_preprocess/saved_model.pb", "glue_data/MRPC/train.tsv",
               "glue_data/MRPC/dev.tsv", "glue_data/MRPC/test.tsv", "mrpc/model.ckpt-best.index",
               "mrpc/eval_results.txt", "mrpc/learning_curve.png", "mrpc/MRPC.tsv",
               "mrpc/serving/saved_model.pb", "mrpc_dynamic_int8.tflite",
               "mrpc_lite/eval_results.txt"):
    assert os.path.exists(out / path), path
  # A second run (a process of its own, as a user starts it) never writes into an existing
  # demo directory.
  again = subprocess.run([sys.executable, str(ROOT / "demo.py"), "--quick", f"--output_dir={out}"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
  assert again.returncode != 0 and "exists and is not empty" in again.stderr
