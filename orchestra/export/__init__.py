"""Our jobs directory in other tools' formats: `harbor_models` is Harbor 0.25's jobs-directory
documents as strict models, `harbor` converts a run or job into them (issue 20.3)."""
