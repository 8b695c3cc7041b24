"""The broker's settings table (broker_app/settings.py): every row's flag reaches its
BrokerConfig field, its default is BrokerConfig's, and docs/broker-settings.md is the rendered
table."""

from __future__ import annotations

import argparse
from dataclasses import MISSING
from pathlib import Path

import pytest

from broker_app.server.main import add_arguments, config_from_args
from broker_app.settings import SETTINGS, render_markdown

ROOT = Path(__file__).resolve().parents[2]
BEGIN = "<!-- BEGIN settings table (generated from broker_app/settings.py) -->\n"
END = "<!-- END settings table -->\n"
REQUIRED = ["--node-id", "1", "--port", "0", "--data-dir", "/tmp/hw-settings"]


def _config(*argv: str):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return config_from_args(parser.parse_args([*REQUIRED, *argv]))


def test_defaults_are_broker_configs() -> None:
    config = _config()
    for s in SETTINGS:
        if s.default is not MISSING:
            assert getattr(config, s.field) == s.default, s.field


@pytest.mark.parametrize("setting", [s for s in SETTINGS if s.default is not MISSING],
                         ids=lambda s: s.option)  # fmt: skip
def test_each_flag_sets_its_field(setting) -> None:
    value = setting.choices[-1] if setting.choices else (
        "rack-x" if setting.type is str else 7)  # fmt: skip
    assert getattr(_config(setting.option, str(value)), setting.field) == value


def test_doc_page_is_the_rendered_table() -> None:
    text = (ROOT / "docs" / "broker-settings.md").read_text(encoding="utf-8")
    assert BEGIN in text and END in text
    assert text.split(BEGIN, 1)[1].split(END, 1)[0] == render_markdown(), \
        "regenerate with python -m broker_app.settings"
