#pragma once
// Errors of the HTTP API in OpenAI's JSON error shape:
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "temperature", "code": null}}
// Thrown inside request handlers and turned into a response at the HTTP boundary.
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace duet::server {

class ApiError : public std::runtime_error {
public:
    ApiError(int status, std::string type, const std::string& message, std::string param = "", std::string code = "")
        : std::runtime_error(message), status_(status), type_(std::move(type)), param_(std::move(param)),
          code_(std::move(code)) {}
    int status() const { return status_; }
    nlohmann::json to_json() const;

    // The statuses the API uses, with OpenAI's type names.
    static ApiError bad_request(const std::string& message, const std::string& param = "");  // 400
    static ApiError unauthorized(const std::string& message);                                // 401
    static ApiError not_found(const std::string& message, const std::string& param = "");    // 404
    static ApiError too_large(const std::string& message);                                   // 413
    static ApiError rate_limited(const std::string& message);                                // 429
    static ApiError unavailable(const std::string& message);                                 // 503
    // 499 (nginx's "client closed request"): the client left before the response; nobody reads it.
    static ApiError client_closed();

private:
    int status_;
    std::string type_, param_, code_;
};

}  // namespace duet::server
