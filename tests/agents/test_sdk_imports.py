"""The ACP SDK imported without field docstrings (orchestra/agents/sdk_imports.py) is the same
SDK: every model's JSON schema is identical apart from the `description` keys."""

import json
import subprocess
import sys

from pydantic._internal import _fields

from orchestra.agents.sdk_imports import DOCSTRING_HOOK

SCHEMAS = """
import contextlib, json, sys
from orchestra.agents.sdk_imports import field_docstrings_skipped
skip = field_docstrings_skipped() if sys.argv[1] == "skip" else contextlib.nullcontext()
with skip:
    import acp.schema
from pydantic import BaseModel

def without_descriptions(value):
    if isinstance(value, dict):
        return {k: without_descriptions(v) for k, v in value.items() if k != "description"}
    if isinstance(value, list):
        return [without_descriptions(v) for v in value]
    return value

models = {
    name: model
    for name, model in vars(acp.schema).items()
    if isinstance(model, type) and issubclass(model, BaseModel)
    and model.__module__ == "acp.schema"
}
described = sum("description" in json.dumps(m.model_json_schema()) for m in models.values())
print(json.dumps({
    "described": described,
    "schemas": {name: without_descriptions(m.model_json_schema()) for name, m in models.items()},
}))
"""


def schemas(mode: str) -> dict:
    run = subprocess.run(
        [sys.executable, "-c", SCHEMAS, mode], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_the_pydantic_hook_still_exists() -> None:
    assert callable(getattr(_fields, DOCSTRING_HOOK, None)), (
        f"pydantic no longer has _fields.{DOCSTRING_HOOK}: find its new name, or drop "
        "orchestra/agents/sdk_imports.py if the docstrings no longer cost start-up CPU"
    )


def test_acp_models_are_the_same_without_their_docstrings() -> None:
    kept, skipped = schemas("keep"), schemas("skip")
    assert len(kept["schemas"]) > 200
    assert kept["described"] > 100 and skipped["described"] < kept["described"]
    assert skipped["schemas"] == kept["schemas"]
