//! Writing a file so that a failure never leaves it half-written: a temporary file beside it,
//! synced, then renamed over it. `commit.rs` replaces sets of files with the same pieces.

use std::io::Write;
use std::path::Path;

/// A new temporary file beside `path`, named for it and this process (`.NAME.PID.XXXXXX.SUFFIX`:
/// a later run removes one whose process is gone), with the
/// permissions `File::create` would give it (read and write for all, less the umask, which the
/// operating system applies), not a temporary file's owner-only mode. Removed when dropped.
pub fn temp_beside(path: &Path, suffix: &str) -> std::io::Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Some(name) = path.file_name() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the path has no file name",
        ));
    };
    let prefix = format!(".{}.{}.", name.to_string_lossy(), std::process::id());
    let suffix = format!(".{suffix}");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(&suffix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    builder.tempfile_in(dir)
}

/// `bytes` written and synced into a temporary file beside `path`, with the permissions of
/// the file it will replace, if any: what [`write_atomic`] renames over `path`, and what a set
/// of files replaced together is staged in.
pub fn staged(path: &Path, bytes: &[u8]) -> std::io::Result<tempfile::NamedTempFile> {
    let mut tmp = temp_beside(path, "tmp")?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    if let Ok(meta) = std::fs::metadata(path) {
        tmp.as_file().set_permissions(meta.permissions())?;
    }
    Ok(tmp)
}

/// Writes `bytes` to `path` atomically: [`staged`] beside it, then renamed over it. On failure
/// `path` is as it was and the temporary file is removed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    staged(path, bytes)?
        .persist(path)
        .map(|_| ())
        .map_err(|e| e.error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_keeping_permissions_and_leaves_nothing_on_failure() {
        let dir = std::env::temp_dir().join(format!("wsp-fsio-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("a.txt");
        write_atomic(&f, b"one").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // A new file has the permissions `File::create` gives (not the temporary's 0600).
            let created = dir.join("created");
            std::fs::File::create(&created).unwrap();
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&f), mode(&created));
            std::fs::remove_file(&created).unwrap();
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
            write_atomic(&f, b"two").unwrap();
            let mode = std::fs::metadata(&f).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o640);
        }
        write_atomic(&f, b"three").unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"three");
        // A directory in the way: the write fails, the directory stays, no temporary is left.
        let d = dir.join("sub");
        std::fs::create_dir_all(&d).unwrap();
        assert!(write_atomic(&d, b"x").is_err());
        assert!(d.is_dir());
        assert!(write_atomic(&dir.join("missing").join("b"), b"x").is_err());
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 2, "{left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_npy_write_replaces_and_leaves_no_temporary() {
        use wsp_ir::npy::{encode_npy, read_npy_as};
        use wsp_ir::{tensor::HostTensor, DType};
        let dir = std::env::temp_dir().join(format!("wsp-cli-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.npy");
        let t = HostTensor::from_f64(DType::F32, vec![2], &[1.0, 2.0]);
        write_atomic(&path, &encode_npy(&t)).unwrap();
        let t2 = HostTensor::from_f64(DType::F32, vec![2], &[3.0, 4.0]);
        write_atomic(&path, &encode_npy(&t2)).unwrap();
        assert_eq!(read_npy_as(&path, DType::F32, &[2]).unwrap(), t2);
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["out.npy".to_string()]);
        // Writing into a missing directory fails cleanly.
        assert!(write_atomic(&dir.join("missing").join("o.npy"), &encode_npy(&t)).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
