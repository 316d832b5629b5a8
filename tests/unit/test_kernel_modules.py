"""A module counts as available when loaded, built in, or installed for the kernel.

The module indexes are excerpts of Debian 12's 6.1.0-56-amd64 kernel
(tests/fixtures/system/SOURCES.md).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from zsn.system.kernel_modules import module_available

RELEASE = "6.1.0-56-amd64"


@pytest.fixture
def modules(tmp_path: Path) -> Path:
    directory = tmp_path / "lib/modules" / RELEASE
    directory.mkdir(parents=True)
    for index in ("modules.dep", "modules.builtin"):
        shutil.copyfile(FIXTURES / "system" / f"{index}.linux-{RELEASE}.excerpt",
                        directory / index)
    (tmp_path / "sys/module").mkdir(parents=True)
    return tmp_path


def available(root: Path, name: str, release: str = RELEASE) -> bool:
    return module_available(name, release=release, modules_dir=root / "lib/modules",
                            sysfs=root / "sys/module")


@pytest.mark.parametrize("name", ["wireguard", "bonding", "8021q", "dummy", "mac80211_hwsim",
                                  "mac80211-hwsim", "binfmt_elf"])
def test_installed_or_built_in_modules_are_available_before_loading(
        modules: Path, name: str) -> None:
    assert available(modules, name)


@pytest.mark.parametrize("name", ["zfs", "wire", "guard", "hwsim", "8021"])
def test_other_names_and_parts_of_names_are_not(modules: Path, name: str) -> None:
    assert not available(modules, name)


def test_a_loaded_module_is_available_whatever_the_indexes_say(modules: Path) -> None:
    (modules / "sys/module/zfs").mkdir()
    assert available(modules, "zfs")


def test_a_kernel_without_module_indexes_has_only_what_is_loaded(modules: Path) -> None:
    assert not available(modules, "wireguard", release="6.18.0-custom")
