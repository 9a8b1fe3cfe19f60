#include "hw/dram/address_mapping.h"

#include "core/error.h"

namespace duet::hw::dram {

AddressMapping::AddressMapping(const DramOrg& org, int channels, const std::string& order) : order_(order) {
    static const char* names[NFIELDS] = {"Ch", "Ra", "Bg", "Ba", "Ro", "Co"};
    count_ = {channels, org.ranks, org.bank_groups, org.banks_per_group, org.rows, org.columns_per_row()};
    burst_bytes_ = org.burst_bytes();
    if (order.size() != 2 * NFIELDS)
        fail("address mapping '{}' must name each of Ch, Ra, Bg, Ba, Ro, Co once (MSB first), e.g. '{}'", order,
             kDefault);
    std::array<bool, NFIELDS> seen{};
    for (int i = 0; i < NFIELDS; ++i) {
        const std::string tok = order.substr(size_t(2 * i), 2);
        int f = -1;
        for (int k = 0; k < NFIELDS; ++k)
            if (tok == names[k]) f = k;
        if (f < 0 || seen[f])
            fail("address mapping '{}': field '{}' is unknown or repeated (allowed: Ch, Ra, Bg, Ba, Ro, Co, each once)",
                 order, tok);
        seen[f] = true;
        lsb_first_[NFIELDS - 1 - i] = Field(f);
    }
    capacity_bytes_ = uint64_t(burst_bytes_);
    for (auto c : count_) capacity_bytes_ *= uint64_t(c);
}

DecodedAddr AddressMapping::decode(uint64_t byte_addr) const {
    uint64_t x = (byte_addr % capacity_bytes_) / uint64_t(burst_bytes_);
    std::array<int64_t, NFIELDS> v{};
    for (Field f : lsb_first_) {
        v[f] = int64_t(x % uint64_t(count_[f]));
        x /= uint64_t(count_[f]);
    }
    DecodedAddr d;
    d.channel = int(v[CH]);
    d.bank = {int(v[RA]), int(v[BG]), int(v[BA]), v[RO]};
    d.column = v[CO];
    return d;
}

}  // namespace duet::hw::dram
