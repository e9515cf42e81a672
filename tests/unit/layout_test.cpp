// SPDX-License-Identifier: Apache-2.0
// Cache-line layout on BTF fixtures built to the offsets of the two dst_entry
// layouts (5.10/6.1: __refcnt, lwtstate and rt_genid on its line; 6.4+: __rcuref,
// both moved off), read from those kernels' BTF.
#include <bpf/btf.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "hotline/kernel/btf_layout.hpp"

using namespace hotline;

namespace {

struct BtfOwner {
    struct btf* b = btf__new_empty();
    ~BtfOwner() { btf__free(b); }
};

struct Types {
    int i16, u16, i32, u32, u64, ptr, atomic, rcuref, cb_head, list_head;
};

Types base_types(struct btf* b) {
    Types t{};
    t.i16 = btf__add_int(b, "short int", 2, BTF_INT_SIGNED);
    t.u16 = btf__add_int(b, "short unsigned int", 2, 0);
    t.i32 = btf__add_int(b, "int", 4, BTF_INT_SIGNED);
    t.u32 = btf__add_int(b, "unsigned int", 4, 0);
    t.u64 = btf__add_int(b, "long unsigned int", 8, 0);
    t.ptr = btf__add_ptr(b, 0);
    t.atomic = btf__add_struct(b, "atomic_t_s", 4);
    btf__add_field(b, "counter", t.i32, 0, 0);
    t.atomic = btf__add_typedef(b, "atomic_t", t.atomic);
    t.rcuref = btf__add_struct(b, "rcuref_s", 4);
    btf__add_field(b, "refcnt", t.atomic, 0, 0);
    t.rcuref = btf__add_typedef(b, "rcuref_t", t.rcuref);
    t.cb_head = btf__add_struct(b, "callback_head", 16);
    btf__add_field(b, "next", t.ptr, 0, 0);
    btf__add_field(b, "func", t.ptr, 64, 0);
    t.list_head = btf__add_struct(b, "list_head", 16);
    btf__add_field(b, "next", t.ptr, 0, 0);
    btf__add_field(b, "prev", t.ptr, 64, 0);
    return t;
}

void common_head(struct btf* b, const Types& t) {
    // dev@0 ops@8 _metrics@16 expires@24 xfrm@32 input@40 output@48 flags@56 obsolete@58
    // header_len@60 trailer_len@62 (identical in both layouts)
    btf__add_field(b, "dev", t.ptr, 0, 0);
    btf__add_field(b, "ops", t.ptr, 64, 0);
    btf__add_field(b, "_metrics", t.u64, 128, 0);
    btf__add_field(b, "expires", t.u64, 192, 0);
    btf__add_field(b, "xfrm", t.ptr, 256, 0);
    btf__add_field(b, "input", t.ptr, 320, 0);
    btf__add_field(b, "output", t.ptr, 384, 0);
    btf__add_field(b, "flags", t.u16, 448, 0);
    btf__add_field(b, "obsolete", t.i16, 464, 0);
    btf__add_field(b, "header_len", t.u16, 480, 0);
    btf__add_field(b, "trailer_len", t.u16, 496, 0);
}

// 5.10 / 6.1: size 112, __refcnt@64 __use@68 lastuse@72 lwtstate@80 rcu_head@88
// error@104 tclassid@108; rtable.rt_genid@112.
void old_layout(struct btf* b) {
    Types t = base_types(b);
    int dst = btf__add_struct(b, "dst_entry", 112);
    common_head(b, t);
    btf__add_field(b, "__refcnt", t.atomic, 512, 0);
    btf__add_field(b, "__use", t.i32, 544, 0);
    btf__add_field(b, "lastuse", t.u64, 576, 0);
    btf__add_field(b, "lwtstate", t.ptr, 640, 0);
    btf__add_field(b, "rcu_head", t.cb_head, 704, 0);
    btf__add_field(b, "error", t.i16, 832, 0);
    btf__add_field(b, "__pad", t.i16, 848, 0);
    btf__add_field(b, "tclassid", t.u32, 864, 0);
    btf__add_struct(b, "rtable", 176);
    btf__add_field(b, "dst", dst, 0, 0);
    btf__add_field(b, "rt_genid", t.i32, 896, 0);
    btf__add_field(b, "rt_flags", t.u32, 928, 0);
}

// 6.12 / 6.18: size 136, __rcuref@64 __use@68 lastuse@72 rcu_head@80 error@96
// tclassid@100 rt_uncached@104 rt_uncached_list@120 lwtstate@128; rtable.rt_genid@136.
void new_layout(struct btf* b) {
    Types t = base_types(b);
    int dst = btf__add_struct(b, "dst_entry", 136);
    common_head(b, t);
    btf__add_field(b, "__rcuref", t.rcuref, 512, 0);
    btf__add_field(b, "__use", t.i32, 544, 0);
    btf__add_field(b, "lastuse", t.u64, 576, 0);
    btf__add_field(b, "rcu_head", t.cb_head, 640, 0);
    btf__add_field(b, "error", t.i16, 768, 0);
    btf__add_field(b, "__pad", t.i16, 784, 0);
    btf__add_field(b, "tclassid", t.u32, 800, 0);
    btf__add_field(b, "rt_uncached", t.list_head, 832, 0);
    btf__add_field(b, "rt_uncached_list", t.ptr, 960, 0);
    btf__add_field(b, "lwtstate", t.ptr, 1024, 0);
    btf__add_struct(b, "rtable", 200);
    btf__add_field(b, "dst", dst, 0, 0);
    btf__add_field(b, "rt_genid", t.i32, 1088, 0);
}

bool has(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

TEST(Layout, OldDstEntrySharesTheRefcountLine) {
    BtfOwner o;
    old_layout(o.b);
    auto l = object_layout(o.b, "dst_entry");
    ASSERT_TRUE(l.ok()) << l.error().message();
    EXPECT_EQ(l->anchor, "__refcnt");
    EXPECT_EQ(l->anchor_offset, 64u);
    EXPECT_EQ(l->line_start, 64u);
    EXPECT_EQ(l->type_size, 112u);
    EXPECT_EQ(l->container, "rtable");
    EXPECT_TRUE(has(l->flagged, "lwtstate"));
    EXPECT_TRUE(has(l->flagged, "rt_genid"));
    EXPECT_TRUE(has(l->clear, "obsolete"));  // at 58: the line before
    bool genid = false;
    for (auto& f : l->on_line) genid |= f.path == "rtable.rt_genid" && f.offset == 112;
    EXPECT_TRUE(genid);
    EXPECT_NE(describe(*l).find("rtable.rt_genid@112"), std::string::npos);
}

TEST(Layout, NewDstEntryMovedReadersOffTheLine) {
    BtfOwner o;
    new_layout(o.b);
    auto l = object_layout(o.b, "dst_entry");
    ASSERT_TRUE(l.ok()) << l.error().message();
    EXPECT_EQ(l->anchor, "__rcuref");
    EXPECT_EQ(l->anchor_offset, 64u);
    EXPECT_EQ(l->type_size, 136u);
    EXPECT_FALSE(has(l->flagged, "lwtstate"));
    EXPECT_FALSE(has(l->flagged, "rt_genid"));
    EXPECT_TRUE(has(l->clear, "lwtstate"));
    EXPECT_TRUE(has(l->clear, "rt_genid"));
    EXPECT_TRUE(has(l->flagged, "__use"));
    for (auto& f : l->on_line) EXPECT_LT(f.offset, 128u) << f.path;
}

TEST(Layout, FlattenKeepsNamedMembersWhole) {
    BtfOwner o;
    new_layout(o.b);
    auto f = flatten_struct(o.b, "dst_entry");
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(f->size(), 21u);
    EXPECT_EQ((*f)[11].path, "dst_entry.__rcuref");
    EXPECT_EQ((*f)[11].size, 4u);
}

TEST(Layout, MissingTypeOrAnchorIsAnError) {
    BtfOwner o;
    old_layout(o.b);
    EXPECT_FALSE(object_layout(o.b, "sk_buff").ok());
    auto l = line_layout(o.b, "dst_entry", {"__nope"}, "", {});
    ASSERT_FALSE(l.ok());
    EXPECT_NE(l.error().message().find("__nope"), std::string::npos);
    EXPECT_FALSE(object_layout(nullptr, "dst_entry").ok());
}

TEST(Layout, FuncArgStructFromProto) {
    BtfOwner o;
    new_layout(o.b);
    int dst = btf__find_by_name_kind(o.b, "dst_entry", BTF_KIND_STRUCT);
    int pdst = btf__add_ptr(o.b, dst);
    int i32 = btf__find_by_name_kind(o.b, "int", BTF_KIND_INT);
    int proto = btf__add_func_proto(o.b, 0);
    btf__add_func_param(o.b, "dst", pdst);
    btf__add_func_param(o.b, "cookie", i32);
    btf__add_func(o.b, "ipv4_dst_check", BTF_FUNC_GLOBAL, proto);
    EXPECT_EQ(func_arg_struct(o.b, "ipv4_dst_check", 0), "dst_entry");
    EXPECT_EQ(func_arg_struct(o.b, "ipv4_dst_check", 1), "");
    EXPECT_EQ(func_arg_struct(o.b, "ipv4_dst_check", 2), "");
    EXPECT_EQ(func_arg_struct(o.b, "no_such_func", 0), "");
}
