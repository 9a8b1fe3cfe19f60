"""Stream and random 64 B read shares of peak on Ramulator 2.1's HBM2, HBM3 and LPDDR5 models.

Run by tools/references/ramulator2.sh with PYTHONPATH=<checkout>/python:<checkout>; prints the
reference data file (TOML) that `duet calibrate` reads. Each standard uses the controller,
scheduler and queue sizes of the checkout's own latency-throughput testcase
(tests/latency_throughput/testcases/<std>.py), refresh on (AllBank), open rows, and the
MOP4CLXOR address mapper (four consecutive lines per row, then the next bank/bank group), so a
stream spreads over bank groups as a real controller's does.
"""
import importlib
import subprocess
import sys
import tempfile

import ramulator
from tests.latency_throughput.utils.spec import resolve_spec

STANDARDS = {"hbm2": "hbm2", "hbm3": "hbm3", "lpddr5": "lpddr5"}  # duet preset -> testcase module
REQUEST_BYTES = 64
RANGE_BYTES = 64 << 20  # random addresses fall in the first 64 MiB: every bank, a quarter of the rows or more
PATTERN_REQUESTS = {"stream": 200000, "random": 50000}


def main():
    driver, source_dir = sys.argv[1], sys.argv[2]
    rows = []
    for preset, module in STANDARDS.items():
        cfg = importlib.import_module(f"tests.latency_throughput.testcases.{module}").config
        spec = resolve_spec(cfg)
        with tempfile.TemporaryDirectory() as tmp:
            script = f"{tmp}/cfg.py"
            with open(script, "w") as f:
                f.write("import ramulator\n")
                f.write(f"cfg = {cfg!r}\n")
                f.write(
                    "dram = getattr(ramulator.dram, cfg['dram_class'])(org_preset=cfg['org_preset'], "
                    "timing_preset=cfg['timing_preset'])\n"
                    "ctrl = getattr(ramulator.controller, cfg['controller_class'])(dram=dram, "
                    "scheduler=getattr(ramulator.scheduler, cfg.get('scheduler_class', 'FRFCFS'))(), "
                    "refresh_manager=ramulator.refresh_manager.AllBank(), row_policy=ramulator.row_policy.Open(), "
                    "addr_mapper=ramulator.addr_mapper.MOP4CLXOR(), **cfg.get('controller_kwargs', {}))\n"
                    "mem = ramulator.memory_system.GenericDRAM(clock_ratio=1, controllers=[ctrl], "
                    "channel_mapper=ramulator.channel_mapper.CacheLineInterleave())\n"
                    "sim = ramulator.Simulation(ramulator.frontend.External(clock_ratio=1), mem)\n")
            yaml_path = f"{tmp}/cfg.yaml"
            subprocess.run([sys.executable, "-m", "ramulator", "export", script, "-o", yaml_path], check=True,
                           cwd=source_dir)
            for pattern, n in PATTERN_REQUESTS.items():
                out = subprocess.run([driver, yaml_path, pattern, str(n), str(REQUEST_BYTES), str(RANGE_BYTES)],
                                     check=True, capture_output=True, text=True).stdout.split()
                ticks, n_tx, nbytes, lat = int(out[0]), int(out[1]), int(out[2]), float(out[3])
                t_ns = ticks * spec.time_unit_ns
                gbps = nbytes / t_ns
                rows.append((preset, pattern, cfg, spec, n, ticks, nbytes, gbps, 100 * gbps / spec.max_theoretical_throughput,
                             lat * spec.time_unit_ns))
    return rows


if __name__ == "__main__":
    for r in main():
        preset, pattern, cfg, spec, n, ticks, nbytes, gbps, pct, lat_ns = r
        print(f"[{preset}_{pattern}]")
        print(f'standard = "{cfg["dram_class"]} {cfg["org_preset"]} {cfg["timing_preset"]}"')
        print(f'controller = "{cfg["controller_class"]} / {cfg.get("scheduler_class", "FRFCFS")}, refresh AllBank, '
              f'open row, MOP4CLXOR, one channel"')
        print(f'pattern = "{pattern}"')
        print(f"requests = {n}")
        print(f"request_bytes = {REQUEST_BYTES}")
        print(f"ticks = {ticks}")
        print(f"tick_ns = {spec.time_unit_ns:.6g}")
        print(f"bytes = {nbytes}")
        print(f"bandwidth_gbps = {gbps:.4f}")
        print(f"peak_gbps = {spec.max_theoretical_throughput:.4f}")
        print(f"share_pct = {pct:.3f}")
        print(f"avg_latency_ns = {lat_ns:.2f}")
        print()
