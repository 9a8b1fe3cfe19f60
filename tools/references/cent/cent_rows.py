"""Runs CENT's own trace generator and AiM simulator for one model on N CXL devices with tensor
parallelism N (pipeline parallelism 1: CENT's Figure 13a configuration) and prints its rows as
TOML tables. Called by tools/references/cent.sh from CENT's cent_simulation folder (its modules
are imported from there); not part of duet.

Per sequence length L it runs what CENT's run_sim.py runs for that row (function_sim.py
--model-parallel --FC-devices N --seqlen L --only-trace, then aim_simulator's ramulator2 with
test/example.yaml) and computes the row with CENT's own functions: PIM latency
(cent_power_calculator.command_processor: memory_system_cycles / 2 GHz), CXL latency
(cxl_latency.llama_latency with 144 // N PCIe lanes per device), accelerator latency
(run_sim.calculate_acc_latency), embedding latency (the embedding trace at L = prefill + decode)
and token latency = block latency x blocks + embedding + utils.InOut_latency. Once per model it
also runs the block's weight GEMVs alone (function_sim.py --only-FC: run_sim.py's model_parallel_FC
trace), table <model>_tp<N>_fc.

    python3 cent_rows.py <ramulator2 binary> <example.yaml> <work dir> <model> <devices> <L>...
"""
import argparse
import os
import subprocess
import sys

from cent_power_calculator import command_processor
from cxl_latency import llama_latency
from run_sim import calculate_acc_latency
from utils import InOut_latency, TransformerBlock_number, embedding_size, ffn_size, n_heads

PCIE_LANES = 144  # run_sim.py --PCIE_lanes default
CHANNELS = 32     # run_sim.py --num_channels default
REUSE = 32        # run_sim.py --reuse_size default
PREFILL, DECODE = 512, 3584  # run_sim.py --prefill / --decoding defaults


def simulate(ram, yaml, model, devices, seqlen, work, embedding=False, only_fc=False):
    flag = "--Llama-GQA" if model == "Llama2-70B" else "--Llama"
    kind = "embedding" if embedding else "fc" if only_fc else "block"
    name = f"{model}_{devices}dev_{kind}_L{seqlen}"
    trace, log = os.path.join(work, name + ".txt"), os.path.join(work, name + ".log")
    cmd = [sys.executable, "function_sim.py", flag, "--n_heads", str(n_heads[model]), "--ffn_dim", str(ffn_size[model]),
           "--only-trace", "--num-channels", str(CHANNELS), "--FC-devices", str(devices), "--model-parallel",
           "--seqlen", str(seqlen), "--op-trace", "--GEMV", "reuse-GB", "--reuse-size", str(REUSE),
           "--trace-file", trace]
    if embedding:
        cmd.insert(5, "--embedding")
    if only_fc:  # run_sim.py's model_parallel_FC trace: the block's weight GEMVs alone
        cmd.insert(5, "--only-FC")
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    out = subprocess.run([ram, "-f", yaml, "-t", trace], check=True, stdout=subprocess.PIPE, text=True).stdout
    with open(log, "w") as f:  # run_sim.run_command keeps the lines not starting with '['
        f.write("\n".join(line for line in out.splitlines() if not line.startswith("[")))
    os.remove(trace)
    return command_processor(log)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ram")
    ap.add_argument("yaml")
    ap.add_argument("work")
    ap.add_argument("model")
    ap.add_argument("devices", type=int)
    ap.add_argument("seqlens", type=int, nargs="+")
    a = ap.parse_args()
    m, n = a.model, a.devices
    emb_ms = simulate(a.ram, a.yaml, m, n, PREFILL + DECODE, a.work, embedding=True)["latency"]
    cxl_ms = llama_latency([embedding_size[m], ffn_size[m]], PCIE_LANES // n, n, n)
    args = argparse.Namespace(model=m, num_channels=CHANNELS)
    key = m.replace("Llama2-", "llama2_").lower()
    counted = ("MAC16", "WRGB", "RDMAC16", "WRMAC16", "ACT16", "PREA", "TMOD", "EWMUL16", "WR", "RD")
    fc = simulate(a.ram, a.yaml, m, n, a.seqlens[0], a.work, only_fc=True)
    print(f"\n[{key}_tp{n}_fc]")
    print(f'model = "{m}"')
    print(f"devices = {n}\ntp = {n}\npp = 1\nseqlen = {a.seqlens[0]}")
    print(f"pim_cycles = {fc['cycles']:.0f}")
    print(f"pim_ms = {fc['latency']:.9g}")
    for c in counted:
        print(f"n_{c} = {fc[c]:.0f}")
    for seqlen in a.seqlens:
        st = simulate(a.ram, a.yaml, m, n, seqlen, a.work)
        acc = calculate_acc_latency(args, seqlen)
        acc_ms = acc["RMSNorm_latency"] + acc["Softmax_latency"] + acc["RotEmbed_latency"]
        block_ms = st["latency"] + cxl_ms + acc_ms
        token_ms = block_ms * TransformerBlock_number[m] + emb_ms + InOut_latency
        print(f"\n[{key}_tp{n}_L{seqlen}]")
        print(f'model = "{m}"')
        print(f"devices = {n}\ntp = {n}\npp = 1\nseqlen = {seqlen}")
        print(f"pim_cycles = {st['cycles']:.0f}")
        print(f"pim_ms = {st['latency']:.9g}")
        print(f"cxl_ms = {cxl_ms:.9g}")
        print(f"acc_ms = {acc_ms:.9g}")
        print(f"embedding_ms = {emb_ms:.9g}")
        print(f"inout_ms = {InOut_latency:.9g}")
        print(f"token_ms = {token_ms:.9g}")
        for c in counted:
            print(f"n_{c} = {st[c]:.0f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
