// Plans written as JSON and read back; malformed plan files give one line
// naming the file and the key.
#include <gtest/gtest.h>

#include "policy/planner.h"
#include "tests/policy/chain.h"

namespace cuswap::policy::test {
namespace {

Workload chain_workload() {
  Workload w;
  std::string error;
  EXPECT_TRUE(build_workload(training_chain(), {}, w, error)) << error;
  return w;
}

Plan seed_plan(const Workload& w) {
  PlanRequest r;
  r.budget_bytes = 2000;
  r.link = test_link(250);
  r.time_scale = 1.5;
  return plan_and_simulate(*find_planner("seed"), w, r).plan;
}

TEST(PlanJson, RoundTrips) {
  const Workload w = chain_workload();
  const Plan plan = seed_plan(w);
  ASSERT_EQ(plan.entries.size(), 2u);
  const std::string json = write_plan_json(plan);
  Plan back;
  std::string error;
  ASSERT_TRUE(read_plan_json(json, "plan.json", back, error)) << error;
  EXPECT_EQ(back.version, kPlanVersion);
  EXPECT_EQ(back.planner, "seed");
  EXPECT_EQ(back.mode, PlanMode::scheduled);
  EXPECT_EQ(back.source, "synthetic");
  EXPECT_EQ(back.budget_bytes, 2000u);
  EXPECT_EQ(back.link, "test");
  EXPECT_DOUBLE_EQ(back.time_scale, 1.5);
  ASSERT_TRUE(back.predicted.has_value());
  EXPECT_EQ(back.predicted->peak_bytes, plan.predicted->peak_bytes);
  EXPECT_EQ(back.predicted->iteration_ns, plan.predicted->iteration_ns);
  ASSERT_EQ(back.entries.size(), plan.entries.size());
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    const PlanEntry &a = plan.entries[i], &b = back.entries[i];
    EXPECT_EQ(a.tensor.ordinal, b.tensor.ordinal);
    EXPECT_EQ(a.tensor.size_bytes, b.tensor.size_bytes);
    EXPECT_EQ(a.tensor.name, b.tensor.name);
    EXPECT_EQ(a.evict_after.name, b.evict_after.name);
    EXPECT_EQ(a.evict_after.ordinal, b.evict_after.ordinal);
    EXPECT_EQ(a.prefetch_at.index, b.prefetch_at.index);
    EXPECT_EQ(a.next_use.name, b.next_use.name);
    EXPECT_EQ(a.group, b.group);
  }
  // Written again, it is the same text.
  EXPECT_EQ(write_plan_json(back), json);
  std::vector<ResolvedEntry> resolved;
  ASSERT_TRUE(resolve(back, w, resolved, error)) << error;
  ASSERT_EQ(resolved.size(), 2u);
  EXPECT_EQ(w.tensors[resolved[0].tensor].name, "x0");
  EXPECT_EQ(resolved[0].evict_after, 1u);
  EXPECT_EQ(resolved[0].next_use, 8u);
}

// Six ops; "old" (100 B) was left by the previous iteration, is read by op
// 2 and freed after it; "new" (100 B) is made by op 3 and is live at the
// end; "w" (50 B) is a weight read by op 1 and op 4.
Workload carried_workload() {
  TraceBuilder b;
  for (int i = 0; i < 6; ++i)
    b.op("op" + std::to_string(i), 1000);
  b.weight("w", 50, {1, 4});
  const uint32_t old = b.weight("old", 100, {2});
  b.free_at(old, 2);
  b.tensor("new", 100, 3, {}, std::nullopt);
  Workload w;
  std::string error;
  EXPECT_TRUE(build_workload(b.take(), {}, w, error)) << error;
  return w;
}

uint32_t tensor_named(const Workload& w, const std::string& name) {
  for (uint32_t t = 0; t < w.tensors.size(); ++t)
    if (w.tensors[t].name == name) return t;
  ADD_FAILURE() << "no tensor " << name;
  return 0;
}

TEST(PlanJson, OneSidedAndWrapEntriesRoundTripAndResolve) {
  const Workload w = carried_workload();
  Plan plan = new_plan(w, PlanRequest{}, "cuswap");
  plan.entries.push_back(make_leaving_entry(w, tensor_named(w, "new"), 3, 0));
  plan.entries.push_back(make_returning_entry(w, tensor_named(w, "old"), 0, 2, 0));
  plan.entries.push_back(make_entry(w, tensor_named(w, "w"), 4, 0, 1, 1));
  const std::string json = write_plan_json(plan);
  EXPECT_NE(json.find("\"prefetch_at\": null"), std::string::npos) << json;
  EXPECT_NE(json.find("\"evict_after\": null"), std::string::npos) << json;
  Plan back;
  std::string error;
  ASSERT_TRUE(read_plan_json(json, "plan.json", back, error)) << error;
  ASSERT_EQ(back.entries.size(), 3u);
  EXPECT_TRUE(back.entries[0].leaves);
  EXPECT_FALSE(back.entries[0].returns);
  EXPECT_FALSE(back.entries[1].leaves);
  EXPECT_TRUE(back.entries[1].returns);
  EXPECT_EQ(write_plan_json(back), json);
  std::vector<ResolvedEntry> resolved;
  ASSERT_TRUE(resolve(back, w, resolved, error)) << error;
  EXPECT_TRUE(resolved[2].wraps());
  EXPECT_FALSE(resolved[0].wraps());

  // Each side only where it means something.
  Plan bad = plan;
  bad.entries = {make_leaving_entry(w, tensor_named(w, "old"), 0, 0)};
  EXPECT_FALSE(resolve(bad, w, resolved, error));
  EXPECT_NE(error.find("only a tensor live at the end can stay out"), std::string::npos) << error;
  bad.entries = {make_returning_entry(w, tensor_named(w, "new"), 3, 3, 0)};
  EXPECT_FALSE(resolve(bad, w, resolved, error));
  EXPECT_NE(error.find("only a tensor resident at start can start on the host"),
            std::string::npos)
      << error;
  // A weight that wraps is out over [4, end] and [start, 1]: a second
  // entry taking it out between its uses is fine, one overlapping is not.
  bad.entries = {make_entry(w, tensor_named(w, "w"), 4, 0, 1, 0),
                 make_entry(w, tensor_named(w, "w"), 1, 3, 4, 1)};
  EXPECT_TRUE(resolve(bad, w, resolved, error)) << error;
  bad.entries = {make_entry(w, tensor_named(w, "w"), 4, 0, 1, 0),
                 make_entry(w, tensor_named(w, "w"), 0, 1, 1, 1)};
  EXPECT_FALSE(resolve(bad, w, resolved, error));
  EXPECT_NE(error.find("entries[1]: its tensor is still out for entries[0]"), std::string::npos)
      << error;
  // Wrapping needs a tensor resident at start and live at the end.
  bad.entries = {make_entry(w, tensor_named(w, "old"), 2, 0, 0, 0)};
  EXPECT_FALSE(resolve(bad, w, resolved, error));
  EXPECT_NE(error.find("which only a tensor resident at start and live at the end may wrap"),
            std::string::npos)
      << error;
}

TEST(PlanJson, AnEntryWithNeitherSideIsRejected) {
  const Workload w = carried_workload();
  Plan plan = new_plan(w, PlanRequest{}, "cuswap");
  plan.entries.push_back(make_leaving_entry(w, tensor_named(w, "new"), 3, 0));
  std::string json = write_plan_json(plan);
  const std::string evict = "\"evict_after\": {";
  const size_t at = json.find(evict);
  ASSERT_NE(at, std::string::npos);
  json.replace(at, json.find('}', at) - at + 1, "\"evict_after\": null");
  Plan back;
  std::string error;
  ASSERT_TRUE(read_plan_json(json, "plan.json", back, error)) << error;
  std::vector<ResolvedEntry> resolved;
  EXPECT_FALSE(resolve(back, w, resolved, error));
  EXPECT_NE(error.find("entries[0]: an entry must leave or return"), std::string::npos) << error;
}

TEST(PlanJson, NamesAreEscaped) {
  Plan plan;
  plan.planner = "seed";
  plan.source = "a \"quoted\"\\path\n";
  Plan back;
  std::string error;
  ASSERT_TRUE(read_plan_json(write_plan_json(plan), "p", back, error)) << error;
  EXPECT_EQ(back.source, plan.source);
}

struct Bad {
  const char* what;
  std::string json;
  std::string expected;  // part of the one error line
};

std::string valid_with(const std::string& from, const std::string& to) {
  const Workload w = chain_workload();
  std::string json = write_plan_json(seed_plan(w));
  const size_t at = json.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) json.replace(at, from.size(), to);
  return json;
}

