// A host emulation of the CUDA features the standalone prototypes of bench/issue48 use, so a
// prototype's own kernel source runs on a machine without a GPU and its index arithmetic,
// ring slots, neighbour exchanges and barrier phases can be checked against a reference
// before a device call is spent on it. Not a performance model.
//
// Every GPU thread of a cluster is an OS thread (clusters run one after another);
// __syncthreads and cluster.sync() are std::barrier; shared memory is a per-block buffer filled
// with NaN at launch (a stored result that depends on a value never written shows as NaN); a
// shared address (smem_u32, mapa) is rank << 24 | offset; mbarriers live in their 8 shared
// bytes (phase, pending arrivals, count, transaction bytes, updated by compare-and-swap);
// st.async stores and completes its bytes at once; cp.async copies land at the issue
// (SIM_COPY=early, default) or at the cp.async.wait_group that must see them (SIM_COPY=late),
// the two extremes the hardware may choose between.
#pragma once

#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __constant__

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct alignas(16) double2 {
  double x, y;
};
inline double2 make_double2(double a, double b) {
  return {a, b};
}
using std::fma;

namespace sim {

// A warp's scratch for the FP64 MMAs (mma_f64): its lanes' fragments of A (16 x 16 at most),
// B (16 x 8) and C (16 x 8), and the barrier its lanes meet at before and after the product.
struct Warp {
  std::unique_ptr<std::barrier<>> bar;
  double a[16][16], b[16][8], c[16][8];
};
struct Block {
  std::vector<double> smem;  // 8-byte aligned; the prototypes' 16-byte accesses are memcpy'd
  std::unique_ptr<std::barrier<>> bar;
  std::vector<std::unique_ptr<Warp>> warps;
};
struct Cluster {
  std::vector<Block> blocks;
  std::unique_ptr<std::barrier<>> bar;
  dim3 dim;
};
struct Copy {
  void* dst;
  const void* src;
  int bytes;
};
inline thread_local dim3 tl_thread, tl_block, tl_cluster_index, tl_block_dim, tl_grid_dim;
inline thread_local Block* tl_blk = nullptr;
inline thread_local Cluster* tl_cl = nullptr;
inline thread_local unsigned tl_rank = 0;
inline thread_local std::vector<std::vector<Copy>> tl_groups;  // committed, oldest first
inline thread_local std::vector<Copy> tl_open;

inline bool copies_late() {
  static const bool late = [] {
    const char* e = std::getenv("SIM_COPY");
    return e && std::strcmp(e, "late") == 0;
  }();
  return late;
}
inline void do_copy(const Copy& c) {
  if (c.src)
    std::memcpy(c.dst, c.src, c.bytes);
  else
    std::memset(c.dst, 0, c.bytes);
}
// A cp.async issued: lands now (SIM_COPY=early) or with its group's wait (late).
inline void issue(const Copy& c) {
  if (copies_late())
    tl_open.push_back(c);
  else
    do_copy(c);
}
inline double* resolve(uint32_t addr) {
  return reinterpret_cast<double*>(reinterpret_cast<char*>(tl_cl->blocks[addr >> 24].smem.data()) +
                                   (addr & 0xffffffu));
}
inline std::atomic_ref<uint64_t> mbar(uint32_t addr) {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(resolve(addr)));
}
// mbarrier word: bit 0 phase, bits 1-20 pending arrivals, bits 21-31 count, bits 32-63 tx.
inline uint64_t pack(unsigned phase, unsigned pending, unsigned count, int32_t tx) {
  return phase | uint64_t(pending) << 1 | uint64_t(count) << 21 |
         uint64_t(static_cast<uint32_t>(tx)) << 32;
}
// Applies `arrivals` arrivals and `dtx` transaction bytes; completes the phase when both reach 0.
inline void mbar_update(uint32_t addr, unsigned arrivals, int32_t dtx) {
  auto a = mbar(addr);
  uint64_t old = a.load();
  for (;;) {
    unsigned phase = old & 1u, pending = (old >> 1) & 0xfffffu, count = (old >> 21) & 0x7ffu;
    int32_t tx = static_cast<int32_t>(old >> 32);
    if (arrivals > pending) {
      std::fprintf(stderr, "sim: more arrivals than pending on an mbarrier\n");
      std::abort();
    }
    pending -= arrivals;
    tx += dtx;
    if (pending == 0 && tx == 0) {
      phase ^= 1u;
      pending = count;
    }
    if (a.compare_exchange_weak(old, pack(phase, pending, count, tx)))
      return;
  }
}

