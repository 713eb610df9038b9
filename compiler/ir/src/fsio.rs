//! Reading a file only when it is one, bounded: sources, modules and data files. (Writing a
//! file atomically is the CLI's job: `compiler/cli/src/atomic.rs`.)

use std::io::Read;
use std::path::Path;

/// The largest `.wsp` source (or other text input: an architecture model, an extern kernel's
/// source) `wsp` reads.
pub const MAX_SOURCE_BYTES: u64 = 64 << 20;

/// Reads the regular file at `path` (following symbolic links), of at most `limit` bytes. A
/// directory, FIFO, socket or device (`/dev/zero`) is refused before it is opened — reading
/// one could block forever or never end — and a file over the limit before it is read.
pub fn read_regular(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a directory, FIFO, socket or device)",
        ));
    }
    let too_big = |n: u64| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{n} bytes, more than the {limit} bytes read from one file"),
        )
    };
    if meta.len() > limit {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    std::fs::File::open(path)?
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        // It grew while being read.
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// An imported module's source: [`read_source`] of the file `path` names once symbolic links
/// are followed, which must be a `.wsp` file — an import never reads (and no diagnostic ever
/// quotes) another kind of file through a link.
pub fn read_module(path: &Path) -> std::io::Result<String> {
    let target = std::fs::canonicalize(path)?;
    if target.extension().is_none_or(|e| e != "wsp") {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "it links to `{}`, which is not a .wsp file",
                target.display()
            ),
        ));
    }
    read_source(&target)
}

/// [`read_regular`] of a text file of at most [`MAX_SOURCE_BYTES`], as UTF-8.
pub fn read_source(path: &Path) -> std::io::Result<String> {
    let bytes = read_regular(path, MAX_SOURCE_BYTES)?;
    String::from_utf8(bytes).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not valid UTF-8 (at byte {})", e.utf8_error().valid_up_to()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn only_regular_files_within_the_limit_are_read() {
        let dir = std::env::temp_dir().join(format!("wsp-fsio-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("a.wsp");
        std::fs::write(&f, "const A = 1\n").unwrap();
        assert_eq!(read_source(&f).unwrap(), "const A = 1\n");
        assert!(read_regular(&f, 4)
            .unwrap_err()
            .to_string()
            .contains("more than the 4 bytes"));
        // A device and a link to it, a directory, a FIFO: refused without reading (a FIFO
        // with no writer would block the open).
        let zero = dir.join("zero.wsp");
        let _ = std::fs::remove_file(&zero);
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        for p in [Path::new("/dev/zero"), &zero, &dir] {
            let e = read_regular(p, MAX_SOURCE_BYTES).unwrap_err();
            assert!(e.to_string().contains("not a regular file"), "{p:?}: {e}");
        }
        let fifo = dir.join("fifo.wsp");
        let _ = std::fs::remove_file(&fifo);
        if std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success())
        {
            assert!(read_source(&fifo)
                .unwrap_err()
                .to_string()
                .contains("not a regular file"));
        }
        // An import reads only .wsp files, also through links.
        let secret = dir.join("secret.txt");
        std::fs::write(&secret, "root:x:0\n").unwrap();
        let module = dir.join("m.wsp");
        let _ = std::fs::remove_file(&module);
        std::os::unix::fs::symlink(&secret, &module).unwrap();
        let e = read_module(&module).unwrap_err().to_string();
        assert!(
            e.contains("not a .wsp file") && !e.contains("root:x"),
            "{e}"
        );
        assert_eq!(read_module(&f).unwrap(), "const A = 1\n");
        std::fs::write(&f, [0xff, 0xfe]).unwrap();
        assert!(read_source(&f)
            .unwrap_err()
            .to_string()
            .contains("not valid UTF-8"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
