// Tests for the value parsers and readers of common/config.h: sizes,
// integers, numbers, booleans, lists, per-device values and the pair reader.
#include "common/config.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace cuswap::conf {
namespace {

constexpr uint64_t KiB = uint64_t{1} << 10;
constexpr uint64_t MiB = uint64_t{1} << 20;
constexpr uint64_t GiB = uint64_t{1} << 30;
constexpr uint64_t TiB = uint64_t{1} << 40;
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

// ---------------------------------------------------------------------------
// parse_size

TEST(ParseSize, PlainBytes) {
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size("1"), 1u);
  EXPECT_EQ(parse_size("1024"), 1024u);
  EXPECT_EQ(parse_size("007"), 7u);
  EXPECT_EQ(parse_size("18446744073709551615"), kMax);
}

TEST(ParseSize, EveryUnitInEveryCase) {
  const struct {
    std::string_view prefix;
    uint64_t unit;
  } units[] = {{"k", KiB}, {"m", MiB}, {"g", GiB}, {"t", TiB}};
  for (const auto& [prefix, unit] : units) {
    const char lower = prefix[0];
    const char upper = static_cast<char>(lower - 'a' + 'A');
    for (const std::string& spelling :
         {std::string{lower}, std::string{upper}, std::string{upper} + "B",
          std::string{lower} + "b", std::string{upper} + "iB", std::string{lower} + "ib",
          std::string{upper} + "IB", std::string{lower} + "Ib", std::string{upper} + "ib"}) {
      EXPECT_EQ(parse_size("3" + spelling), 3 * unit) << spelling;
    }
  }
  EXPECT_EQ(parse_size("5B"), 5u);
  EXPECT_EQ(parse_size("5b"), 5u);
}

TEST(ParseSize, KilobytesAreBinary) {
  EXPECT_EQ(parse_size("1KB"), 1024u);
  EXPECT_EQ(parse_size("1MB"), 1048576u);
  EXPECT_EQ(parse_size("12GiB"), 12 * GiB);
}

TEST(ParseSize, FractionsThatAreWholeBytes) {
  EXPECT_EQ(parse_size("1.5GiB"), 1610612736u);
  EXPECT_EQ(parse_size("0.5K"), 512u);
  EXPECT_EQ(parse_size("1.25KiB"), 1280u);
  EXPECT_EQ(parse_size("0.0009765625MiB"), 1024u);
  EXPECT_EQ(parse_size("0.5B"), std::nullopt);
  EXPECT_EQ(parse_size("1.0"), 1u);
  EXPECT_EQ(parse_size("2.000B"), 2u);
  EXPECT_EQ(parse_size("1.50000000000000000000000000000000000G"), 1610612736u);
  EXPECT_EQ(parse_size("0.000000000000000000000000000000000000000T"), 0u);
  EXPECT_EQ(parse_size("16777215.5TiB"), kMax - (TiB / 2) + 1);
}

TEST(ParseSize, FractionsThatAreNotWholeBytesAreRejected) {
  EXPECT_EQ(parse_size("1.5"), std::nullopt);
  EXPECT_EQ(parse_size("1.5B"), std::nullopt);
  EXPECT_EQ(parse_size("1.1K"), std::nullopt);
  EXPECT_EQ(parse_size("0.1TiB"), std::nullopt);
  EXPECT_EQ(parse_size("1.00000000000000000000000000000000000000001G"), std::nullopt);
  EXPECT_EQ(parse_size("0.0000000000000000000000000000000000000000000005T"), std::nullopt);
}

TEST(ParseSize, OverflowIsRejected) {
  EXPECT_EQ(parse_size("18446744073709551616"), std::nullopt);
  EXPECT_EQ(parse_size("99999999999999999999999999"), std::nullopt);
  EXPECT_EQ(parse_size("16777216TiB"), std::nullopt);  // exactly 2^64
  EXPECT_EQ(parse_size("16777215TiB"), kMax - TiB + 1);
  EXPECT_EQ(parse_size("17179869184GiB"), std::nullopt);
  EXPECT_EQ(parse_size("18014398509481984K"), std::nullopt);
  EXPECT_EQ(parse_size("18446744073709551615.0"), kMax);
  EXPECT_EQ(parse_size("16777215.99999904632568359375TiB"), kMax - MiB + 1);
}

