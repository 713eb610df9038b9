//! The event queue ([`Events`]) on its own, checked against a sorted list: events come out in
//! (time, push order), `Resolve` events in order or not.

use super::*;

/// The event queue against a sorted list: random pushes (times at or after the clock,
/// `Resolve` events in order and out of it) and due pops give events in (time, push order).
#[test]
fn events_come_out_in_time_then_push_order() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rand = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut q = Events::default();
    let mut oracle: Vec<(u64, u64, Ev)> = Vec::new();
    let (mut now, mut order) = (0u64, 0u64);
    for step in 0..20_000u64 {
        if rand(3) > 0 {
            let t = now + rand(8);
            let ev = match rand(3) {
                0 => Ev::Resolve(step),
                1 => Ev::Done(step),
                _ => Ev::Token(step as u32),
            };
            order += 1;
            q.push(t, ev);
            oracle.push((t, order, ev));
            continue;
        }
        oracle.sort_by_key(|e| (e.0, e.1));
        assert_eq!(q.next_time(), oracle.first().map(|e| e.0));
        let Some(t) = q.next_time() else { continue };
        now = t;
        while let Some((te, ev)) = q.pop_due(t) {
            assert_eq!(te, t);
            assert_eq!(ev, oracle.remove(0).2, "step {step}");
        }
        assert!(oracle.first().is_none_or(|e| e.0 > t));
    }
}
