// One request line checked before anything acts on it: every malformed or hostile frame becomes an
// error response (the expected codes and messages are written out here by hand), never an exception
// or a crash, and JSON nested beyond the limit is refused before it is parsed.
#include <gtest/gtest.h>

#include <string>

#include "daemon/protocol.h"
#include "daemon/socket/request_frame.h"

namespace rgbaq::daemon {
namespace {

std::string code_of(const ParsedFrame& f) {
  EXPECT_FALSE(f.request);
  return f.error_response["error"]["code"].get<std::string>();
}

TEST(RequestFrame, AWellFormedRequest) {
  const auto f = parse_request_frame(R"({"v":1,"id":"a7","method":"status","params":{"x":[1,{"y":2}]}})");
  ASSERT_TRUE(f.request);
  EXPECT_EQ(f.request->id, "a7");
  EXPECT_EQ(f.request->method, "status");
  EXPECT_EQ(f.request->params["x"][1]["y"], 2);
  const auto no_params = parse_request_frame(R"({"v":1,"method":"ping"})");
  ASSERT_TRUE(no_params.request);
  EXPECT_TRUE(no_params.request->id.is_null());
  EXPECT_TRUE(no_params.request->params.is_object());
}

TEST(RequestFrame, AVersionThatIsNotTheIntegerOneIsRefusedWithItsId) {
  for (const char* v : {R"("1")", "1.5", "null", "[1]", "{}", "true", "2", "-1", "18446744073709551615"}) {
    const auto f = parse_request_frame(std::string(R"({"v":)") + v + R"(,"id":9,"method":"ping"})");
    EXPECT_EQ(code_of(f), "unsupported_version") << v;
    EXPECT_EQ(f.error_response["id"], 9) << v;
  }
  EXPECT_EQ(code_of(parse_request_frame(R"({"id":9,"method":"ping"})")), "unsupported_version");
}

TEST(RequestFrame, MalformedFramesAreBadRequests) {
  for (const char* line : {"not json", "[1,2]", "7", R"({"v":1})", R"({"v":1,"method":7})", R"({"v":1,"method":"ping","params":[]})",
                           R"({"v":1,"method":"ping","params":"x"})", R"({"v":1,"id":[1],"method":"ping"})",
                           R"({"v":1,"id":{"a":1},"method":"ping"})", "{\"v\":1,\"method\":\"ping\"", "\xff\xfe"}) {
    const auto f = parse_request_frame(line);
    EXPECT_EQ(code_of(f), "bad_request") << line;
    EXPECT_NO_THROW(f.error_response.dump()) << line;
  }
}

TEST(RequestFrame, DeepNestingIsRefusedBeforeParsing) {
  // 100,000 levels in the id: parsing and echoing it used to overflow the stack.
  std::string deep_id = R"({"v":1,"method":"ping","id":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  const auto f = parse_request_frame(deep_id);
  EXPECT_EQ(code_of(f), "bad_request");
  EXPECT_NE(f.error_response["error"]["message"].get<std::string>().find("deeper than 64 levels"), std::string::npos);
  EXPECT_TRUE(f.error_response["id"].is_null());
  std::string deep_params = R"({"v":1,"method":"ping","params":{"a":)" + std::string(100000, '{') + "}";
  EXPECT_EQ(code_of(parse_request_frame(deep_params)), "bad_request");
  // Brackets inside strings are text, not nesting; 64 levels are fine, 65 are not.
  const std::string brackets_in_string = R"({"v":1,"method":"ping","params":{"s":")" + std::string(1000, '[') + R"(\"["}})";
  EXPECT_TRUE(parse_request_frame(brackets_in_string).request);
  EXPECT_TRUE(protocol::nesting_within(std::string(64, '[') + std::string(64, ']')));
  EXPECT_FALSE(protocol::nesting_within(std::string(65, '[') + std::string(65, ']')));
  EXPECT_TRUE(protocol::nesting_within(R"(["\\", "[[[[", {"a": "\"{{{{"}])", 2));
}

}  // namespace
}  // namespace rgbaq::daemon
