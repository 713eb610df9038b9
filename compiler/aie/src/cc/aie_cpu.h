// aie_cpu.h: the CPU stand-in of an AIE design emitted by `wsp emit --target aie`.
//
// It executes the design's dataflow as the device would, deterministically: object FIFOs are
// bounded rings of `depth` elements with acquire/release; the shim DMA fills input FIFOs from
// the global tensors and drains output FIFOs into them with the same access patterns as the
// design's `aiex.npu.dma_memcpy_nd`; the host's runtime sequence issues those transfers and
// waits in order; each core runs its static program of kernel calls and channel tokens. One
// round steps the host until it blocks, every shim DMA until it blocks, and every core (in
// tile order) until it blocks; rounds repeat until everything has finished, and a round in
// which nothing moves is a deadlock.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace wsp_cpu {

enum class InitKind { Zeros, Bytes, Repeat, Random, Load, Required };

struct TensorInfo {
  const char* name;
  const char* dtype;    // wsp spelling: f32, f16, bf16, i32, ...
  int kind;             // 0 input, 1 output, 2 scratch
  int elem_size;
  uint64_t elements;
  int ndim;
  uint64_t shape[8];
  InitKind init;
  uint64_t seed;        // Random
  const char* path;     // Load
  const uint8_t* bytes; // Bytes (all elements) or Repeat (one element)
};

enum class EndKind { Shim, Tile };
struct FifoInfo {
  const char* name;
  int depth;
  uint64_t elem_bytes;
  EndKind producer;
  int producer_index;
  EndKind consumer;
  int consumer_index;
};

struct SegmentInfo {
  int tensor;
  uint64_t offset;
  uint64_t sizes[2];
  uint64_t strides[2];
};

enum class HostKind { Fill, Drain, Wait };
struct HostOpInfo {
  HostKind kind;
  int fifo;
  int first_segment;
  int segments;
};

typedef void (*KernelFn)(uint8_t* in, uint8_t* out, const int32_t* ext, const uint64_t* scalars);

struct CallInfo {
  int kernel;
  int in_fifo;   // -1: none
  int out_fifo;  // -1: none
  int ext;       // offset into the extents table
  int scalars;   // offset into the scalars table
};

enum class StepKind { Call, Send, Recv };
struct StepInfo {
  StepKind kind;
  int index;  // call (Call) or fifo (Send, Recv)
  int count;  // repetitions
  int token;  // offset into the tokens table (Send)
  int token_len;
};

struct CoreInfo {
  int col, row;
  int first_step;
  int steps;
};

struct Design {
  const TensorInfo* tensors; int n_tensors;
  const FifoInfo* fifos; int n_fifos;
  const SegmentInfo* segments;
  const HostOpInfo* host; int n_host;
  const CallInfo* calls;
  const KernelFn* kernels;
  const int32_t* extents;
  const uint64_t* scalars;
  const StepInfo* steps;
  const CoreInfo* cores; int n_cores;
  const int64_t* tokens;
};

