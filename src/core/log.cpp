#include "core/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include "core/error.h"

namespace duet {

void set_log_level(std::string_view level, std::string_view source) {
    static const bool init = [] {
        auto logger = spdlog::stderr_color_mt("duet");
        logger->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
        spdlog::set_default_logger(logger);
        return true;
    }();
    (void)init;
    const auto lvl = spdlog::level::from_str(std::string(level));
    // from_str maps unknown names to "off"; accept "off" only when asked for.
    if (lvl == spdlog::level::off && level != "off")
        fail("{} = '{}' is not allowed (allowed: trace, debug, info, warn, error, off)", source, level);
    spdlog::set_level(lvl);
}

}  // namespace duet