TEST(ParseSize, GarbageIsRejected) {
  for (const char* text :
       {"12GiBs", "12GB!", "12Gi", "12iB", "12 G B", "12P", "12PiB", "12 bytes", "12x", "1e3",
        "0x10", "12,5G", "1..5G", "1.5.5G", "12G12", "twelve", "1 2", "12KK", "12\x01G"}) {
    EXPECT_EQ(parse_size(text), std::nullopt) << text;
  }
}

TEST(ParseSize, EmptySignsAndMissingNumbersAreRejected) {
  for (const char* text :
       {"", "   ", "GiB", "B", "k", ".5G", ".5", "1.G", "1.", "-1", "+1", "-0", "- 1G", "-1GiB"}) {
    EXPECT_EQ(parse_size(text), std::nullopt) << '"' << text << '"';
  }
}

TEST(ParseSize, SpacesAroundAndBetweenNumberAndUnit) {
  EXPECT_EQ(parse_size("  12GiB  "), 12 * GiB);
  EXPECT_EQ(parse_size("12 GiB"), 12 * GiB);
  EXPECT_EQ(parse_size("\t12\tG\t"), 12 * GiB);
  EXPECT_EQ(parse_size("1.5 M"), 3 * MiB / 2);
  EXPECT_EQ(parse_size("1 .5M"), std::nullopt);
  EXPECT_EQ(parse_size("1. 5M"), std::nullopt);
}

// ---------------------------------------------------------------------------
// parse_uint, parse_number, parse_bool

TEST(ParseUint, Valid) {
  EXPECT_EQ(parse_uint("0"), 0u);
  EXPECT_EQ(parse_uint("  42 "), 42u);
  EXPECT_EQ(parse_uint("18446744073709551615"), kMax);
}

TEST(ParseUint, Invalid) {
  for (const char* text :
       {"", " ", "18446744073709551616", "-1", "+1", "1.0", "1e3", "0x1", "1 2", "1k", "one"}) {
    EXPECT_EQ(parse_uint(text), std::nullopt) << text;
  }
}

TEST(ParseNumber, Valid) {
  EXPECT_EQ(parse_number("52"), 52.0);
  EXPECT_EQ(parse_number("0.5"), 0.5);
  EXPECT_EQ(parse_number("1e3"), 1000.0);
  EXPECT_EQ(parse_number("1E-3"), 0.001);
  EXPECT_EQ(parse_number("  2.5  "), 2.5);
  EXPECT_EQ(parse_number("0"), 0.0);
  EXPECT_EQ(parse_number(".5"), 0.5);
}

TEST(ParseNumber, Invalid) {
  for (const char* text : {"", "  ", "-1", "-0", "+1", "inf", "infinity", "nan", "NaN", "1e400",
                           "abc", "1.5x", "0x10", "1,5", "1 5", "e3", "--1"}) {
    EXPECT_EQ(parse_number(text), std::nullopt) << text;
  }
}

TEST(ParseBool, EverySpelling) {
  for (const char* text : {"true", "1", "yes", "on", "y", "t", "enable", "enabled", "TRUE", "True",
                           "YES", "On", "Y", "T", "Enabled", " true "}) {
    EXPECT_EQ(parse_bool(text), true) << text;
  }
  for (const char* text : {"false", "0", "no", "off", "n", "f", "disable", "disabled", "FALSE",
                           "False", "NO", "Off", "N", "F", "DISABLED", "\tno\t"}) {
    EXPECT_EQ(parse_bool(text), false) << text;
  }
}

TEST(ParseBool, BadSpellings) {
  for (const char* text : {"", " ", "2", "-1", "tru", "yess", "enable d", "truefalse", "on off",
                           "10", "00", "yes!", "nope", "enables"}) {
    EXPECT_EQ(parse_bool(text), std::nullopt) << text;
  }
}

// ---------------------------------------------------------------------------
// ListReader

std::vector<std::string> read_list(std::string_view text, bool* ok) {
  ListReader list(text);
  std::vector<std::string> items;
  std::string_view item;
  while (list.next(item))
    items.emplace_back(item);
  *ok = list.ok();
  EXPECT_FALSE(list.next(item)) << "an exhausted list stays exhausted";
  return items;
}