template <class K>
void launch(dim3 grid, dim3 cluster, dim3 block, size_t smem_bytes, K&& kernel) {
  const unsigned nthreads = block.x * block.y * block.z,
                 nblocks = cluster.x * cluster.y * cluster.z;
  for (unsigned cz = 0; cz < grid.z / cluster.z; ++cz)
    for (unsigned cy = 0; cy < grid.y / cluster.y; ++cy)
      for (unsigned cx = 0; cx < grid.x / cluster.x; ++cx) {
        Cluster cl;
        cl.dim = cluster;
        cl.blocks.resize(nblocks);
        for (auto& b : cl.blocks) {
          b.smem.assign((smem_bytes + 7) / 8, std::nan(""));
          b.bar = std::make_unique<std::barrier<>>(nthreads);
          for (unsigned w = 0; 32 * w < nthreads; ++w) {
            b.warps.push_back(std::make_unique<Warp>());
            b.warps.back()->bar =
                std::make_unique<std::barrier<>>(std::min(32u, nthreads - 32 * w));
          }
        }
        cl.bar = std::make_unique<std::barrier<>>(nthreads * nblocks);
        std::vector<std::thread> th;
        th.reserve(nthreads * nblocks);
        for (unsigned r = 0; r < nblocks; ++r) {
          const dim3 bi(r % cluster.x, (r / cluster.x) % cluster.y, r / (cluster.x * cluster.y));
          const dim3 gb(cx * cluster.x + bi.x, cy * cluster.y + bi.y, cz * cluster.z + bi.z);
          for (unsigned t = 0; t < nthreads; ++t)
            th.emplace_back([&, r, bi, gb, t] {
              tl_thread = dim3(t % block.x, (t / block.x) % block.y, t / (block.x * block.y));
              tl_block_dim = block;
              tl_grid_dim = grid;
              tl_block = gb;
              tl_cluster_index = bi;
              tl_cl = &cl;
              tl_blk = &cl.blocks[r];
              tl_rank = r;
              tl_groups.clear();
              tl_open.clear();
              kernel();
            });
        }
        for (auto& t : th)
          t.join();
      }
}

}  // namespace sim

#define threadIdx (sim::tl_thread)
#define blockIdx (sim::tl_block)
#define blockDim (sim::tl_block_dim)
#define gridDim (sim::tl_grid_dim)

inline void __syncthreads() {
  sim::tl_blk->bar->arrive_and_wait();
}
template <class T>
inline T __ldg(const T* p) {
  return *p;
}
inline int atomicExch(int* p, int v) {
  return std::atomic_ref<int>(*p).exchange(v);
}

namespace sim_cg {
struct cluster_group {
  dim3 block_index() const { return sim::tl_cluster_index; }
  void sync() const { sim::tl_cl->bar->arrive_and_wait(); }
};
inline cluster_group this_cluster() {
  return {};
}
}  // namespace sim_cg

// The PTX helpers of the prototypes (bench/harness/mbarrier.cuh and the prototype's own), emulated.
inline uint32_t smem_u32(const void* p) {
  const auto off =
      reinterpret_cast<const char*>(p) - reinterpret_cast<const char*>(sim::tl_blk->smem.data());
  return sim::tl_rank << 24 | static_cast<uint32_t>(off);
}
inline uint32_t map_rank(uint32_t addr, uint32_t rank) {
  return rank << 24 | (addr & 0xffffffu);
}
inline void mbar_init(uint32_t bar, uint32_t count) {
  sim::mbar(bar).store(sim::pack(0, count, count, 0));
}
inline void fence_mbarrier_init() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}
inline void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  sim::mbar_update(bar, 1, static_cast<int32_t>(bytes));
}
inline bool mbar_try_wait_cluster(uint32_t bar, uint32_t parity) {
  const bool done = (sim::mbar(bar).load() & 1u) != parity;
  if (!done)
    std::this_thread::yield();
  return done;
}
inline unsigned long long global_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
inline void st_async2(uint32_t remote, double2 v, uint32_t remote_bar) {
  std::memcpy(sim::resolve(remote), &v, 16);
  sim::mbar_update(remote_bar, 0, -16);
}
inline void cp_async16(uint32_t dst, const void* src, bool ok) {
  sim::issue({sim::resolve(dst), ok ? src : nullptr, 16});
}
// 8- and 16-byte cp.async by generic pointers (the kernel families' copies on the host).
inline void cp_async8(void* dst, const void* src, bool ok) {
  sim::issue({dst, ok ? src : nullptr, 8});
}
inline void cp_async16(void* dst, const void* src) {
  sim::issue({dst, src, 16});
}
// mma.sync.aligned.m16n8k{K}.row.col.f64 for the calling lane, with PTX's fragment layout
// (group g = lane / 4, index t = lane % 4): a[i] = A[g + 8 (i % 2)][t + 4 (i / 2)] (K / 2 of
// them), b[p] = B[t + 4 p][g] (K / 4), d[i] = D[g + 8 (i / 2)][2 t + i % 2]. Every lane of the
// warp must call it, as on the GPU; the lanes meet at their warp's barrier before and after.
template <int K>
inline void mma_f64(double (&d)[4], const double* a, const double* b) {
  const unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  sim::Warp& w = *sim::tl_blk->warps[tid / 32];
  const int g = static_cast<int>(tid % 32) / 4, t = static_cast<int>(tid % 32) % 4;
  for (int i = 0; i < K / 2; ++i)
    w.a[g + 8 * (i % 2)][t + 4 * (i / 2)] = a[i];
  for (int p = 0; p < K / 4; ++p)
    w.b[t + 4 * p][g] = b[p];
  for (int i = 0; i < 4; ++i)
    w.c[g + 8 * (i / 2)][2 * t + i % 2] = d[i];
  w.bar->arrive_and_wait();
  for (int i = 0; i < 4; ++i) {
    const int r = g + 8 * (i / 2), col = 2 * t + i % 2;
    double s = w.c[r][col];
    for (int k = 0; k < K; ++k)
      s = std::fma(w.a[r][k], w.b[k][col], s);
    d[i] = s;
  }
  w.bar->arrive_and_wait();
}
inline void cp_async_commit() {
  sim::tl_groups.push_back(std::move(sim::tl_open));
  sim::tl_open.clear();
}
template <int N>
inline void cp_async_wait() {
  while (sim::tl_groups.size() > static_cast<size_t>(N)) {
    for (const auto& c : sim::tl_groups.front())
      sim::do_copy(c);
    sim::tl_groups.erase(sim::tl_groups.begin());
  }
}
