"""``load_dataset``: the ``datasets`` library as a user runs it on an exported folder, offline."""

import socket
from ipaddress import ip_address
from pathlib import Path

import pytest


@pytest.fixture
def load_dataset(monkeypatch, tmp_path):
    """``datasets.load_dataset`` offline, with its cache in a temporary folder; a connection to
    anything but loopback (the test database) fails the test."""
    home = tmp_path / "hf-home"
    for name, value in (("HF_DATASETS_OFFLINE", "1"), ("HF_HUB_OFFLINE", "1"), ("HF_HOME", str(home)),
                        ("HF_DATASETS_CACHE", str(home / "datasets"))):
        monkeypatch.setenv(name, value)
    import datasets
    import huggingface_hub.constants

    # Read at import: set them too in case another test imported the library first.
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True, raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    connect = socket.socket.connect

    def loopback_only(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not ip_address(address[0]).is_loopback:
            raise AssertionError(f"load_dataset tried to reach {address}")
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", loopback_only)

    def load(folder: Path, config: str | None = None):
        return datasets.load_dataset(str(folder), config, cache_dir=str(home / "cache"))

    return load
