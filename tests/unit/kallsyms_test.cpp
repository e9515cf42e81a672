// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fmt/format.h>
#include <fstream>

#include "hotline/kernel/kernel.hpp"

using namespace hotline;

static const char* kText =
    "ffffffff81000000 T _stext\n"
    "ffffffff81a00000 T dst_release\n"
    "ffffffff81a00000 T dst_release_alias\n"
    "ffffffff81a00080 t dst_destroy_rcu\n"
    "ffffffff81a00100 d some_data\n"
    "ffffffff81a00200 T ipv4_dst_check\n"
    "ffffffff81a00280 T queue_work_on\n"
    "ffffffffc0000000 t mod_func\t[mymod]\n";

TEST(Kallsyms, RangeEndsAtNextHigherAddress) {
    auto k = Kallsyms::parse(kText);
    EXPECT_TRUE(k.addresses_visible());
    auto r = k.range("dst_release");
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->start, 0xffffffff81a00000ULL);
    EXPECT_EQ(r->end, 0xffffffff81a00080ULL);  // the alias at the same address is skipped
    auto q = k.range("ipv4_dst_check");
    ASSERT_TRUE(q.has_value());
    EXPECT_EQ(q->end - q->start, 0x80u);
}

TEST(Kallsyms, DataSymbolsAreNotFunctions) {
    auto k = Kallsyms::parse(kText);
    EXPECT_FALSE(k.contains("some_data"));
    EXPECT_TRUE(k.contains("mod_func"));
    EXPECT_FALSE(k.contains("tcp_prequeue"));
    EXPECT_FALSE(k.range("tcp_prequeue").has_value());
}

TEST(Kallsyms, LastSymbolHasNoRange) {
    auto k = Kallsyms::parse(kText);
    EXPECT_FALSE(k.range("mod_func").has_value());
}

TEST(Kallsyms, Symbolize) {
    auto k = Kallsyms::parse(kText);
    EXPECT_EQ(k.symbolize(0xffffffff81a00010ULL).value_or(""), "dst_release+0x10");
    EXPECT_EQ(k.symbolize(0xffffffff81a00200ULL).value_or(""), "ipv4_dst_check");
    EXPECT_FALSE(k.symbolize(0x1000).has_value());
    // Inside a data symbol that follows a function: not a function address.
    EXPECT_FALSE(k.symbolize(0xffffffff81a00110ULL).has_value());
    EXPECT_EQ(k.symbolize(0xffffffff81a00090ULL).value_or(""), "dst_destroy_rcu+0x10");
}

TEST(Kallsyms, KeepsOnlyTextNamesButCountsAll) {
    auto k = Kallsyms::parse(kText);
    EXPECT_EQ(k.size(), 8u);
    EXPECT_GT(k.memory_bytes(), 0u);
    // Duplicate names (static functions in two files): the lower address is the one named.
    auto d = Kallsyms::parse("ffffffff81000000 t dup\nffffffff81000040 T other\nffffffff81000080 t dup\n"
                             "ffffffff810000c0 T tail\n");
    ASSERT_TRUE(d.range("dup").has_value());
    EXPECT_EQ(d.range("dup")->start, 0xffffffff81000000ULL);
    EXPECT_EQ(d.symbolize(0xffffffff81000090ULL).value_or(""), "dup+0x10");
}

TEST(Kallsyms, HiddenAddressesGiveNoRanges) {
    auto k = Kallsyms::parse("0000000000000000 T dst_release\n0000000000000000 T ipv4_dst_check\n");
    EXPECT_FALSE(k.addresses_visible());
    EXPECT_TRUE(k.contains("dst_release"));
    EXPECT_FALSE(k.range("dst_release").has_value());
}

TEST(Kallsyms, IgnoresMalformedLines) {
    auto k = Kallsyms::parse("garbage\n\nzzzz T x\nffffffff81000000 T ok_func\nffffffff81000010 T next\n");
    EXPECT_EQ(k.size(), 2u);
    EXPECT_TRUE(k.range("ok_func").has_value());
}

