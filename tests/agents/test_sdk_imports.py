"""The ACP SDK imported without field docstrings (orchestra/agents/sdk_imports.py) is the same
SDK: every model's JSON schema is identical apart from the `description` keys; and buzz-agent's
first import of it is the skipped one."""

import json
import subprocess
import sys
from pathlib import Path

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


#: buzz-agent's entry point, with the pydantic hook wrapped to name every model it still reads
#: docstrings for (the skip replaces the wrapper with its no-op while the SDK imports).
RECORDING_AGENT = """
import sys
from pydantic._internal import _fields
from orchestra.agents.sdk_imports import DOCSTRING_HOOK
original = getattr(_fields, DOCSTRING_HOOK)

def recording(cls, *args, **kwargs):
    with open(sys.argv[1], "a") as out:
        out.write(cls.__module__ + "\\n")
    return original(cls, *args, **kwargs)

setattr(_fields, DOCSTRING_HOOK, recording)
if sys.argv[2] == "control":  # the SDK imported the ordinary way first: the hook must see it
    import acp.schema
from orchestra.agents.agent.cli import main
main()
"""


def docstring_reads_until_started(tmp_path: Path, mode: str) -> list[str]:
    """The modules of the models whose docstrings buzz-agent read before it logged its start
    (after every import main() makes before serving; _serve imports nothing new from the SDK)."""
    from agent_support import agent_environment

    recorded = tmp_path / f"docstring-reads-{mode}"
    recorded.touch()
    env = agent_environment(
        {
            "BUZZ_AGENT_PROVIDER": "openai",
            "BUZZ_AGENT_MODEL": "m",
            "OPENAI_COMPAT_BASE_URL": "http://127.0.0.1:9/v1",
            "BUZZ_AGENT_TRAJECTORY_LOG": str(tmp_path / f"{mode}.trajectory.jsonl"),
        }
    )
    agent = subprocess.Popen(
        [sys.executable, "-c", RECORDING_AGENT, str(recorded), mode],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert agent.stderr is not None
        for line in agent.stderr:
            if "buzz-agent starting" in line:
                break
        else:
            raise AssertionError(f"buzz-agent exited with {agent.wait()} before starting")
    finally:
        agent.kill()
        agent.wait()
    return [module for module in recorded.read_text().split() if module.split(".")[0] == "acp"]


def test_buzz_agent_imports_the_acp_sdk_without_docstrings(tmp_path: Path) -> None:
    assert docstring_reads_until_started(tmp_path, "control")  # the recording works
    assert docstring_reads_until_started(tmp_path, "agent") == []
