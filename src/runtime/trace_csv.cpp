#include "runtime/trace_csv.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "core/error.h"

namespace duet::runtime {

void write_op_trace_csv(const graph::OpTrace& trace, const std::string& path) {
    const std::string tmp = path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "w");
    if (!f) fail("{}: cannot open for writing", path);
    std::string buf =
        "index,kind,role,phase,layer,n_seq,m,n,k,n_head,n_head_kv,weight_dtype,weight_bytes,in_bytes,out_bytes,flops\n";
    bool ok = true;
    for (size_t i = 0; i < trace.size(); ++i) {
        const graph::OpRecord& r = trace[i];
        buf += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.0f}\n", i, graph::op_kind_name(r.kind),
                           graph::weight_role_name(r.role), graph::phase_name(r.phase), r.layer, r.n_seq, r.m, r.n, r.k,
                           r.n_head, r.n_head_kv, dtype_name(r.weight_dtype), r.weight_bytes, r.in_bytes, r.out_bytes,
                           r.flops);
        if (buf.size() > (1u << 20)) {
            ok = ok && std::fwrite(buf.data(), 1, buf.size(), f) == buf.size();
            buf.clear();
        }
    }
    ok = ok && std::fwrite(buf.data(), 1, buf.size(), f) == buf.size();
    if (std::fclose(f) != 0 || !ok) {
        std::remove(tmp.c_str());
        fail("{}: write failed", path);
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) fail("{}: cannot rename {} to it: {}", path, tmp, ec.message());
}

}  // namespace duet::runtime
