// SPDX-License-Identifier: Apache-2.0
// plain_number: the numbers of tables and verdict lines, read by people,
// never in exponent notation.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "hotline/base/util.hpp"
#include "hotline/model/verdict.hpp"

using hotline::plain_number;

TEST(PlainNumber, SignificantDigitsWithoutExponentNotation) {
    EXPECT_EQ(plain_number(45012.7), "45010");
    EXPECT_EQ(plain_number(30490), "30490");
    EXPECT_EQ(plain_number(1.68e3, 3), "1680");
    EXPECT_EQ(plain_number(2.5e9, 3), "2500000000");
    EXPECT_EQ(plain_number(0.0001234), "0.0001234");
    EXPECT_EQ(plain_number(0.935, 3), "0.935");
    EXPECT_EQ(plain_number(0.1 + 0.2), "0.3");
    EXPECT_EQ(plain_number(0.050000000000000044), "0.05");
    EXPECT_EQ(plain_number(1.0925), "1.093");
    EXPECT_EQ(plain_number(-0.0216), "-0.0216");
    EXPECT_EQ(plain_number(20), "20");
    EXPECT_EQ(plain_number(0), "0");
    EXPECT_EQ(plain_number(-1e-15), "0");
}

TEST(PlainNumber, NonFiniteValuesAreNamed) {
    EXPECT_EQ(plain_number(std::numeric_limits<double>::infinity()), "inf");
    EXPECT_EQ(plain_number(-std::numeric_limits<double>::infinity()), "-inf");
    EXPECT_EQ(plain_number(std::nan("")), "nan");
}

TEST(IntervalText, AnIntervalThatCannotBeBoundedSaysWhy) {
    hotline::CriterionResult c;
    EXPECT_EQ(hotline::interval_text(c), "-");
    c.ratio = hotline::RatioCi{0.915, 0.9076, 0.9221};
    EXPECT_EQ(hotline::interval_text(c), "[0.9076, 0.9221]");
    const double inf = std::numeric_limits<double>::infinity();
    c.ratio = hotline::RatioCi{std::nan(""), -inf, inf};
    EXPECT_EQ(hotline::interval_text(c), "n/a (0 in both arms)");
    c.median_baseline = 3;
    EXPECT_EQ(hotline::interval_text(c), "n/a");
    c.ratio = hotline::RatioCi{inf, inf, inf};
    EXPECT_EQ(hotline::interval_text(c), "[inf, inf]");
}
