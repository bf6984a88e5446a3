"""Shared fixtures: every test gets its own store file."""

import pathlib

import pytest

import tract


@pytest.fixture
def store_path(tmp_path: pathlib.Path) -> pathlib.Path:
    return tmp_path / "store.redb"


@pytest.fixture
def t(store_path: pathlib.Path):
    with tract.Tract.open(store_path) as opened:
        yield opened
