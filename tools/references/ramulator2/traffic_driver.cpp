// Stream and random read traffic on one Ramulator 2.1 controller, through its External frontend
// (README section 7). Built against the reference checkout by tools/references/ramulator2.sh;
// not part of duet's build.
//   traffic_driver <config.yaml> <stream|random> <requests> <request_bytes> <range_bytes>
// A request of request_bytes is sent as request_bytes / tx_bytes consecutive transactions. Where
// they land is the mapper's choice: MOP4CLXOR XORs the first bank-address field (bank group on
// LPDDR5, pseudo channel on HBM2/HBM3) with the low column bits, so the two 32 B halves of a 64 B
// request open two banks. The frontend injects as fast as the controller accepts, in program
// order. Prints: ticks transactions bytes avg_latency_ticks
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ramulator/base/config.h"
#include "ramulator/base/factory.h"
#include "ramulator/base/request.h"
#include "ramulator/frontend/i_frontend.h"
#include "ramulator/memory_system/i_memory_system.h"

static uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

int main(int argc, char** argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: %s config.yaml stream|random requests request_bytes range_bytes\n", argv[0]);
        return 2;
    }
    const std::string pattern = argv[2];
    const uint64_t n_req = std::strtoull(argv[3], nullptr, 10);
    const uint64_t req_bytes = std::strtoull(argv[4], nullptr, 10);
    const uint64_t range = std::strtoull(argv[5], nullptr, 10);
    auto config = Ramulator::Config::parse_config_file(argv[1]);
    auto* fe = Ramulator::Factory::create_frontend(config);
    auto* ms = Ramulator::Factory::create_memory_system(config);
    fe->connect_memory_system(ms);
    ms->connect_frontend(fe);
    const uint64_t tx = uint64_t(ms->get_tx_bytes());
    const uint64_t per_req = req_bytes > tx ? req_bytes / tx : 1;
    const uint64_t n_tx = n_req * per_req;
    uint64_t sent = 0, done = 0, ticks = 0;
    double lat_sum = 0;
    auto cb = [&](Ramulator::Request& r) {
        ++done;
        lat_sum += double(r.depart - r.arrive);
    };
    while (done < n_tx) {
        while (sent < n_tx) {
            const uint64_t req = sent / per_req, part = sent % per_req;
            uint64_t base = pattern == "stream" ? req * per_req * tx
                                                : (splitmix64(req) % (range / (per_req * tx))) * per_req * tx;
            if (!fe->receive_external_requests(0, Ramulator::Addr_t(base + part * tx), 0, cb, int(tx))) break;
            ++sent;
        }
        ms->tick();
        ++ticks;
    }
    fe->finalize();
    ms->finalize();
    std::printf("%llu %llu %llu %.3f\n", (unsigned long long)ticks, (unsigned long long)n_tx,
                (unsigned long long)(n_tx * tx), lat_sum / double(n_tx));
    return 0;
}
