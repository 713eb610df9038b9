//! Scopes, the heap arena and program-order groups. A holding scope ([`Runtime::scope_begin`])
//! keeps its tasks in the window until it ends; an allocation scope bounds its intermediates'
//! lifetime alone. An intermediate from the heap arena takes no task after its scope ends and is
//! freed once every task submitted before that end has retired; a full arena stalls the
//! submitter. `order_*` brackets the orchestration's structural groups for the `pto_wsp_v9`
//! clocks and for the event clock's `Seq` order (`order.rs`).

use super::{api, Runtime, RuntimeError, Scope, HELD};
use crate::api::TensorId;
use crate::report::StallReason;
use crate::v9::Order;

impl Runtime {
    /// Allocates an intermediate from the heap arena for the tasks of the enclosing scope; it
    /// is released when that scope has ended and all of its tasks have retired. Stalls while
    /// the arena is full.
    pub fn alloc_tensor(&mut self, elem_size: u64, dims: &[i64]) -> Result<TensorId, RuntimeError> {
        let bytes = dims
            .iter()
            .try_fold(elem_size, |a, d| a.checked_mul((*d).max(0) as u64))
            .ok_or_else(|| RuntimeError::Api(format!("tensor of {dims:?} is too large")))?;
        if self.scopes.is_empty() {
            return api("alloc_tensor needs an open scope (call scope_begin first)".into());
        }
        if bytes > self.cfg.heap_arena {
            return Err(self.deadlock(
                StallReason::HeapArenaFull,
                format!(
                    "raise heap_arena to at least {bytes} bytes (one allocation needs {bytes}, the arena holds {})",
                    self.cfg.heap_arena
                ),
            ));
        }
        let t0 = self.now;
        let mut stalled = false;
        while self.arena_used + bytes > self.cfg.heap_arena {
            self.release_arena();
            if self.arena_used + bytes <= self.cfg.heap_arena {
                break;
            }
            stalled = true;
            // The submitter waits: a batch it holds is issued (as every stall does).
            self.flush_batch();
            if !self.advance()? {
                let held = self.arena_used;
                return Err(self.deadlock(
                    StallReason::HeapArenaFull,
                    format!(
                        "raise heap_arena to at least {} bytes ({held} held by open scopes + {bytes} requested), or end the scope before allocating more",
                        held + bytes
                    ),
                ));
            }
        }
        if stalled {
            self.note_stall(3, t0);
        }
        let id = self.add_tensor(elem_size, dims)?;
        self.arena_used += bytes;
        self.rings[3].set(self.arena_used);
        if let Some(s) = self.scopes.last_mut() {
            s.allocs.push((id.0, bytes));
        }
        Ok(id)
    }

    pub(super) fn release_arena(&mut self) {
        while let Some(&(seq, t, bytes)) = self.pending_free.front() {
            if seq > self.head {
                break;
            }
            self.pending_free.pop_front();
            self.arena_used -= bytes;
            if let Some(b) = self.bufs.get_mut(t as usize) {
                *b = Vec::new();
            }
            self.build.free_tensor(t);
        }
        self.rings[3].set(self.arena_used);
    }

    /// Opens a scope whose tasks stay in the window (held, as PTO-WSP's orchestration scopes
    /// hold their outputs) until it ends.
    pub fn scope_begin(&mut self) {
        if self.scope_of.is_empty() {
            self.scope_of = vec![0; self.ring.len()];
        }
        self.open_scope(true);
    }

    /// Opens a scope that bounds the lifetime of its allocations ([`Runtime::alloc_tensor`])
    /// alone: its tasks retire as they complete, and what it allocated is freed once the
    /// scope has ended and every task submitted before its end has retired (a workload
    /// block's local tensor).
    pub fn alloc_scope_begin(&mut self) {
        self.open_scope(false);
    }

    fn open_scope(&mut self, hold: bool) {
        self.scope_ids += 1;
        self.scopes.push(Scope {
            id: self.scope_ids,
            tasks: 0,
            allocs: Vec::new(),
            hold,
        });
    }

    /// Ends the innermost scope: its tasks become reclaimable once done; its allocations take
    /// no new task (a submission naming one is an error) and are freed once every task
    /// submitted so far has retired.
    pub fn scope_end(&mut self) -> Result<(), RuntimeError> {
        let Some(s) = self.scopes.pop() else {
            return api("scope_end without a matching scope_begin".into());
        };
        for seq in (self.head..self.next_seq).filter(|_| s.hold) {
            let i = (seq & self.ring_mask) as usize;
            if self.scope_of.get(i) == Some(&s.id) {
                self.ring[i].flags &= !HELD;
            }
        }
        for (t, b) in s.allocs {
            // Only the tasks submitted so far may use it: it is freed once they retire.
            self.build.close_tensor(t);
            self.pending_free.push_back((self.next_seq, t, b));
        }
        self.retire();
        Ok(())
    }

    // ---------------------------------------------------------------- program order

    /// Opens a structural group of the orchestration (a `P` or `P.seq` loop, a block, the
    /// parts of a `sequential` or `combine`). The `pto_wsp_v9` clock times by program
    /// structure; the event simulation follows data edges plus the order of `Seq` groups:
    /// each step's tasks start after the earlier steps' tasks have completed (`order.rs`).
    pub fn order_begin(&mut self, order: Order) {
        self.v9.begin(order);
        self.order.begin(order, self.next_seq);
    }

    /// The next member of the innermost group (a loop iteration, a `sequential` part).
    pub fn order_step(&mut self) {
        self.v9.step();
        let (ring, mask) = (&self.ring, self.ring_mask);
        self.order.step(
            self.next_seq,
            self.head,
            |s| ring[(s & mask) as usize].state.pending(),
            |s| (s & mask) as usize,
            ring.len(),
        );
    }

    /// Closes the innermost group.
    pub fn order_end(&mut self) -> Result<(), RuntimeError> {
        if self.v9.end() && self.order.end() {
            Ok(())
        } else {
            api("order_end without a matching order_begin".into())
        }
    }

    /// How many structural groups are open.
    pub fn order_depth(&self) -> usize {
        self.v9.depth()
    }
}
