#pragma once
// A plain HTTP/1.1 client for the tests: Boost.Beast, synchronous, one connection a request. Beast is
// compiled once, in http_request.cpp, not in every test program that makes requests.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace rgbaq {

struct HttpReply {
  int status = 0;
  mutable std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  nlohmann::json json_body() const { return nlohmann::json::parse(body, nullptr, false); }
};

// `headers` are sent as given; Host defaults to 127.0.0.1:PORT.
HttpReply http_request(int port, const std::string& method, const std::string& target,
                       std::vector<std::pair<std::string, std::string>> headers = {}, const std::string& body = {});

}  // namespace rgbaq
