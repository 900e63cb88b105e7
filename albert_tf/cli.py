"""What every absl entry script does around its one library call."""

import dataclasses
from typing import Callable, Dict, Sequence

from absl import app, flags


def run_with_flags(argv: Sequence[str], options_type, run: Callable[..., Dict[str, Dict[str, float]]]):
  """Builds `options_type` from the absl flags of the same names, calls `run(options)`,
  turns input errors into usage errors (no traceback) and prints the results."""
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  values = flags.FLAGS
  opts = options_type(**{f.name: values[f.name].value for f in dataclasses.fields(options_type)
                         if f.name in values})
  try:
    results = run(opts)
  except (FileNotFoundError, FileExistsError, ValueError) as e:
    raise app.UsageError(str(e)) from None
  for kind, metrics in results.items():
    print(f"{kind}: " + ", ".join(f"{k} = {v:.4g}" for k, v in metrics.items()))
  return results