TEST(ListReader, Items) {
  bool ok = false;
  EXPECT_EQ(read_list("[a,b,c]", &ok), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(ok);
  EXPECT_EQ(read_list("  [ a , b ]  ", &ok), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(ok);
  EXPECT_EQ(read_list("[one]", &ok), (std::vector<std::string>{"one"}));
  EXPECT_TRUE(ok);
  EXPECT_EQ(read_list("[a b, c:d]", &ok), (std::vector<std::string>{"a b", "c:d"}));
  EXPECT_TRUE(ok);
}

TEST(ListReader, BareValueIsOneItem) {
  bool ok = false;
  EXPECT_EQ(read_list("bare", &ok), (std::vector<std::string>{"bare"}));
  EXPECT_TRUE(ok);
  EXPECT_EQ(read_list("  two words ", &ok), (std::vector<std::string>{"two words"}));
  EXPECT_TRUE(ok);
}

TEST(ListReader, MalformedListsYieldNothing) {
  for (const char* text : {"[]", "[ ]", "[a,,b]", "[a,]", "[,a]", "[,]", "[a", "a]", "[[a]]",
                           "[a,[b]]", "[a]b", "[a]]", "a,b", "", "  ", "]", "[", "[a,b", "a[b"}) {
    bool ok = true;
    EXPECT_TRUE(read_list(text, &ok).empty()) << text;
    EXPECT_FALSE(ok) << text;
  }
}

// ---------------------------------------------------------------------------
// Per-device sizes

TEST(PerDeviceSize, PlainValueAppliesToAll) {
  const auto budget = parse_per_device_size(" 12GiB ");
  ASSERT_TRUE(budget);
  EXPECT_EQ(budget->all, 12 * GiB);
  for (const auto& device : budget->device)
    EXPECT_FALSE(device);
  EXPECT_EQ(budget->get(0, 1), 12 * GiB);
  EXPECT_EQ(budget->get(15, 1), 12 * GiB);
}

TEST(PerDeviceSize, Individual) {
  const auto budget = parse_per_device_size("[0:12GiB,1:10GiB]");
  ASSERT_TRUE(budget);
  EXPECT_FALSE(budget->all);
  EXPECT_EQ(budget->device[0], 12 * GiB);
  EXPECT_EQ(budget->device[1], 10 * GiB);
  EXPECT_EQ(budget->get(0, 7), 12 * GiB);
  EXPECT_EQ(budget->get(1, 7), 10 * GiB);
  EXPECT_EQ(budget->get(2, 7), 7u) << "devices not named fall back";
  EXPECT_EQ(budget->get(-1, 7), 7u);
  EXPECT_EQ(budget->get(kMaxDevices, 7), 7u);
}

TEST(PerDeviceSize, SpacesAndHighestOrdinal) {
  const auto budget = parse_per_device_size("[ 3 : 1G , 15:1.5 GiB ]");
  ASSERT_TRUE(budget);
  EXPECT_EQ(budget->device[3], GiB);
  EXPECT_EQ(budget->device[15], 3 * GiB / 2);
}

TEST(PerDeviceSize, Malformed) {
  for (const char* text : {"",
                           "[]",
                           "[ ]",
                           "[16:1G]",
                           "[99999999999999999999:1G]",
                           "[0:1G,0:2G]",
                           "[0:]",
                           "[:1G]",
                           "[x:1G]",
                           "[-1:1G]",
                           "[+1:1G]",
                           "[1.0:1G]",
                           "[0x1:1G]",
                           "[1e0:1G]",
                           "[0:1G",
                           "0:1G]",
                           "0:1G",
                           "[12GiB]",
                           "[0:1G,,1:2G]",
                           "[0:1G,[1:2G]]",
                           "[0:twelve]",
                           "[0:1G,1:-1]",
                           "[0 1:1G]",
                           "twelve",
                           "[0:1G]x"}) {
    EXPECT_FALSE(parse_per_device_size(text)) << text;
  }
}

// ---------------------------------------------------------------------------
// PairReader

std::vector<Pair> read_pairs(std::string_view text) {
  PairReader reader(text);
  std::vector<Pair> pairs;
  Pair pair;
  while (reader.next(pair)) {
    pairs.push_back(pair);
    if (pairs.size() > text.size() + 1) {
      ADD_FAILURE() << "the reader does not advance";
      break;
    }
  }
  EXPECT_FALSE(reader.next(pair)) << "the end stays the end";
  return pairs;
}

TEST(PairReader, KeysValuesAndOffsets) {
  const auto pairs = read_pairs("budget:12GiB, stats ,  log : info ");
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[0].key, "budget");
  EXPECT_EQ(pairs[0].value, "12GiB");
  EXPECT_TRUE(pairs[0].has_value);
  EXPECT_EQ(pairs[0].offset, 0u);
  EXPECT_EQ(pairs[1].key, "stats");
  EXPECT_EQ(pairs[1].value, "");
  EXPECT_FALSE(pairs[1].has_value);
  EXPECT_EQ(pairs[1].offset, 14u);
  EXPECT_EQ(pairs[2].key, "log");
  EXPECT_EQ(pairs[2].value, "info");
  EXPECT_TRUE(pairs[2].has_value);
  EXPECT_EQ(pairs[2].offset, 23u);
}

TEST(PairReader, EmptyPiecesAreSkipped) {
  const auto pairs = read_pairs(",,a,, ,b:1,,");
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].key, "a");
  EXPECT_EQ(pairs[0].offset, 2u);
  EXPECT_EQ(pairs[1].key, "b");
  EXPECT_EQ(pairs[1].offset, 7u);
  EXPECT_TRUE(read_pairs("").empty());
  EXPECT_TRUE(read_pairs(" \t ").empty());
  EXPECT_TRUE(read_pairs(",,,").empty());
}