// Module and BPF symbols come after the core kernel's, in no address order.
TEST(Kallsyms, UnorderedListingIsSortedWithTiesInListingOrder) {
    auto k = Kallsyms::parse(
        "ffffffff81000000 T core_a\n"
        "ffffffff81000100 T core_b\n"
        "ffffffffc0000200 t mod_late\t[m]\n"
        "ffffffffc0000100 d mod_data\t[m]\n"
        "ffffffffc0000000 t mod_first\t[m]\n"
        "ffffffffc0000000 t mod_first_alias\t[m]\n"
        "ffffffffc0000300 T mod_end\t[m]\n");
    ASSERT_TRUE(k.range("mod_first").has_value());
    EXPECT_EQ(k.range("mod_first")->end, 0xffffffffc0000100ULL);  // ended by the data symbol
    EXPECT_EQ(k.range("mod_late")->end, 0xffffffffc0000300ULL);
    EXPECT_EQ(k.range("core_b")->end, 0xffffffffc0000000ULL);
    EXPECT_EQ(k.symbolize(0xffffffffc0000004ULL).value_or(""), "mod_first+0x4");
    EXPECT_FALSE(k.symbolize(0xffffffffc0000104ULL).has_value());
    // A data symbol listed first at an address: the function there is not named.
    auto d = Kallsyms::parse("ffffffff81000000 D a_var\nffffffff81000000 T a_func\nffffffff81000040 T b\n");
    EXPECT_TRUE(d.range("a_func").has_value());
    EXPECT_FALSE(d.symbolize(0xffffffff81000004ULL).has_value());
}

// The loader reads in chunks: lines cut at chunk borders, out-of-order module
// symbols at the end, and a final line without a newline must come out as parse() does.
TEST(Kallsyms, LoadFromFileMatchesParse) {
    std::string text;
    for (int i = 0; i < 40000; ++i)
        text += fmt::format("{:016x} {} func_{}_{}\n", 0xffffffff81000000ULL + 0x40ULL * i, i % 97 ? 't' : 'd', i,
                            std::string(std::size_t(i % 13), 'x'));
    text += "ffffffffc0001000 t mod_b\t[mod]\nffffffffc0000000 t mod_a\t[mod]\nffffffffc0002000 T last_func";
    char path[] = "/tmp/hotline-kallsyms-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, text.data(), text.size()), ssize_t(text.size()));
    close(fd);
    auto loaded = Kallsyms::load(path);
    unlink(path);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message();
    Kallsyms parsed = Kallsyms::parse(text);
    EXPECT_EQ(loaded->size(), 40003u);
    EXPECT_EQ(loaded->size(), parsed.size());
    for (int i : {0, 1, 96, 97, 5000, 17012, 39999}) {
        std::string name = fmt::format("func_{}_{}", i, std::string(std::size_t(i % 13), 'x'));
        EXPECT_EQ(loaded->contains(name), i % 97 != 0) << name;
        EXPECT_EQ(loaded->contains(name), parsed.contains(name)) << name;
    }
    auto r = loaded->range("func_5000_" + std::string(5000 % 13, 'x'));
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->end - r->start, 0x40u);
    ASSERT_TRUE(loaded->range("mod_a").has_value());
    EXPECT_EQ(loaded->range("mod_a")->end, 0xffffffffc0001000ULL);
    EXPECT_TRUE(loaded->contains("last_func"));
    EXPECT_EQ(loaded->symbolize(0xffffffffc0000010ULL).value_or(""), "mod_a+0x10");
    EXPECT_FALSE(Kallsyms::load("/nonexistent/kallsyms").ok());
}

TEST(Lockdown, ParsesBracketedMode) {
    EXPECT_EQ(parse_lockdown("none [integrity] confidentiality\n"), "integrity");
    EXPECT_EQ(parse_lockdown("[none] integrity confidentiality"), "none");
    EXPECT_EQ(parse_lockdown("none integrity [confidentiality]"), "confidentiality");
    EXPECT_NE(parse_lockdown("garbage").find("unknown"), std::string::npos);
}
