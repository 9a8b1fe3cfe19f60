#pragma once
// CENT's mapping of a Llama decoder block's non-GEMV work onto GDDR6-AiM channels
// (Morteza1814/CENT cent_simulation/Llama.py TransformerBlockLlama::trace_only and the
// *_only_trace helpers of TransformerBlock.py; docs/hardware-model.md 6, "How CENT maps a block").
// Selected by a PIM preset's [mapping] attention = "cent_head_per_bank".
//
// (a) Decode attention of one device: q.K^T with one bank per context position (a K row holds
//     1024 / head_dim heads of one position; positions over the banks of all `devices`), the
//     scores written to one bank per head with single-bank writes, scaled and exponentiated with
//     EWMUL, read back, then p.V head by head: one channel per KV head, one bank per head
//     dimension (16 of them, head_dim / 16 passes), the scores of 1024 positions per input
//     broadcast and a MAC register readout per pass.
// (b) The block's element-wise work on the units: two RMSNorms (square-sum as an all-bank MAC,
//     the scale as EWMUL), rotary (EWMUL of q and k), and the SiLU gate product (EWMUL), with
//     the single-bank vector writes and reads the CXL controller issues for them.
// Costs come from the preset's own timings (base memory and [timing]); single-bank writes and
// reads are issued by the CXL controller's one DMA at [mapping] host_request_cycles apart.
// Closed form, every command in order (CENT's DMA issues them one at a time). Pure functions.
#include <cstdint>

#include "hw/pim/pim_spec.h"

namespace duet::hw::pim {

struct CentBlockShape {
    int64_t dim = 0;        // model width (all heads: CENT maps every head on every device)
    int64_t ffn_dim = 0;    // FFN width (the gate product runs over all of it, as CENT's trace)
    int64_t heads = 0, kv_heads = 0, head_dim = 128;
    int64_t context = 1;    // positions attended over (the decoded token's included)
    int devices = 1;        // devices whose banks share the q.K^T positions (CENT's FC_devices)
    int channels = 0;       // AiM channels of one device; 0: the preset's
};

struct CentCost {
    double t_ns = 0;
    // Command counts of one device, AiM broadcast commands counted once per channel they reach
    // (as aim_simulator's n_MAC16, n_EWMUL16, n_WRGB), host requests once each (n_WR, n_RD).
    uint64_t host_wr = 0, host_rd = 0;   // single-bank 32 B writes / reads through the DMA
    uint64_t wr_gb = 0, mac = 0, rd_mac = 0, wr_bias = 0, ewmul = 0, act = 0, mode = 0;
    CentCost& operator+=(const CentCost& o);
};

CentCost cent_attention(const PimSpec& s, const CentBlockShape& b);
CentCost cent_vector_ops(const PimSpec& s, const CentBlockShape& b);
// The operators of (b) one at a time, for placement (PimDevice::estimate prices a rank's records
// with them): the same commands cent_vector_ops issues, which is two cent_rmsnorm of dim, one
// cent_rotary of dim and heads / kv_heads, and one cent_silu_gate of ffn_dim. q_dim: the rotated
// q elements (k has q_dim / rep); channels 0: the preset's. Throw duet::Error on a width below 1.
CentCost cent_rmsnorm(const PimSpec& s, int64_t dim, int channels = 0);
CentCost cent_rotary(const PimSpec& s, int64_t q_dim, int64_t rep, int channels = 0);
CentCost cent_silu_gate(const PimSpec& s, int64_t ffn_dim, int channels = 0);

}  // namespace duet::hw::pim
