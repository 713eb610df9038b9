//! Exact overlap and cover tests on strided hyper-rectangles.
//!
//! A region is a Cartesian product of one arithmetic progression per dimension, so two regions
//! of a tensor intersect iff their progressions intersect in every dimension, and `a` covers `b`
//! iff every progression of `b` is a subset of `a`'s. Both are decided exactly with gcd/CRT.

use crate::api::{Region, MAX_RANK};

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

/// Extended Euclid: (g, x) with a·x ≡ g (mod b).
fn ext_gcd(a: i128, b: i128) -> (i128, i128, i128) {
    if b == 0 {
        (a, 1, 0)
    } else {
        let (g, x, y) = ext_gcd(b, a % b);
        (g, y, x - (a / b) * y)
    }
}

/// `{a + s·i : i < n}` as (first, step ≥ 1, count ≥ 1) in `i128`, or `None` when empty: a
/// single point has step 1, and a negative step runs the other way from the last element.
/// (Regions from [`Region::new`] have steps and counts ≥ 1; these functions are public, so
/// they take any.)
fn norm(a: i64, s: i64, n: i64) -> Option<(i128, i128, i128)> {
    let (a, s, n) = (a as i128, s as i128, n as i128);
    if n < 1 {
        None
    } else if n == 1 || s == 0 {
        Some((a, 1, 1))
    } else if s < 0 {
        Some((a + s * (n - 1), -s, n))
    } else {
        Some((a, s, n))
    }
}

/// Do `{a + s·i : i < n}` and `{b + t·j : j < m}` share an element?
pub fn progressions_meet(a: i64, s: i64, n: i64, b: i64, t: i64, m: i64) -> bool {
    if (s == 1 || n == 1) && (t == 1 || m == 1) && n >= 1 && m >= 1 {
        // Dense intervals (the common case): no arithmetic beyond a range check.
        let (a_last, b_last) = (a as i128 + n as i128 - 1, b as i128 + m as i128 - 1);
        return (a as i128) <= b_last && (b as i128) <= a_last;
    }
    let (Some((a, s, n)), Some((b, t, m))) = (norm(a, s, n), norm(b, t, m)) else {
        return false;
    };
    let (a_last, b_last) = (a + s * (n - 1), b + t * (m - 1));
    let lo = a.max(b);
    let hi = a_last.min(b_last);
    if lo > hi {
        return false;
    }
    if n == 1 && m == 1 {
        return a == b;
    }
    if n == 1 {
        return (a - b) % t == 0;
    }
    if m == 1 {
        return (b - a) % s == 0;
    }
    // x ≡ a (mod s), x ≡ b (mod t).
    let g = gcd(s, t);
    if (b - a) % g != 0 {
        return false;
    }
    let l = s / g * t;
    let (_, p, _) = ext_gcd(s / g, t / g);
    // x = a + s·k with s·k ≡ b - a (mod t)  =>  k ≡ (b-a)/g · p (mod t/g)
    let tg = t / g;
    let k = (((b - a) / g % tg) * (p % tg)).rem_euclid(tg);
    let x0 = a + s * k;
    // Smallest x ≥ lo with x ≡ x0 (mod l).
    let x = x0 + (lo - x0).div_euclid(l) * l;
    let x = if x < lo { x + l } else { x };
    x <= hi
}

/// Is `{b + t·j : j < m}` a subset of `{a + s·i : i < n}`?
pub fn progression_covers(a: i64, s: i64, n: i64, b: i64, t: i64, m: i64) -> bool {
    let Some((b, t, m)) = norm(b, t, m) else {
        return true;
    };
    let Some((a, s, n)) = norm(a, s, n) else {
        return false;
    };
    let a_last = a + s * (n - 1);
    let b_last = b + t * (m - 1);
    if b < a || b_last > a_last || (b - a) % s != 0 {
        return false;
    }
    m == 1 || t % s == 0
}

/// The dimensions of `r` its arrays hold (a region built by hand may claim more).
fn rank(r: &Region) -> usize {
    (r.rank as usize).min(MAX_RANK)
}

/// Do two regions share an element? Regions of different tensors never do.
pub fn overlaps(x: &Region, y: &Region) -> bool {
    if x.tensor != y.tensor || x.rank != y.rank {
        return x.tensor == y.tensor && overlaps_flat_rank(x, y);
    }
    (0..rank(x)).all(|d| {
        progressions_meet(
            x.offsets[d],
            x.strides[d],
            x.extents[d],
            y.offsets[d],
            y.strides[d],
            y.extents[d],
        )
    })
}

/// Regions of one tensor with different ranks: treat missing leading dimensions as index 0.
fn overlaps_flat_rank(x: &Region, y: &Region) -> bool {
    let r = rank(x).max(rank(y));
    let get = |g: &Region, d: usize| -> (i64, i64, i64) {
        let pad = r - rank(g);
        if d < pad {
            (0, 1, 1)
        } else {
            (g.offsets[d - pad], g.strides[d - pad], g.extents[d - pad])
        }
    };
    (0..r).all(|d| {
        let (a, s, n) = get(x, d);
        let (b, t, m) = get(y, d);
        progressions_meet(a, s, n, b, t, m)
    })
}

