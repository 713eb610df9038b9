//! Differential test of the Ascend kernel emitter on the corpus: every kernel of every
//! example and std module is emitted as PTO-ISA C++, compiled with g++ against the CPU
//! stand-in (one harness per source file), run on random tasks, and compared with the
//! reference interpreter: every byte of every written tensor must agree (floats bit for bit,
//! any NaN matching any NaN), elements outside the regions must stay untouched, and a task the
//! interpreter rejects must make the entry return nonzero.

mod common;

/// Kernels the emitter refuses on purpose: (kernel, words of the diagnostic, why).
const EXPECTED_REFUSALS: &[(&str, &str, &str)] = &[];

#[test]
fn every_kernel_agrees_with_the_interpreter_on_the_standin() {
    let inc = common::standin_dir("corpus");
    let corpus = common::corpus();
    let n: usize = corpus.iter().map(|(_, k)| k.len()).sum();
    assert!(n > 40, "the corpus has {n} kernels");
    let failures = common::run_jobs(&corpus, EXPECTED_REFUSALS, &inc, &common::gxx(), "corpus");
    let _ = std::fs::remove_dir_all(inc.parent().expect("parent"));
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