TEST(PlanJson, MalformedFilesNameTheKey) {
  const std::vector<Bad> cases = {
      {"not json", "{\"version\": 1,", "bad.json: not JSON"},
      {"array", "[1, 2]", "bad.json: key (top level): expected an object"},
      {"no version", "{}", "bad.json: key version: expected a value (missing)"},
      {"future version", valid_with("\"version\": 1", "\"version\": 7"), "key version: expected 1"},
      {"bad mode", valid_with("\"mode\": \"scheduled\"", "\"mode\": \"magic\""), "key mode"},
      {"string ordinal",
       valid_with("\"ordinal\": 0, \"size_bytes\"", "\"ordinal\": \"0\", \"size_bytes\""),
       "key entries[0].tensor.ordinal: expected an unsigned integer"},
      {"missing trigger", valid_with("\"prefetch_at\"", "\"prefetch_later\""),
       "key entries[0].prefetch_at: expected a value (missing)"},
      {"negative scale", valid_with("\"time_scale\": 1.5", "\"time_scale\": -1"),
       "key time_scale: expected a positive number"},
      {"entries not array", valid_with("\"entries\": [", "\"entries\": {\"a\": ["),
       "bad.json: not JSON"},
  };
  for (const Bad& c : cases) {
    Plan plan;
    std::string error;
    EXPECT_FALSE(read_plan_json(c.json, "bad.json", plan, error)) << c.what;
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.what << ": " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << c.what;
  }
}

