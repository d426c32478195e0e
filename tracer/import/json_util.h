// JSON helpers shared by the JSON importers: parsing with simdjson (DOM),
// the byte offset of a syntax error, and typed field access whose failures
// are one line naming the file, the JSON pointer and what was expected.
//
// Invariants: nothing here throws (simdjson is used through its error
// codes); every false return has set the error line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <simdjson.h>

namespace cuswap::trace::import {

// A JSON pointer built on the stack, rendered only when an error needs it.
// It points at its parent: a path stored in a variable must be built from
// parents that are variables too, not from temporaries.
struct JsonPath {
  const JsonPath* parent = nullptr;
  std::string_view key;
  size_t index = 0;
  bool is_index = false;

  JsonPath at(std::string_view k) const { return {this, k, 0, false}; }
  JsonPath at(size_t i) const { return {this, {}, i, true}; }
  std::string str() const;
};

class JsonErrors {
 public:
  JsonErrors(std::string_view name, std::string& error) : name_(name), error_(error) {}

  // Sets the error line: "FILE: /a/0/b: expected WHAT". Returns false.
  bool fail(const JsonPath& path, std::string_view what) const;

  // Typed access; each fails with the path and the expected type.
  bool object(simdjson::dom::element e, const JsonPath& p, simdjson::dom::object& out) const;
  bool array(simdjson::dom::element e, const JsonPath& p, simdjson::dom::array& out) const;
  bool string(simdjson::dom::element e, const JsonPath& p, std::string_view& out) const;
  // Numbers of any JSON kind; integral doubles are accepted for integers.
  // With `strings`, a string holding a decimal integer is accepted too
  // (protobuf's JSON writes int64 as strings).
  bool int64(simdjson::dom::element e, const JsonPath& p, int64_t& out,
             bool strings = false) const;
  bool uint64(simdjson::dom::element e, const JsonPath& p, uint64_t& out,
              bool strings = false) const;
  bool number(simdjson::dom::element e, const JsonPath& p, double& out) const;

  // A required member of an object.
  bool member(simdjson::dom::object o, std::string_view key, const JsonPath& p,
              simdjson::dom::element& out) const;

  std::string_view name() const { return name_; }

 private:
  std::string_view name_;
  std::string& error_;
};

// An optional member: false when absent (or when `o` is not an object).
bool find_member(simdjson::dom::element o, std::string_view key, simdjson::dom::element& out);

// Parses `bytes` into `root` with `parser`; a syntax error is reported with
// the byte offset where it was found.
bool parse_json(std::string_view bytes, std::string_view name, simdjson::dom::parser& parser,
                simdjson::dom::element& root, std::string& error);

// The offset of the first byte where `bytes` stops being JSON and what was
// expected there; offset == bytes.size() + 1 when no error was found.
struct JsonSyntaxError {
  size_t offset = 0;
  std::string_view expected;
  bool found = false;
};
JsonSyntaxError find_json_syntax_error(std::string_view bytes);

}  // namespace cuswap::trace::import
