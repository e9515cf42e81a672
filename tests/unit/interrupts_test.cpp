// SPDX-License-Identifier: Apache-2.0
// Device IRQs by action name from /proc/interrupts text (the --irqs-of resolver).
#include <gtest/gtest.h>

#include "hotline/kernel/interrupts.hpp"

namespace hotline {
namespace {

// An x86 QEMU guest on 6.1: virtio-pci MSI-X vectors, a shared legacy line, per-CPU rows.
constexpr const char* kVirtioGuest = R"(           CPU0       CPU1       CPU2       CPU3
  0:         41          0          0          0   IO-APIC   2-edge      timer
  1:          0          0          9          0   IO-APIC   1-edge      i8042
  9:          0          0          0          0   IO-APIC   9-fasteoi   acpi
 11:          0          0          0          0   IO-APIC  11-fasteoi   uhci_hcd:usb1, virtio3
 24:          0          0          0          0  PCI-MSIX-0000:00:03.0   0-edge      virtio0-config
 25:        212          0          0          0  PCI-MSIX-0000:00:03.0   1-edge      virtio0-input.0
 26:          1          0          0          0  PCI-MSIX-0000:00:03.0   2-edge      virtio0-output.0
NMI:          0          0          0          0   Non-maskable interrupts
LOC:       5341       4210       3987       4100   Local timer interrupts
ERR:          0
MIS:          0
)";

// A server NIC: mlx5 completion vectors named with their PCI address, an Intel NIC's queues.
constexpr const char* kServer = R"(            CPU0       CPU1
 98:          0          0  IR-PCI-MSIX-0000:3b:00.0    0-edge      mlx5_async0@pci:0000:3b:00.0
 99:      10234          0  IR-PCI-MSIX-0000:3b:00.0    1-edge      mlx5_comp0@pci:0000:3b:00.0
100:          0       8812  IR-PCI-MSIX-0000:3b:00.0    2-edge      mlx5_comp1@pci:0000:3b:00.0
130:        412          0  IR-PCI-MSIX-0000:af:00.0    0-edge      eth0-TxRx-0
131:          0        377  IR-PCI-MSIX-0000:af:00.0    1-edge      eth0-TxRx-1
132:          2          0  IR-PCI-MSIX-0000:af:00.0    2-edge      eth0
140:          5          0  IR-PCI-MSIX-0000:b0:00.0    0-edge      eth10-TxRx-0
)";

// arm64 (GICv3, no hwirq-flow column): the action is still the last word.
constexpr const char* kArm = R"(           CPU0       CPU1
 11:      40771      38254     GICv3  27 Level     arch_timer
 44:       1290          0     GICv3  66 Level     virtio0
 45:          0          0   ITS-MSI 16384 Edge      virtio1-config
IPI0:      1712       1602       Rescheduling interrupts
)";

TEST(DeviceIrqs, VirtioQueuesByPrefix) {
    EXPECT_EQ(irqs_named(kVirtioGuest, "virtio0"), (std::vector<int>{24, 25, 26}));
    EXPECT_EQ(irqs_named(kVirtioGuest, "virtio0-input"), (std::vector<int>{25}));
}

TEST(DeviceIrqs, SharedLineMatchesEveryAction) {
    EXPECT_EQ(irqs_named(kVirtioGuest, "virtio3"), (std::vector<int>{11}));
    EXPECT_EQ(irqs_named(kVirtioGuest, "uhci_hcd"), (std::vector<int>{11}));
}

TEST(DeviceIrqs, ChipAndPerCpuRowsAreNotActions) {
    // "PCI-MSIX" is a chip, "Local" and "interrupts" words of per-CPU rows.
    EXPECT_TRUE(irqs_named(kVirtioGuest, "PCI-MSIX").empty());
    EXPECT_TRUE(irqs_named(kVirtioGuest, "edge").empty());
    EXPECT_TRUE(irqs_named(kVirtioGuest, "interrupts").empty());
    EXPECT_TRUE(irqs_named(kArm, "Level").empty());
}

TEST(DeviceIrqs, ServerNicQueues) {
    EXPECT_EQ(irqs_named(kServer, "mlx5_comp"), (std::vector<int>{99, 100}));
    // A substring, as the set_irq_affinity scripts match: eth1 also names eth10's queue.
    EXPECT_EQ(irqs_named(kServer, "eth0-TxRx"), (std::vector<int>{130, 131}));
    EXPECT_EQ(irqs_named(kServer, "eth0"), (std::vector<int>{130, 131, 132}));
    EXPECT_EQ(irqs_named(kServer, "eth1"), (std::vector<int>{140}));
}

TEST(DeviceIrqs, Arm64Rows) {
    EXPECT_EQ(irqs_named(kArm, "virtio"), (std::vector<int>{44, 45}));
    EXPECT_EQ(irqs_named(kArm, "arch_timer"), (std::vector<int>{11}));
}

TEST(DeviceIrqs, ResolveUnionsSortedAndUnique) {
    auto irqs = resolve_device_irqs(kServer, {"eth0-TxRx", "mlx5_comp", "eth0-TxRx-1"});
    ASSERT_TRUE(irqs) << irqs.error().message();
    EXPECT_EQ(*irqs, (std::vector<int>{99, 100, 130, 131}));
}

TEST(DeviceIrqs, UnknownNameIsAnErrorNamingIt) {
    auto irqs = resolve_device_irqs(kVirtioGuest, {"virtio0", "ens5"});
    ASSERT_FALSE(irqs);
    EXPECT_NE(irqs.error().message().find("'ens5'"), std::string::npos) << irqs.error().message();
    EXPECT_NE(irqs.error().message().find("/proc/interrupts"), std::string::npos) << irqs.error().message();
}

TEST(DeviceIrqs, EmptyNameIsAnError) { EXPECT_FALSE(resolve_device_irqs(kVirtioGuest, {""})); }

TEST(DeviceIrqs, ReadsProcRoot) {
    EXPECT_TRUE(read_device_irqs({})->empty());  // nothing asked: nothing read
    auto missing = read_device_irqs({"eth0"}, "/nonexistent-proc");
    EXPECT_FALSE(missing);
}

}  // namespace
}  // namespace hotline