TEST(PlanJson, MissingFileIsOneLine) {
  Plan plan;
  std::string error;
  EXPECT_FALSE(read_plan_file("/nonexistent/plan.json", plan, error));
  EXPECT_NE(error.find("/nonexistent/plan.json: cannot open"), std::string::npos) << error;
}

TEST(PlanJson, ResolveRejectsAPlanForAnotherTrace) {
  const Workload w = chain_workload();
  Plan plan = seed_plan(w);
  std::vector<ResolvedEntry> resolved;
  std::string error;
  plan.entries[1].tensor.size_bytes = 999;
  EXPECT_FALSE(resolve(plan, w, resolved, error));
  EXPECT_NE(error.find("entries[1].tensor: no allocated tensor #1 of 999 bytes"), std::string::npos)
      << error;
  plan = seed_plan(w);
  plan.entries[0].prefetch_at.name = "conv9";
  EXPECT_FALSE(resolve(plan, w, resolved, error));
  EXPECT_NE(error.find("entries[0].prefetch_at: no op \"conv9\" #0"), std::string::npos) << error;
  plan = seed_plan(w);
  std::swap(plan.entries[0].evict_after, plan.entries[0].prefetch_at);
  EXPECT_FALSE(resolve(plan, w, resolved, error));
  EXPECT_NE(error.find("entries[0]: expected evict_after < prefetch_at <= next_use"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace cuswap::policy::test
