#include "hw/cpu/host_engine_device.h"

namespace duet::hw::cpu {

bool HostEngineDevice::supports(const OpShape& op) const {
    return op.weight_bytes + op.in_bytes + op.out_bytes > 0 || op.flops > 0;
}

Cost HostEngineDevice::estimate(const OpShape& op) const {
    Cost c;
    const double act = 4.0 / double(dtype_info(op.act_dtype).block_bytes);  // back to the engine's f32 rows
    c.bytes_moved = double(op.weight_bytes) + act * double(op.in_bytes + op.out_bytes);
    switch (op.cls) {
        case OpClass::GEMM:
        case OpClass::GEMV:
            c.t_ns = double(op.weight_bytes) * matmul_ns_per_weight_byte(p_, op.weight_dtype, op.m);
            c.bound = op.cls == OpClass::GEMV ? "memory" : "compute";
            break;
        case OpClass::ATTENTION:
            c.t_ns = p_.attention_ns + p_.attention_ns_per_kv_byte * double(op.weight_bytes) +
                     p_.attention_ns_per_flop * op.flops;
            c.t_launch_ns = p_.attention_ns;
            c.bound = "memory";
            break;
        case OpClass::COPY:
            c.t_ns = p_.copy.ns + p_.copy.ns_per_byte * c.bytes_moved;
            c.t_launch_ns = p_.copy.ns;
            c.bound = "memory";
            break;
        default:
            c.t_ns = p_.elementwise.ns + p_.elementwise.ns_per_byte * c.bytes_moved;
            c.t_launch_ns = p_.elementwise.ns;
            c.bound = "memory";
    }
    return c;
}

}  // namespace duet::hw::cpu
