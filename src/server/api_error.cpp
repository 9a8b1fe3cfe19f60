#include "server/api_error.h"

namespace duet::server {

nlohmann::json ApiError::to_json() const {
    nlohmann::json e = {{"message", what()}, {"type", type_}};
    e["param"] = param_.empty() ? nlohmann::json() : nlohmann::json(param_);
    e["code"] = code_.empty() ? nlohmann::json() : nlohmann::json(code_);
    return {{"error", e}};
}

ApiError ApiError::bad_request(const std::string& message, const std::string& param) {
    return ApiError(400, "invalid_request_error", message, param);
}
ApiError ApiError::unauthorized(const std::string& message) {
    return ApiError(401, "invalid_request_error", message, "", "invalid_api_key");
}
ApiError ApiError::not_found(const std::string& message, const std::string& param) {
    return ApiError(404, "invalid_request_error", message, param, param == "model" ? "model_not_found" : "");
}
ApiError ApiError::too_large(const std::string& message) { return ApiError(413, "invalid_request_error", message); }
ApiError ApiError::rate_limited(const std::string& message) {
    return ApiError(429, "rate_limit_error", message, "", "rate_limit_exceeded");
}
ApiError ApiError::unavailable(const std::string& message) { return ApiError(503, "server_error", message); }
ApiError ApiError::client_closed() {
    return ApiError(499, "invalid_request_error", "the client closed the connection before the response");
}

}  // namespace duet::server
