#pragma once
// Logging through spdlog to stderr. Levels by name as in settings.json's runtime.log_level:
// trace, debug, info, warn, error, off. Default: warn for the CLI (its stdout is the product).
#include <spdlog/spdlog.h>

#include <string_view>

namespace duet {

// Sets the global level; throws duet::Error naming `source` (e.g. "settings.json runtime.log_level")
// when the name is not one of the allowed levels.
void set_log_level(std::string_view level, std::string_view source = "log level");

}  // namespace duet

#define DUET_LOG_DEBUG(...) ::spdlog::debug(__VA_ARGS__)
#define DUET_LOG_INFO(...) ::spdlog::info(__VA_ARGS__)
#define DUET_LOG_WARN(...) ::spdlog::warn(__VA_ARGS__)
#define DUET_LOG_ERROR(...) ::spdlog::error(__VA_ARGS__)
