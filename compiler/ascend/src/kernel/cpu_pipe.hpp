#ifndef WSP_ASCEND_CPU_PIPE
#define WSP_ASCEND_CPU_PIPE
/* PTO-ISA's global-memory slot model of a cube <-> vector pipe, for the CPU build.
 *
 * On the device a kernel pipe is a ring of SlotNum slots of SlotSize bytes in global memory
 * shared by the cluster's cube (AIC) and vector (AIV) cores: the producer reserves a slot with
 * TALLOC (which binds a GlobalTensor to the slot's address), writes it with TSTOREs into
 * sub-views, and commits it with TPUSH; the consumer takes the oldest committed slot with
 * TPOP, reads it with TLOADs and releases it with TFREE. TALLOC waits while every slot is
 * taken, TPOP while none is committed; the cores signal each other with cross-core flags.
 *
 * PTO-ISA's own CPU simulation implements only the tile-payload pipe forms, so the CPU build
 * of an emitted tree runs this implementation of the same four instructions with the same
 * operands, whether the tile calls come from the stand-in or from PTO-ISA: a mutex and a
 * condition variable stand for the cross-core flags, and the two sections run on two threads
 * as the two cores would. Where the device would wait forever (a consumer that pops more
 * slots than are ever pushed, a producer whose consumer stopped taking slots) the CPU build
 * fails instead: the instruction binds the tensor to no address, which the kernel reports as
 * a run-time error. */
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>

namespace wsp_cpu {

enum Direction : uint8_t { DIR_C2V = 1, DIR_V2C = 2 };
enum TileSplitAxis : uint8_t { TILE_NO_SPLIT = 0 };

/* One pipe's slots in "global memory" and the flags between its two cores. */
class Ring {
  public:
    Ring(uint64_t slot_size, uint64_t slot_num)
        : size_(slot_size), num_(slot_num),
          data_(new (std::nothrow) uint8_t[slot_size * slot_num]()) {}
    Ring(const Ring &) = delete;
    Ring &operator=(const Ring &) = delete;

    /* Producer: the next free slot (waits while all are taken), or null. */
    uint8_t *alloc() {
        std::unique_lock<std::mutex> l(m_);
        cv_.wait(l, [&] { return failed_ || consumer_done_ || allocated_ - freed_ < num_; });
        if (failed_ || allocated_ - freed_ >= num_ || data_ == nullptr) return fail();
        return slot(allocated_++);
    }
    /* Producer: commits `p`, which must be the oldest reserved slot. */
    bool push(const uint8_t *p) {
        std::lock_guard<std::mutex> l(m_);
        if (failed_ || pushed_ == allocated_ || p != slot(pushed_)) {
            fail();
            return false;
        }
        pushed_++;
        cv_.notify_all();
        return true;
    }
    /* Consumer: the oldest committed slot (waits while there is none), or null. */
    uint8_t *pop() {
        std::unique_lock<std::mutex> l(m_);
        cv_.wait(l, [&] { return failed_ || producer_done_ || popped_ < pushed_; });
        if (failed_ || popped_ == pushed_) return fail();
        return slot(popped_++);
    }
    /* Consumer: releases `p`, which must be the oldest popped slot. */
    bool free(const uint8_t *p) {
        std::lock_guard<std::mutex> l(m_);
        if (failed_ || freed_ == popped_ || p != slot(freed_)) {
            fail();
            return false;
        }
        freed_++;
        cv_.notify_all();
        return true;
    }
    /* A core's function returned: its partner's waits on it end. */
    void producer_done() { end(producer_done_); }
    void consumer_done() { end(consumer_done_); }

  private:
    uint8_t *slot(uint64_t n) const { return data_.get() + (n % num_) * size_; }
    uint8_t *fail() {
        failed_ = true;
        cv_.notify_all();
        return nullptr;
    }
    void end(bool &flag) {
        std::lock_guard<std::mutex> l(m_);
        flag = true;
        cv_.notify_all();
    }

    const uint64_t size_, num_;
    std::unique_ptr<uint8_t[]> data_;
    std::mutex m_;
    std::condition_variable cv_;
    uint64_t allocated_ = 0, pushed_ = 0, popped_ = 0, freed_ = 0;
    bool producer_done_ = false, consumer_done_ = false, failed_ = false;
};

/* A core's handle of a pipe (PTO-ISA: TPipe<FlagID, DirType, SlotSize, SlotNum>, constructed
 * on each core over the shared global-memory ring). */
template <uint8_t FlagID, uint8_t DirType, uint32_t SlotSize, uint32_t SlotNum> struct TPipe {
    static constexpr uint32_t kSlotSize = SlotSize, kSlotNum = SlotNum;
    Ring &ring;
    explicit TPipe(Ring &r) : ring(r) {}
};

template <typename GlobalData> inline void bind(GlobalData &g, uint8_t *p) {
    pto::TASSIGN(g, reinterpret_cast<typename GlobalData::DType *>(p));
}
template <typename GlobalData> inline uint8_t *address(GlobalData &g) {
    return reinterpret_cast<uint8_t *>(g.data());
}

template <typename Pipe, typename GlobalData, TileSplitAxis Split = TILE_NO_SPLIT>
inline void TALLOC(Pipe &pipe, GlobalData &slot) {
    bind(slot, pipe.ring.alloc());
}
template <typename Pipe, typename GlobalData, TileSplitAxis Split = TILE_NO_SPLIT>
inline void TPUSH(Pipe &pipe, GlobalData &slot) {
    if (address(slot) == nullptr || !pipe.ring.push(address(slot))) bind(slot, nullptr);
}
template <typename Pipe, typename GlobalData, TileSplitAxis Split = TILE_NO_SPLIT>
inline void TPOP(Pipe &pipe, GlobalData &slot) {
    bind(slot, pipe.ring.pop());
}
template <typename Pipe, typename GlobalData, TileSplitAxis Split = TILE_NO_SPLIT>
inline void TFREE(Pipe &pipe, GlobalData &slot) {
    if (address(slot) == nullptr || !pipe.ring.free(address(slot))) bind(slot, nullptr);
}

} // namespace wsp_cpu
#endif
