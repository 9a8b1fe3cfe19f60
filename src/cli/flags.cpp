#include "cli/flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "core/build_paths.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"

namespace duet::cli {

std::string bound_text(long double v, bool integral) {
    if (integral) {
        const long double a = std::fabs(v);
        if (a >= (1 << 20)) {
            const int e = int(std::lround(std::log2(a)));
            if (std::ldexp(1.0L, e) == a) return fmt::format("{}2^{}", v < 0 ? "-" : "", e);
            if (std::ldexp(1.0L, e) - 1 == a) return fmt::format("{}2^{}-1", v < 0 ? "-" : "", e);
        }
        return fmt::format("{}", static_cast<long long>(v));
    }
    return fmt::format("{}", static_cast<double>(v));
}

CLI::Validator range_check(long double lo, long double hi, bool integral) {
    const std::string allowed = fmt::format("allowed: {} to {}", bound_text(lo, integral), bound_text(hi, integral));
    auto check = [lo, hi, integral, allowed](std::string& s) -> std::string {
        const char* b = s.c_str();
        char* end = nullptr;
        errno = 0;
        long double v = 0;
        if (integral) {
            // Integers in full: "1.5" and "1e3" are not integers; overflow is out of range.
            // Unsigned text through strtoull so 2^64-1 is representable; long double holds it exactly.
            const bool negative = s.find('-') != std::string::npos;
            if (negative) {
                const long long i = std::strtoll(b, &end, 10);
                v = static_cast<long double>(i);
            } else {
                const unsigned long long u = std::strtoull(b, &end, 10);
                v = static_cast<long double>(u);
            }
            if (end == b || *end != '\0') return fmt::format("'{}' is not an integer ({})", s, allowed);
            if (errno == ERANGE) return fmt::format("{} is out of range ({})", s, allowed);
        } else {
            v = std::strtold(b, &end);
            if (end == b || *end != '\0' || std::isnan(v)) return fmt::format("'{}' is not a number ({})", s, allowed);
        }
        if (errno == ERANGE || !(v >= lo && v <= hi)) return fmt::format("{} is out of range ({})", s, allowed);
        return "";
    };
    return CLI::Validator(check, fmt::format("in {} to {}", bound_text(lo, integral), bound_text(hi, integral)));
}

CLI::Option* text(CLI::App* app, const std::string& names, std::string& target, const std::string& help) {
    return app->add_option(names, target, help)->capture_default_str();
}

CLI::Option* text(CLI::App* app, const std::string& names, std::string& target, const std::string& help,
                  const DefaultFrom& dflt) {
    return app->add_option(names, target, help)->default_str(dflt.text);
}

CLI::Option* alias(CLI::App* app, const std::string& old_name, const std::string& canonical, std::string& target) {
    if (CLI::Option* c = app->get_option_no_throw(canonical))
        c->description(fmt::format("{} ({}: deprecated alias)", c->get_description(), old_name));
    return app
        ->add_option_function<std::string>(
            old_name,
            [&target, old_name, canonical](const std::string& v) {
                DUET_LOG_WARN("{} is deprecated; use {}", old_name, canonical);
                target = v;
            },
            fmt::format("Deprecated alias of {}", canonical))
        ->group("");  // hidden: the canonical flag's help names it
}

CLI::Validator dtype_alias(const std::string& flag, std::vector<std::string> keep) {
    return CLI::Validator(
        [flag, keep](std::string& s) -> std::string {
            const std::string name = canonical_dtype_name(s);
            if (name != s && std::find(keep.begin(), keep.end(), s) == keep.end()) {
                DUET_LOG_WARN("{} '{}' is a deprecated spelling; use '{}'", flag, s, name);
                s = name;
            }
            return "";
        },
        "");
}

std::string default_settings_path() { return std::string(core::default_config_dir()) + "/settings.json"; }
std::string default_config_path() { return std::string(core::default_config_dir()) + "/config.toml"; }

model::ChatTemplate chat_template_flag(const std::string& name) {
    try {
        return model::chat_template_from_name(name);
    } catch (const Error&) {
        fail("--chat-template = \"{}\" is not known (allowed: llama2, llama3, chatml, mistral)", name);
    }
}

}  // namespace duet::cli
