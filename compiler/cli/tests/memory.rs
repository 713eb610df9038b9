//! The memory `wsp run` takes for its tensors (a test binary of its own: the peak resident
//! size of this process's children is this one run's).

#[cfg(target_os = "linux")]
#[test]
fn a_run_does_not_hold_its_tensors_three_times() {
    use std::process::Command;
    // Two tensors of 16M f32 elements (64 MiB each, 128 MiB in all): the input is made, handed
    // to the runtime and its host values dropped; the output starts as the runtime's zeros and
    // is read back at the end. Holding every tensor as host f64 values and runtime f32 bytes at
    // once took about 3 × 128 MiB.
    let dir = std::env::temp_dir().join(format!("wsp-memory-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join("p.wsp"),
        "axis rows = Dense[256]\naxis cols = Dense[4]\n\
         input X: f32[4096, 4096] = random(seed: 3)\noutput Y: f32[4096, 4096]\n\
         kernel cp(x: in f32[16, 1024], y: out f32[16, 1024]) { y = x * 2.0 }\n\
         workload w {\n    for i, j in P(rows, cols) {\n        \
         cp[i, j](x: X[i * 16..i * 16 + 16, j * 1024..j * 1024 + 1024], \
         y: Y[i * 16..i * 16 + 16, j * 1024..j * 1024 + 1024])\n    }\n}\n",
    )
    .expect("write");
    let o = Command::new(env!("CARGO_BIN_EXE_wsp"))
        .args(["run", "p.wsp", "-q"])
        .current_dir(&dir)
        .output()
        .expect("run wsp");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // SAFETY: `getrusage` fills the struct it is given.
    let peak_kib = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_CHILDREN, &mut u), 0);
        u.ru_maxrss as u64
    };
    let tensors_mib = 128;
    let peak_mib = peak_kib / 1024;
    // The binary, the JIT and the runtime's rings take a few tens of MiB of their own.
    assert!(
        peak_mib < tensors_mib * 5 / 2 + 64,
        "peak {peak_mib} MiB for {tensors_mib} MiB of tensors"
    );
}