/// Does `x` contain every element of `y`?
pub fn covers(x: &Region, y: &Region) -> bool {
    x.tensor == y.tensor
        && x.rank == y.rank
        && (0..rank(x)).all(|d| {
            progression_covers(
                x.offsets[d],
                x.strides[d],
                x.extents[d],
                y.offsets[d],
                y.strides[d],
                y.extents[d],
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::TensorId;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn points(r: &Region) -> BTreeSet<Vec<i64>> {
        let mut out = BTreeSet::new();
        let rank = r.rank as usize;
        let mut idx = vec![0i64; rank];
        loop {
            out.insert(
                (0..rank)
                    .map(|d| r.offsets[d] + r.strides[d] * idx[d])
                    .collect(),
            );
            let mut d = rank;
            loop {
                if d == 0 {
                    return out;
                }
                d -= 1;
                idx[d] += 1;
                if idx[d] < r.extents[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
    }

    fn region(rank: usize) -> impl Strategy<Value = Region> {
        proptest::collection::vec((0i64..12, 1i64..5, 1i64..4), rank).prop_map(|dims| {
            let o: Vec<i64> = dims.iter().map(|d| d.0).collect();
            let e: Vec<i64> = dims.iter().map(|d| d.1).collect();
            let s: Vec<i64> = dims.iter().map(|d| d.2).collect();
            Region::new(TensorId(0), &o, &e, &s).unwrap()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn overlap_oracle_3d(a in region(3), b in region(3)) {
            let (pa, pb) = (points(&a), points(&b));
            prop_assert_eq!(overlaps(&a, &b), !pa.is_disjoint(&pb), "{:?} {:?}", a, b);
            prop_assert_eq!(covers(&a, &b), pb.is_subset(&pa), "{:?} {:?}", a, b);
        }

        #[test]
        fn overlap_oracle_2d(a in region(2), b in region(2)) {
            let (pa, pb) = (points(&a), points(&b));
            prop_assert_eq!(overlaps(&a, &b), !pa.is_disjoint(&pb), "{:?} {:?}", a, b);
            prop_assert_eq!(covers(&a, &b), pb.is_subset(&pa), "{:?} {:?}", a, b);
        }

        #[test]
        fn progression_oracle(a in 0i64..40, s in 1i64..9, n in 1i64..8,
                              b in 0i64..40, t in 1i64..9, m in 1i64..8) {
            let pa: BTreeSet<i64> = (0..n).map(|i| a + s * i).collect();
            let pb: BTreeSet<i64> = (0..m).map(|j| b + t * j).collect();
            prop_assert_eq!(progressions_meet(a, s, n, b, t, m), !pa.is_disjoint(&pb));
            prop_assert_eq!(progression_covers(a, s, n, b, t, m), pb.is_subset(&pa));
        }
    }

    #[test]
    fn different_tensors_never_overlap() {
        let a = Region::dense(TensorId(0), &[0, 0], &[4, 4]).unwrap();
        let b = Region::dense(TensorId(1), &[0, 0], &[4, 4]).unwrap();
        assert!(!overlaps(&a, &b));
        assert!(overlaps(&a, &a));
    }

    #[test]
    fn malformed_progressions_and_regions_do_not_panic() {
        // Steps of 0 or below, counts of 0 or below, extremes: public functions, any input.
        assert!(!progressions_meet(0, 1, i64::MIN, 0, 1, 1));
        assert!(progressions_meet(5, 0, 3, 5, 1, 1));
        assert!(progressions_meet(9, -3, 4, 0, 1, 1)); // {9, 6, 3, 0}
        assert!(!progressions_meet(9, -3, 4, 1, 1, 1));
        assert!(progression_covers(0, 1, 4, 7, 1, 0));
        assert!(!progression_covers(0, 1, 0, 0, 1, 1));
        assert!(!progressions_meet(
            i64::MAX,
            i64::MAX,
            i64::MAX,
            i64::MIN,
            i64::MIN,
            2
        ));
        let mut a = Region::dense(TensorId(0), &[0, 0], &[4, 4]).unwrap();
        a.strides[0] = 0;
        assert!(overlaps(&a, &a));
        a.rank = 200;
        let _ = (overlaps(&a, &a), covers(&a, &a));
        let b = Region::new(TensorId(0), &[1], &[3], &[i64::MAX]).unwrap();
        assert_eq!(b.last(0), i64::MAX);
    }

    #[test]
    fn huge_coordinates_do_not_overflow() {
        let big = i64::MAX / 4;
        assert!(progressions_meet(0, big, 3, big, big, 2));
        assert!(!progressions_meet(1, big, 3, 0, big, 3));
    }
}
