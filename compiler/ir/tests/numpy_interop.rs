//! Interoperability with NumPy: files wsp writes load in NumPy with the same values, and files
//! NumPy writes (every dtype, big endian, Fortran order, format 2.0) load in wsp. Skipped, with
//! a message, when `python3` with NumPy is not installed.

use std::path::Path;
use std::process::Command;
use wsp_ir::npy::{encode_npy, read_npy, read_npy_as};
use wsp_ir::tensor::HostTensor;
use wsp_ir::DType;

/// Writes a tensor as `.npy`.
fn write_npy(p: &Path, t: &HostTensor) -> std::io::Result<()> {
    std::fs::write(p, encode_npy(t))
}

fn numpy_available() -> bool {
    Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn python(script: &str, dir: &Path) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "python failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn numpy_reads_what_wsp_writes_and_wsp_reads_what_numpy_writes() {
    if !numpy_available() {
        eprintln!("skipped: python3 with numpy is not installed");
        return;
    }
    let dir = std::env::temp_dir().join(format!("wsp-ir-numpy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let vals = [0.0, 1.0, 2.5, -3.0, 100.0, 7.0];
    for d in DType::ALL {
        let t = HostTensor::from_f64(d, vec![2, 3], &vals);
        write_npy(&dir.join(format!("{d}.npy")), &t).unwrap();
    }
    // NumPy side: load every file and print its dtype and values.
    let got = python(
        r#"
import numpy as np
for d in ["f16","bf16","f32","f64","i8","i16","i32","i64","u8","u16","u32","u64","bool"]:
    a = np.load(d + ".npy")
    if d == "bf16":
        a = (a.astype(np.uint32) << 16).view(np.float32)
    print(d, a.dtype, a.shape, ",".join(repr(float(x)) for x in a.ravel()))
"#,
        &dir,
    );
    for (line, d) in got.lines().zip(DType::ALL) {
        let want = HostTensor::from_f64(d, vec![2, 3], &vals).to_f64();
        let want_s = want
            .iter()
            .map(|v| format!("{v:?}"))
            .collect::<Vec<_>>()
            .join(",");
        assert!(
            line.ends_with(&want_s),
            "{d}: numpy read `{line}`, expected values {want_s}"
        );
        assert!(line.contains("(2, 3)"), "{line}");
    }

    // wsp side: arrays written by NumPy, including big-endian, Fortran-order and v2.0 files.
    python(
        r#"
import numpy as np
from numpy.lib import format as F
a = np.arange(6, dtype=np.float64).reshape(2, 3) * 1.5
np.save("np_f2.npy", a.astype("<f2"))
np.save("np_be_i4.npy", a.astype(">i4"))
np.save("np_fortran_f4.npy", np.asfortranarray(a.astype("<f4")))
np.save("np_bool.npy", a > 2)
np.save("np_u8.npy", a.astype(np.uint64))
with open("np_v2.npy", "wb") as f:
    F.write_array(f, a.astype("<f8"), version=(2, 0))
"#,
        &dir,
    );
    let want: Vec<f64> = (0..6).map(|i| f64::from(i) * 1.5).collect();
    let ints: Vec<f64> = want.iter().map(|v| v.trunc()).collect();
    let t = read_npy_as(&dir.join("np_f2.npy"), DType::F16, &[2, 3]).unwrap();
    assert_eq!(t.to_f64(), want);
    let t = read_npy_as(&dir.join("np_be_i4.npy"), DType::I32, &[2, 3]).unwrap();
    assert_eq!(t.to_f64(), ints);
    let t = read_npy_as(&dir.join("np_fortran_f4.npy"), DType::F32, &[2, 3]).unwrap();
    assert_eq!(t.to_f64(), want);
    let t = read_npy(&dir.join("np_bool.npy")).unwrap();
    assert_eq!(t.dtype, DType::Bool);
    assert_eq!(t.to_f64(), vec![0.0, 0.0, 1.0, 1.0, 1.0, 1.0]);
    let t = read_npy_as(&dir.join("np_u8.npy"), DType::U64, &[2, 3]).unwrap();
    assert_eq!(t.to_f64(), ints);
    let t = read_npy_as(&dir.join("np_v2.npy"), DType::F64, &[2, 3]).unwrap();
    assert_eq!(t.to_f64(), want);
    std::fs::remove_dir_all(&dir).unwrap();
}
