"""`orkeon schema NAME`: the JSON Schemas of the documents, generated from the models.

`schemas/NAME.schema.json` holds the same text (`make schemas` writes them; a test fails
when they drift).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from ..config import inputs
from ..config.crews import Crew
from ..errors import InputError
from ..run import result as documents
from ..run.steps import crew_steps

NAMES = ("inputs", "plan", "script", "result", "event", "crew")


def schema(name: str) -> dict[str, Any]:
    if name == "inputs":
        return inputs.Inputs.model_json_schema()
    if name == "plan":
        return inputs.Plan.model_json_schema()
    if name == "script":
        out = TypeAdapter(inputs.Script).json_schema()
        out["title"] = "Script"
        out["description"] = "The scripted model: role full name -> one entry per model turn."
        return out
    if name == "result":
        return documents.Result.model_json_schema()
    if name == "event":
        union = documents.ToolCallEvent | documents.NetworkRefusedEvent | documents.OtherEvent
        out = TypeAdapter(union).json_schema()
        out["title"] = "Event"
        return out
    if name == "crew":
        out = Crew.model_json_schema()
        # The steps with a crew of their own, as the step registry has them.
        out["properties"]["step"] = {"enum": list(crew_steps()), "title": "Step", "type": "string"}
        return out
    raise KeyError(name)


def text(name: str) -> str:
    return json.dumps(schema(name), indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def write_all(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in NAMES:
        (folder / f"{name}.schema.json").write_text(text(name), encoding="utf-8")


def main(name: str) -> int:
    if name not in NAMES:
        raise InputError(f"NAME: unknown schema {name!r} (one of: {', '.join(NAMES)})")
    sys.stdout.write(text(name))
    return 0


if __name__ == "__main__":
    write_all(Path(sys.argv[1] if len(sys.argv) > 1 else "schemas"))
