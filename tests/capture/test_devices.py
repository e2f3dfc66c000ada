"""use_cpu_devices: fake CPU devices by default, the accelerator with SHARDVIZ_DEVICES=accelerator.

There is no TPU or GPU here: the accelerator paths run with jax's backend start replaced by
a fake one (monkeypatched); the CPU paths also run for real in fresh processes.
"""

import os
import subprocess
import sys
import textwrap
import types

import pytest

from shardviz.capture import devices
from shardviz.errors import DeviceSetupError, ShardvizWarning


def test_choose_accelerator():
    assert devices.choose_accelerator({"cpu": 8, "tpu": 8}, 8) == ("tpu", "")
    assert devices.choose_accelerator({"cpu": 8, "cuda": 16}, 8) == ("cuda", "")
    name, why = devices.choose_accelerator({"cpu": 8, "tpu": 4}, 8)
    assert name is None and "tpu backend has 4 device(s), fewer than the 8" in why
    name, why = devices.choose_accelerator({"cpu": 8}, 8)
    assert name is None and "no TPU or GPU" in why


@pytest.mark.parametrize(
    ("value", "mode"),
    [(None, "cpu"), ("", "cpu"), ("CPU", "cpu"), (" accelerator ", "accelerator")],
)
def test_device_mode(monkeypatch, value, mode):
    if value is None:
        monkeypatch.delenv(devices.DEVICES_ENV, raising=False)
    else:
        monkeypatch.setenv(devices.DEVICES_ENV, value)
    assert devices.device_mode() == mode


def test_unknown_mode_is_a_clear_error(monkeypatch):
    monkeypatch.setenv(devices.DEVICES_ENV, "gpu")
    with pytest.raises(DeviceSetupError) as err:
        devices.use_cpu_devices(8)
    msg = str(err.value)
    assert "SHARDVIZ_DEVICES='gpu'" in msg and "cpu, accelerator" in msg and "Fix:" in msg


class FakeJax:
    """The part of jax use_cpu_devices touches, before any backend started."""

    def __init__(self, counts: dict[str, int]):
        self.counts = counts
        self.settings: dict[str, object] = {}
        self.config = types.SimpleNamespace(update=self.settings.__setitem__)

    def devices(self, platform=None):
        platform = platform or self.settings.get("jax_platform_name") or "cpu"
        if platform == "cpu":
            return [f"cpu{i}" for i in range(self.settings["jax_num_cpu_devices"])]
        return [f"{platform}{i}" for i in range(self.counts[platform])]


def _fake(monkeypatch, counts, errors=None, mode="accelerator"):
    fake = FakeJax(counts)
    monkeypatch.setattr(devices, "jax", fake)
    monkeypatch.setattr(devices, "_backend_started", lambda: False)
    monkeypatch.setattr(devices, "_start_backends", lambda: (dict(counts), dict(errors or {})))
    monkeypatch.setenv(devices.DEVICES_ENV, mode)
    return fake


def test_accelerator_with_enough_devices_is_kept(monkeypatch):
    fake = _fake(monkeypatch, {"cpu": 8, "tpu": 8})
    assert devices.use_cpu_devices(8) == [f"tpu{i}" for i in range(8)]
    assert fake.settings["jax_platform_name"] == "tpu"
    assert "jax_platforms" not in fake.settings


def test_accelerator_with_more_devices_is_kept(monkeypatch):
    _fake(monkeypatch, {"cpu": 8, "cuda": 16})
    assert len(devices.use_cpu_devices(8)) == 16


def test_too_few_accelerator_devices_fall_back_to_cpu_with_a_warning(monkeypatch):
    fake = _fake(monkeypatch, {"cpu": 8, "tpu": 4})
    with pytest.warns(ShardvizWarning, match="tpu backend has 4 device"):
        assert devices.use_cpu_devices(8) == [f"cpu{i}" for i in range(8)]
    assert fake.settings["jax_platform_name"] == "cpu"
    assert fake.settings["jax_num_cpu_devices"] == 8


def test_a_held_tpu_is_named_in_the_warning(monkeypatch):
    _fake(monkeypatch, {"cpu": 8}, errors={"tpu": "TPU in use by process 1234"})
    with pytest.warns(ShardvizWarning) as record:
        devices.use_cpu_devices(8)
    msg = str(record[0].message)
    assert "no TPU or GPU" in msg and "tpu: TPU in use by process 1234" in msg
    assert "shut down the other notebooks' kernels" in msg


def test_cpu_mode_pins_jax_to_cpu_even_with_an_accelerator(monkeypatch):
    fake = _fake(monkeypatch, {"cpu": 8, "tpu": 8}, mode="cpu")
    monkeypatch.setattr(devices, "_start_backends", lambda: pytest.fail("no backend probe"))
    assert devices.use_cpu_devices(8) == [f"cpu{i}" for i in range(8)]
    assert fake.settings == {"jax_num_cpu_devices": 8, "jax_platforms": "cpu"}


def _fresh(code: str, mode: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_PLATFORMS", devices.DEVICES_ENV)}
    if mode is not None:
        env[devices.DEVICES_ENV] = mode
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip


def test_cpu_mode_for_real_in_a_fresh_process():
    out = _fresh(
        """
        import shardviz as sv
        devs = sv.use_cpu_devices(3)
        import jax
        print(len(devs), len(jax.devices()), jax.config.jax_platforms, jax.default_backend())
        """,
        mode=None,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["3", "3", "cpu", "cpu"]


def test_accelerator_mode_for_real_without_an_accelerator():
    out = _fresh(
        """
        import warnings
        import shardviz as sv
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            devs = sv.use_cpu_devices(3)
        import jax
        print(len(devs), len(jax.devices()), jax.default_backend())
        print([str(w.message) for w in caught])
        """,
        mode="accelerator",
    )
    assert out.returncode == 0, out.stderr[-2000:]
    first, warned = out.stdout.splitlines()[-2:]
    assert first.split() == ["3", "3", "cpu"]
    assert "no TPU or GPU" in warned and "using 3 fake CPU devices" in warned
