#pragma once
// Physical address -> (channel, rank, bank group, bank, row, column) for a burst-aligned
// address. The order is a string of two-letter fields from the most to the least significant
// (Ramulator's style), e.g. "RoRaBaCoBgCh": channel bits lowest, then bank group, so that
// consecutive bursts rotate channels and bank groups; columns next, so a stream stays in a
// row. Counts need not be powers of two (mixed radix). Thread safe after construction.
#include <array>
#include <cstdint>
#include <string>

#include "hw/dram/dram_channel.h"

namespace duet::hw::dram {

struct DecodedAddr {
    int channel = 0;
    BankAddr bank;
    int64_t column = 0;  // burst index within the row
};

class AddressMapping {
public:
    static constexpr const char* kDefault = "RoRaBaCoBgCh";
    // Throws duet::Error naming `order` and the allowed fields when it is malformed.
    AddressMapping(const DramOrg& org, int channels, const std::string& order = kDefault);

    DecodedAddr decode(uint64_t byte_addr) const;
    uint64_t capacity_bytes() const { return capacity_bytes_; }
    const std::string& order() const { return order_; }

private:
    enum Field { CH, RA, BG, BA, RO, CO, NFIELDS };
    std::array<Field, NFIELDS> lsb_first_{};
    std::array<int64_t, NFIELDS> count_{};
    int burst_bytes_ = 0;
    uint64_t capacity_bytes_ = 0;
    std::string order_;
};

}  // namespace duet::hw::dram
