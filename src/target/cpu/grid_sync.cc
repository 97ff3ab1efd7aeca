// CPU target: kernels that call T.sync_grid(). Every block runs up to a grid barrier, then all
// continue — with each block's own state (variables, shared memory, fragments, locals) intact
// across the barrier, wherever in the body the barrier sits (check_grid_syncs has made sure that
// every block reaches the same barriers the same number of times).
//
// Design: one host thread per block, each on its own Machine (a copy of the launching one: the
// tensors' bytes are shared, the block's on-chip buffers and variables are its own), and a baton
// that lets exactly one block run at a time, in block order. A block that arrives at the grid
// barrier hands the baton to the next block; the baton comes back to it only after every other
// block ran to the same barrier (or finished). So a run is as deterministic as the sequential
// one, and "phase 2 of block b reads what phase 1 of block b' wrote" holds for every b, b'.
//
// A block that finishes while others wait at a barrier it never reached (or a block that
// arrives at a barrier some finished block never reached) is a hang on the GPU: a UserError
// here. An error in one block stops all of them; the first is raised.
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "target/cpu/machine.h"

namespace tilec::cpu {

namespace {

// Thrown inside the waiting blocks when another block failed: unwinds their stacks.
struct Stopped {};

// Beyond this many blocks the CPU target refuses a cooperative kernel (one thread each); a GPU
// holds far fewer blocks at once (SMs x blocks per SM, e.g. 132 x 16 on an H200).
constexpr int64_t kMaxCooperativeBlocks = 8192;

}  // namespace

class GridBarrier {
 public:
  GridBarrier(int64_t blocks, std::string kernel) : arrived_(blocks, 0), done_(blocks, false), kernel_(std::move(kernel)) {}

  // Waits until block b may start (its turn comes in block order).
  void start(int64_t b) {
    std::unique_lock<std::mutex> lock(mu_);
    wait_for_turn(lock, b);
  }

  // Block b reached a grid barrier: the next block runs; b resumes once all blocks reached it.
  void arrive(int64_t b, const SourceLoc& loc) {
    std::unique_lock<std::mutex> lock(mu_);
    const int64_t k = ++arrived_[b];
    for (size_t o = 0; o < done_.size(); ++o) {
      if (done_[o] && arrived_[o] < k)
        fail_locked(std::make_exception_ptr(UserError(
            mismatch(static_cast<int64_t>(o), arrived_[o], b, k), loc,
            "every block must call T.sync_grid() the same number of times")));
    }
    if (error_) throw Stopped{};
    pass_turn(b);
    wait_for_turn(lock, b);
  }

  // Block b ended (error: how; null when it ran to its end).
  void finish(int64_t b, std::exception_ptr error) {
    std::unique_lock<std::mutex> lock(mu_);
    done_[b] = true;
    if (error) {
      fail_locked(error);
      return;
    }
    for (size_t o = 0; o < done_.size(); ++o) {
      if (!done_[o] && arrived_[o] > arrived_[b])
        fail_locked(std::make_exception_ptr(UserError(mismatch(b, arrived_[b], static_cast<int64_t>(o), arrived_[o]),
                                                      SourceLoc{},
                                                      "every block must call T.sync_grid() the same number of times")));
    }
    if (!error_) pass_turn(b);
  }

  std::exception_ptr error() const { return error_; }

 private:
  std::string mismatch(int64_t done, int64_t done_count, int64_t waiting, int64_t waiting_count) const {
    return "target=cpu: kernel '" + kernel_ + "': block " + std::to_string(done) + " finished after " +
           std::to_string(done_count) + " T.sync_grid() call(s), while block " + std::to_string(waiting) +
           " waits at its call number " + std::to_string(waiting_count) + " (on a GPU the grid would hang)";
  }

  void wait_for_turn(std::unique_lock<std::mutex>& lock, int64_t b) {
    cv_.wait(lock, [&] { return turn_ == b || error_; });
    if (error_) throw Stopped{};
  }

  // The baton goes to the next block in cyclic order that has not finished.
  void pass_turn(int64_t b) {
    const int64_t n = static_cast<int64_t>(done_.size());
    for (int64_t step = 1; step <= n; ++step) {
      int64_t next = (b + step) % n;
      if (!done_[next]) {
        turn_ = next;
        cv_.notify_all();
        return;
      }
    }
    turn_ = -1;  // every block finished
    cv_.notify_all();
  }

  void fail_locked(std::exception_ptr e) {
    if (!error_) error_ = e;
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  int64_t turn_ = 0;
  std::vector<int64_t> arrived_;  // grid barriers each block has reached
  std::vector<bool> done_;
  std::exception_ptr error_;
  std::string kernel_;
};

void Machine::sync_grid(const SourceLoc& loc) {
  TILEC_ICHECK(grid_barrier_ != nullptr) << "tl.sync_grid outside a cooperative kernel run at " << loc.str();
  grid_barrier_->arrive(grid_block_, loc);
}

void exec_kernel_cooperative(Machine& m, const KernelLaunchNode* k, const std::vector<int64_t>& grid, int64_t blocks) {
  TILEC_USER_CHECK(blocks <= kMaxCooperativeBlocks, k->loc,
                   "a cooperative launch holds at most SMs x blocks per SM (e.g. 132 x 16 on an H200): use fewer "
                   "blocks and loop over the work in waves")
      << "target=cpu: kernel '" << m.kernel_name() << "' calls T.sync_grid() over a grid of " << blocks
      << " blocks; the CPU target runs such a kernel with one host thread per block, at most "
      << kMaxCooperativeBlocks;
  GridBarrier barrier(blocks, m.kernel_name());
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(blocks));
  for (int64_t b = 0; b < blocks; ++b) {
    threads.emplace_back([&, b] {
      std::exception_ptr error;
      try {
        barrier.start(b);
        Machine block(m);  // the launch's bindings and tensors; the block's own on-chip state
        block.grid_barrier_ = &barrier;
        block.grid_block_ = b;
        std::vector<int64_t> index(grid.size(), 0);
        int64_t rest = b;
        for (size_t d = 0; d < grid.size(); ++d) {
          index[d] = rest % grid[d];
          rest /= grid[d];
          block.bind(k->block_vars[d].get(), from_int(k->block_vars[d]->dtype, index[d]));
        }
        if (m.options_.on_block) m.options_.on_block(index);
        block.exec(k->body);
      } catch (const Stopped&) {
        return;  // another block failed; its error is raised
      } catch (...) {
        error = std::current_exception();
      }
      barrier.finish(b, error);
    });
  }
  for (auto& t : threads) t.join();
  if (barrier.error()) std::rethrow_exception(barrier.error());
}

}  // namespace tilec::cpu