TEST(PairReader, ValueKeepsLaterColons) {
  const auto pairs = read_pairs("plan:C:/x:y");
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].key, "plan");
  EXPECT_EQ(pairs[0].value, "C:/x:y");
}

TEST(PairReader, ExplicitEmptyValue) {
  const auto pairs = read_pairs("budget:");
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_TRUE(pairs[0].has_value);
  EXPECT_EQ(pairs[0].value, "");
}

TEST(PairReader, CommasInsideBracketsDoNotSplit) {
  const auto pairs = read_pairs("budget:[0:1G,1:2G],stats,x:[[a,b],[c]],y");
  ASSERT_EQ(pairs.size(), 4u);
  EXPECT_EQ(pairs[0].value, "[0:1G,1:2G]");
  EXPECT_EQ(pairs[1].key, "stats");
  EXPECT_EQ(pairs[2].value, "[[a,b],[c]]");
  EXPECT_EQ(pairs[3].key, "y");
}

TEST(PairReader, MissingKey) {
  const auto pairs = read_pairs(" :value");
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_TRUE(pairs[0].key.empty());
  EXPECT_TRUE(pairs[0].has_value);
  EXPECT_EQ(pairs[0].value, "value");
  EXPECT_EQ(pairs[0].offset, 1u);
}

TEST(PairReader, UnclosedBracketMakesTheRestOnePair) {
  const auto pairs = read_pairs("stats, budget:[0:1G,1:2G , log:info ");
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].key, "stats");
  EXPECT_TRUE(pairs[1].key.empty());
  EXPECT_FALSE(pairs[1].has_value);
  EXPECT_EQ(pairs[1].value, "budget:[0:1G,1:2G , log:info");
  EXPECT_EQ(pairs[1].offset, 7u);
}

TEST(PairReader, StrayClosingBracketMakesTheRestOnePair) {
  const auto pairs = read_pairs("a]b,stats");
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_TRUE(pairs[0].key.empty());
  EXPECT_FALSE(pairs[0].has_value);
  EXPECT_EQ(pairs[0].value, "a]b,stats");
  EXPECT_EQ(read_pairs("]").size(), 1u);
  EXPECT_EQ(read_pairs("[").size(), 1u);
  EXPECT_EQ(read_pairs("x:[[a]").size(), 1u);
  EXPECT_EQ(read_pairs("x:[a]]],y").size(), 1u);
}

}  // namespace
}  // namespace cuswap::conf
