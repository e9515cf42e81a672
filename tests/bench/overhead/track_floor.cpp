// SPDX-License-Identifier: Apache-2.0
// The floor of handoff tracking (bpf/track_floor.bpf.c): some of its programs
// attached around a run, their run statistics read by the run, and its counts
// checked afterwards, so that a floor which skipped its work never stands as one.
#include "overhead.hpp"
#include "track_floor.skel.h"

namespace overhead {

namespace {

// The floor's per-CPU counts summed: hits and owner changes.
Result<std::pair<std::uint64_t, std::uint64_t>> floor_counts(const hl_track_floor_bpf& s, int ncpus) {
    std::uint64_t hits = 0, handoffs = 0;
    int fd = bpf_map__fd(s.maps.tf_cpus);
    for (std::uint32_t cpu = 0; cpu < std::uint32_t(ncpus); ++cpu) {
        std::uint64_t v[8] = {};  // struct hl_tf_cpu
        if (bpf_map_lookup_elem(fd, &cpu, v)) return make_error("read the tracking floor's counts", errno);
        hits += v[0];
        handoffs += v[1];
    }
    return std::make_pair(hits, handoffs);
}

}  // namespace

Result<TrackFloorCounts> with_track_floor(const std::vector<std::string>& programs,
                                          const std::function<Result<std::uint64_t>(const RunReader&)>& run) {
    LibbpfCapture cap;
    SkelGuard<hl_track_floor_bpf> s(hl_track_floor_bpf::open());
    int ncpus = libbpf_num_possible_cpus();
    if (!s || ncpus <= 0 || bpf_map__set_max_entries(s->maps.tf_cpus, std::uint32_t(ncpus)) ||
        hl_track_floor_bpf::load(s.get()))
        return make_error("load the tracking floor (bench/bpf/track_floor.bpf.c): " + cap.tail(4), errno);
    std::vector<int> fds;
    std::vector<std::unique_ptr<bpf_link, decltype(&bpf_link__destroy)>> links;
    for (const std::string& name : programs) {
        bpf_program* p = bpf_object__find_program_by_name(s->obj, name.c_str());
        bpf_link* l = p ? bpf_program__attach(p) : nullptr;
        if (!l) return make_error("attach the tracking floor's " + name + ": " + cap.tail(4), errno ? errno : ENOENT);
        links.emplace_back(l, bpf_link__destroy);
        fds.push_back(bpf_program__fd(p));
    }
    RunReader read = [&fds]() -> Result<std::pair<std::uint64_t, std::uint64_t>> {
        std::uint64_t runs = 0, ns = 0;
        for (int fd : fds) {
            auto st = prog_run_stats(fd);
            if (!st) return make_error("the tracking floor's run statistics", EIO);
            runs += st->run_cnt;
            ns += st->run_time_ns;
        }
        return std::make_pair(runs, ns);
    };
    auto runs = run(read);
    links.clear();
    if (!runs) return runs.error();
    auto counts = floor_counts(*s.get(), ncpus);
    if (!counts) return counts.error();
    // Every run counts a hit; runs outside the measured part count too.
    if (counts->first < *runs)
        return make_error(fmt::format("the tracking floor counted {} hits in {} runs", counts->first, *runs), EIO);
    return TrackFloorCounts{counts->first, counts->second};
}

}  // namespace overhead
