// SPDX-License-Identifier: Apache-2.0
// The worker pool that serves complete requests.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "hotline/base/util.hpp"  // monotonic_seconds

namespace hotline::daemon {

// Fixed workers and a bounded queue of complete requests.  A job that waited past
// kQueueDeadlineSeconds, or is still queued when the pool stops, runs with
// `late` set: it answers 503 at once (no worker time for slow peers ahead of it,
// no wait at SIGTERM).
class BoundedPool {
public:
    using Job = std::function<void(bool late)>;
    BoundedPool(int workers, int queued) : queued_(std::size_t(queued)) {
        for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
    }
    ~BoundedPool() { shutdown(); }

    // Never blocks; false when every worker is busy and the queue is full.
    bool try_enqueue(Job fn) {
        std::lock_guard<std::mutex> lk(mu_);
        if (stop_ || jobs_.size() >= idle_ + queued_) return false;
        jobs_.push_back({std::move(fn), monotonic_seconds()});
        cv_.notify_one();
        return true;
    }

    void shutdown() {
        {
            std::lock_guard<std::mutex> lk(mu_);
            if (stop_ && threads_.empty()) return;
            stop_ = true;
        }
        cv_.notify_all();
        for (auto& t : threads_) t.join();
        threads_.clear();
    }

private:
    void work() {
        while (true) {
            Queued job;
            bool late = false;
            {
                std::unique_lock<std::mutex> lk(mu_);
                ++idle_;
                cv_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
                --idle_;
                if (jobs_.empty()) return;  // stopping and drained
                job = std::move(jobs_.front());
                jobs_.pop_front();
                late = stop_ || monotonic_seconds() - job.queued_at > kQueueDeadlineSeconds;
            }
            job.fn(late);
        }
    }

    static constexpr double kQueueDeadlineSeconds = 1.0;
    struct Queued {
        Job fn;
        double queued_at = 0;
    };

    std::size_t queued_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Queued> jobs_;
    std::vector<std::thread> threads_;
    std::size_t idle_ = 0;
    bool stop_ = false;
};

}  // namespace hotline::daemon