// Scalar arguments travel as the low bytes of a 64-bit word.
template <class T> static inline T scalar(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

struct Fifo {
  const FifoInfo* info;
  std::vector<uint8_t> mem;
  uint64_t produced = 0, consumed = 0;
  std::vector<const HostOpInfo*> jobs;  // shim side, in issue order
  size_t next_job = 0;
  bool can_produce() const { return produced - consumed < (uint64_t)info->depth; }
  bool can_consume() const { return produced > consumed; }
  uint8_t* slot(uint64_t n) { return mem.data() + (n % (uint64_t)info->depth) * info->elem_bytes; }
  bool idle() const { return next_job == jobs.size(); }
};

struct Core {
  const CoreInfo* info;
  int step = 0;
  int rep = 0;
  bool done() const { return step >= info->steps; }
};

class Machine {
 public:
  Machine(const Design& d, std::vector<std::vector<uint8_t>>& tensors) : d_(d), t_(tensors) {
    for (int i = 0; i < d.n_fifos; ++i) {
      Fifo f;
      f.info = &d.fifos[i];
      f.mem.assign((size_t)d.fifos[i].depth * d.fifos[i].elem_bytes, 0);
      fifos_.push_back(std::move(f));
    }
    for (int i = 0; i < d.n_cores; ++i) {
      Core c;
      c.info = &d.cores[i];
      cores_.push_back(c);
    }
  }

  // Runs to completion; false (with a report on stderr) on a deadlock.
  bool run() {
    for (;;) {
      bool progress = host() | dmas() | cores();
      if (finished()) return true;
      if (!progress) {
        report();
        return false;
      }
    }
  }

  uint64_t calls() const { return calls_; }

 private:
  const Design& d_;
  std::vector<std::vector<uint8_t>>& t_;
  std::vector<Fifo> fifos_;
  std::vector<Core> cores_;
  int pc_ = 0;
  uint64_t calls_ = 0;

  bool finished() const {
    if (pc_ < d_.n_host) return false;
    for (const Fifo& f : fifos_)
      if (!f.idle()) return false;
    for (const Core& c : cores_)
      if (!c.done()) return false;
    return true;
  }

  bool host() {
    bool moved = false;
    while (pc_ < d_.n_host) {
      const HostOpInfo& op = d_.host[pc_];
      Fifo& f = fifos_[op.fifo];
      if (op.kind == HostKind::Wait) {
        if (!f.idle()) break;
      } else {
        f.jobs.push_back(&op);
      }
      ++pc_;
      moved = true;
    }
    return moved;
  }

  uint8_t* element(const SegmentInfo& s, uint64_t i, uint64_t j) {
    const TensorInfo& t = d_.tensors[s.tensor];
    uint64_t e = s.offset + i * s.strides[0] + j * s.strides[1];
    return t_[s.tensor].data() + e * (uint64_t)t.elem_size;
  }

  // Moves one element between DDR and a FIFO slot, segment after segment (each packed densely,
  // the next at a 4-byte aligned offset).
  void transfer(const HostOpInfo& op, uint8_t* slot, bool to_fifo) {
    uint64_t off = 0;
    for (int k = 0; k < op.segments; ++k) {
      const SegmentInfo& s = d_.segments[op.first_segment + k];
      const int es = d_.tensors[s.tensor].elem_size;
      for (uint64_t i = 0; i < s.sizes[0]; ++i)
        for (uint64_t j = 0; j < s.sizes[1]; ++j) {
          uint8_t* g = element(s, i, j);
          uint8_t* l = slot + off + (i * s.sizes[1] + j) * (uint64_t)es;
          if (to_fifo) std::memcpy(l, g, es);
          else std::memcpy(g, l, es);
        }
      off += (s.sizes[0] * s.sizes[1] * (uint64_t)es + 3) & ~(uint64_t)3;
    }
  }

  bool dmas() {
    bool moved = false;
    for (Fifo& f : fifos_) {
      while (!f.idle()) {
        const HostOpInfo& op = *f.jobs[f.next_job];
        if (op.kind == HostKind::Fill) {
          if (!f.can_produce()) break;
          transfer(op, f.slot(f.produced), true);
          ++f.produced;
        } else {
          if (!f.can_consume()) break;
          transfer(op, f.slot(f.consumed), false);
          ++f.consumed;
        }
        ++f.next_job;
        moved = true;
      }
    }
    return moved;
  }

  bool cores() {
    bool moved = false;
    for (Core& c : cores_) {
      while (!c.done()) {
        const StepInfo& s = d_.steps[c.info->first_step + c.step];
        if (s.kind == StepKind::Call) {
          const CallInfo& call = d_.calls[s.index];
          Fifo* in = call.in_fifo >= 0 ? &fifos_[call.in_fifo] : nullptr;
          Fifo* out = call.out_fifo >= 0 ? &fifos_[call.out_fifo] : nullptr;
          if ((in && !in->can_consume()) || (out && !out->can_produce())) break;
          d_.kernels[call.kernel](in ? in->slot(in->consumed) : nullptr,
                                  out ? out->slot(out->produced) : nullptr,
                                  d_.extents + call.ext, d_.scalars + call.scalars);
          ++calls_;
          if (in) ++in->consumed;
          if (out) ++out->produced;
        } else if (s.kind == StepKind::Send) {
          Fifo& f = fifos_[s.index];
          if (!f.can_produce()) break;
          int32_t* tok = (int32_t*)f.slot(f.produced);
          for (int k = 0; k < s.token_len; ++k) tok[k] = (int32_t)d_.tokens[s.token + k];
          ++f.produced;
        } else {
          Fifo& f = fifos_[s.index];
          if (!f.can_consume()) break;
          ++f.consumed;
        }
        moved = true;
        if (++c.rep >= s.count) {
          c.rep = 0;
          ++c.step;
        }
      }
    }
    return moved;
  }

  void report() {
    std::fprintf(stderr, "error: the design deadlocked (host at operation %d of %d)\n", pc_, d_.n_host);
    for (const Core& c : cores_)
      if (!c.done())
        std::fprintf(stderr, "  core (%d, %d) blocked at step %d of %d\n", c.info->col, c.info->row,
                     c.step, c.info->steps);
    for (const Fifo& f : fifos_)
      std::fprintf(stderr, "  fifo %s: %llu of %d elements full, %zu transfers pending\n",
                   f.info->name, (unsigned long long)(f.produced - f.consumed), f.info->depth,
                   f.jobs.size() - f.next_job);
  }
};

}  // namespace wsp_cpu
