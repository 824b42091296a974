"""The events live in one module per concern, so that ``rigaudit check`` imports only those it emits: every name the
package gives comes from the module that defines it, and the union a transcript is read with holds every event."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from typing import get_args

from rigaudit.tools.model import events
from rigaudit.tools.model.events.base import BaseEvent
from rigaudit.tools.model.events.union import Event

_MODULES = [m.name for m in pkgutil.iter_modules(events.__path__)]


def _defined(module: str) -> dict[str, object]:
    found = importlib.import_module(f"{events.__name__}.{module}")
    return {
        name: value
        for name, value in vars(found).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == found.__name__
    }


def test_every_name_of_the_package_is_its_module_s() -> None:
    assert sorted(events.__all__) == sorted(events.MODULE_OF)
    for name, module in events.MODULE_OF.items():
        assert getattr(events, name) is getattr(importlib.import_module(f"{events.__name__}.{module}"), name), name


def test_every_model_of_the_modules_is_given_by_the_package() -> None:
    models = {name: module for module in _MODULES for name, value in _defined(module).items() if isinstance(value, type)}
    assert models
    missing = {name: module for name, module in models.items() if events.MODULE_OF.get(name) != module}
    assert not missing, f"add to MODULE_OF (and the TYPE_CHECKING imports) of tools/model/events: {missing}"


def test_the_union_holds_every_event_once() -> None:
    members = get_args(get_args(Event)[0])
    kinds = {value for module in _MODULES for value in _defined(module).values()}
    every = {c for c in kinds if isinstance(c, type) and issubclass(c, BaseEvent) and c is not BaseEvent}
    assert set(members) == every, sorted(c.__name__ for c in every ^ set(members))
    types = [m.model_fields["type"].default for m in members]
    assert len(types) == len(set(types)) == len(members)


def test_a_name_the_package_lacks_is_an_attribute_error() -> None:
    assert not hasattr(events, "NoSuchEvent")
    assert "ToolCall" in dir(events)


def test_asking_the_package_for_one_event_imports_its_module_alone() -> None:
    program = (
        "import sys; from rigaudit.tools.model.events import Warning_; "
        "print(sorted(m for m in sys.modules if m.startswith('rigaudit.tools.model.events')))"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    base = "rigaudit.tools.model.events"
    assert done.stdout.strip() == str([base, f"{base}.base", f"{base}.session"])
