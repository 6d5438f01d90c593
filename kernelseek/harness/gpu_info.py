"""What the hardware is, as its driver says: the GPUs (name, PCI bus, SMs, L2, memory, the highest SM and memory
clocks) and the driver, through cuda-python's `cuda.bindings.driver`; nvidia-smi adds the driver's own version
and the live readings (current clocks, temperature, power) of the same device, found by its PCI bus id (so a
process that Ray or CUDA_VISIBLE_DEVICES gave the fourth GPU reads the fourth GPU, not the first). The CPU by
/proc/cpuinfo.

Every query here is read-only and makes no CUDA context. Without a driver (a machine with no GPU, a container
without /dev/nvidia*) `gpus()` is empty and nothing fails: `cuda.bindings` imports without one.
"""

from __future__ import annotations

import os
import platform
import subprocess
from typing import Any

SMI_FIELDS = ("driver_version", "clocks.sm", "clocks.max.sm", "clocks.mem", "clocks.max.mem", "temperature.gpu",
              "power.draw", "power.limit")


def _ok(result: tuple) -> Any:  # noqa: ANN401 - cuda.bindings returns (CUresult, value...)
    from cuda.bindings import driver

    error, *values = result
    if error != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA driver: {error}")
    return values[0] if len(values) == 1 else tuple(values)


def driver_version() -> str | None:
    """The CUDA version the installed driver supports ("13.0"), or None without a driver."""
    try:
        from cuda.bindings import driver

        _ok(driver.cuInit(0))
        version = _ok(driver.cuDriverGetVersion())
    except (ImportError, RuntimeError):
        return None
    return f"{version // 1000}.{version % 1000 // 10}"


def gpus() -> list[dict[str, Any]]:
    """Each GPU this process may use (CUDA's ordinals, after CUDA_VISIBLE_DEVICES), as its driver reports it."""
    try:
        from cuda.bindings import driver

        _ok(driver.cuInit(0))
        count = _ok(driver.cuDeviceGetCount())
    except (ImportError, RuntimeError):
        return []
    found = []
    for ordinal in range(count):
        try:
            found.append(_device(driver, ordinal))
        except RuntimeError:
            continue
    return found


def _device(driver: Any, ordinal: int) -> dict[str, Any]:  # noqa: ANN401 - the cuda.bindings.driver module
    device = _ok(driver.cuDeviceGet(ordinal))
    attribute = driver.CUdevice_attribute

    def get(name: str) -> int:
        return int(_ok(driver.cuDeviceGetAttribute(getattr(attribute, name), device)))

    name = _ok(driver.cuDeviceGetName(256, device))
    bus = _ok(driver.cuDeviceGetPCIBusId(32, device))
    return {"ordinal": ordinal, "name": _text(name), "pci_bus_id": _text(bus),
            "capability": f"{get('CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR')}."
                          f"{get('CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR')}",
            "sms": get("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
            "l2_bytes": get("CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE"),
            "memory_bytes": int(_ok(driver.cuDeviceTotalMem(device))),
            "sm_clock_max_mhz": get("CU_DEVICE_ATTRIBUTE_CLOCK_RATE") / 1000,  # the driver reports kHz
            "memory_clock_max_mhz": get("CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE") / 1000}


def _text(value: bytes | str) -> str:
    raw = value if isinstance(value, bytes) else value.encode()
    return raw.split(b"\0", 1)[0].decode(errors="replace").strip()


def smi(pci_bus_id: str | None = None) -> dict[str, str]:
    """nvidia-smi's readings of the GPU at `pci_bus_id` (of the only GPU when none is given), {} without
    nvidia-smi or such a GPU. nvidia-smi lists every GPU of the machine whatever CUDA_VISIBLE_DEVICES says, so
    the row is picked by its bus id (nvidia-smi writes the domain with 8 digits, the driver with 4)."""
    command = ["nvidia-smi", f"--query-gpu=pci.bus_id,{','.join(SMI_FIELDS)}", "--format=csv,noheader"]
    try:
        lines = subprocess.run(command, capture_output=True, text=True, timeout=10).stdout.strip().splitlines()
    except (OSError, subprocess.TimeoutExpired):
        return {}
    rows = [[cell.strip() for cell in line.split(",")] for line in lines if line.count(",") >= len(SMI_FIELDS)]
    if pci_bus_id is not None:
        rows = [row for row in rows if _bus(row[0]) == _bus(pci_bus_id)]
    return dict(zip(SMI_FIELDS, rows[0][1:], strict=False)) if len(rows) == 1 else {}


def _bus(pci_bus_id: str) -> str:
    """A PCI bus id without the domain's leading zeros, in lower case: 00000000:18:00.0 -> 0:18:00.0."""
    domain, _, rest = pci_bus_id.strip().lower().partition(":")
    return f"{domain.lstrip('0') or '0'}:{rest}"


def cpu() -> dict[str, Any]:
    """The CPU's model name and how many logical CPUs this process may run on."""
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"name": name, "cpus": usable}


def machine() -> dict[str, Any]:
    """The hardware a result was obtained on: the CPU, the driver, and each usable GPU with its readings."""
    found = gpus()
    for gpu in found:
        gpu["smi"] = smi(gpu["pci_bus_id"])
    driver = found[0]["smi"].get("driver_version") if found and found[0]["smi"] else None
    return {"cpu": cpu(), "driver": driver, "driver_cuda": driver_version() if found else None, "gpus": found}


def describe(hardware: dict[str, Any]) -> str:
    """One line: 'NVIDIA H100 80GB HBM3 x1 (driver 580.159.04, CUDA 13.0, SM clock max 1980 MHz); CPU ...'."""
    cpu_part = f"CPU {hardware['cpu']['name']} ({hardware['cpu']['cpus']} usable)"
    gpus_found = hardware.get("gpus") or []
    if not gpus_found:
        return f"no GPU; {cpu_part}"
    names: dict[str, int] = {}
    for gpu in gpus_found:
        names[gpu["name"]] = names.get(gpu["name"], 0) + 1
    first = gpus_found[0]
    details = [f"driver {hardware['driver']}" if hardware.get("driver") else None,
               f"CUDA {hardware['driver_cuda']}" if hardware.get("driver_cuda") else None,
               f"SM clock max {first['sm_clock_max_mhz']:g} MHz"]
    gpu_part = ", ".join(f"{name} x{n}" for name, n in names.items())
    return f"{gpu_part} ({', '.join(d for d in details if d)}); {cpu_part}"


def describe_device(device: dict[str, Any]) -> str:
    """One phrase for a judgement's `device` record (kernelseek/harness/child.py `device_info`)."""
    if not device:
        return "unknown hardware"
    if device.get("arch") == "cpu" or "cpu" in device:
        cpu_record = device.get("cpu") or {}
        return f"CPU {cpu_record.get('name') or device.get('name', '?')}"
    clocks = device.get("clocks") or {}
    details = [f"driver {device.get('driver') or clocks.get('driver_version')}"
               if device.get("driver") or clocks.get("driver_version") else None,
               f"CUDA {device['cuda']}" if device.get("cuda") else None,
               f"SM clock max {clocks['clocks.max.sm']}" if clocks.get("clocks.max.sm") else None]
    shown = ", ".join(d for d in details if d)
    return f"{device.get('name', 'GPU')}" + (f" ({shown})" if shown else "")
