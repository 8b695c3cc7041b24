"""The settings table (broker_app/settings.py): every row's flag reaches its field of
BrokerConfig or ControllerConfig, its default is the config class's, and docs/settings.md is
the rendered table."""

from __future__ import annotations

import argparse
from dataclasses import MISSING
from pathlib import Path

import pytest

from broker_app.controller import main as controller_main
from broker_app.server import main as broker_main
from broker_app.settings import SETTINGS, render_markdown

ROOT = Path(__file__).resolve().parents[2]
BEGIN = "<!-- BEGIN settings table (generated from broker_app/settings.py) -->\n"
END = "<!-- END settings table -->\n"
MAINS = {"broker": (broker_main, ["--node-id", "1", "--port", "0", "--data-dir", "/tmp/hw"]),
         "controller": (controller_main, ["--port", "0", "--data-dir", "/tmp/hw"])}


def _config(process: str, *argv: str):
    main, required = MAINS[process]
    parser = argparse.ArgumentParser()
    main.add_arguments(parser)
    return main.config_from_args(parser.parse_args([*required, *argv]))


@pytest.mark.parametrize("process", sorted(MAINS))
def test_defaults_are_the_config_classes(process: str) -> None:
    config = _config(process)
    for s in SETTINGS:
        if s.process == process and s.default is not MISSING:
            assert getattr(config, s.field) == s.default, s.field


@pytest.mark.parametrize("setting", [s for s in SETTINGS if s.default is not MISSING],
                         ids=lambda s: f"{s.process}{s.option}")  # fmt: skip
def test_each_flag_sets_its_field(setting) -> None:
    if setting.type is bool:  # --flag / --no-flag: the one that is not the default
        argv = [("--no-" + setting.option[2:]) if setting.default else setting.option]
        value = not setting.default
    else:
        value = setting.choices[-1] if setting.choices else (
            "rack-x" if setting.type is str else 7)  # fmt: skip
        argv = [setting.option, str(value)]
    assert getattr(_config(setting.process, *argv), setting.field) == value


def test_doc_page_is_the_rendered_table() -> None:
    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert BEGIN in text and END in text
    assert text.split(BEGIN, 1)[1].split(END, 1)[0] == render_markdown(), \
        "regenerate with python -m broker_app.settings"
