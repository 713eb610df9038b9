//! Compiled kernels cached on disk, across runs: a hit loads the machine code and its
//! relocations into a fresh JIT module without running Cranelift.
//!
//! An entry is keyed by everything the code depends on: the kernel IR (its JSON), the wsp
//! version and the JIT's build identity (a hash of the sources that decide the generated code,
//! computed by `build.rs`), this format's version and the host (target triple, Cranelift's
//! shared and ISA flags — the CPU features it compiled for). The file name is a 64-bit hash of the key; the
//! file holds the whole key, which a load compares, so a hash collision is a miss. A file is
//! written to a temporary name and renamed into place, so concurrent runs never see a partial
//! entry (two runs writing one key write the same bytes); a checksum catches a damaged one.
//! Every failure (no directory, unreadable, damaged, a relocation this format does not know)
//! is a miss: the cache is an optimisation, never an error.
//!
//! The directory: `$WSP_CACHE_DIR`, else `$XDG_CACHE_HOME/wsp/jit`, else `~/.cache/wsp/jit`;
//! `WSP_JIT_CACHE=off` turns the cache off. It keeps at most 2,000 entries, the least
//! recently used going first. The code in it runs with the user's rights, as
//! the `wsp` binary does: it is the user's own directory.

use cranelift::codegen::binemit::Reloc;
use cranelift::codegen::ir::LibCall;
use cranelift_module::{ModuleReloc, ModuleRelocTarget};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

/// The most entries a cache directory keeps (a kernel's entry is a few to a few tens of KiB).
const MAX_ENTRIES: usize = 2000;

/// The file format; part of the key.
const FORMAT: &str = "wsp-jit-cache 1";
const MAGIC: &[u8; 8] = b"WSPJIT01";

/// What a relocation points at, by name (ids differ from module to module).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// An imported function (a helper), by symbol.
    Symbol(String),
    /// One of Cranelift's library calls (`fmaf`, ...), by name.
    LibCall(String),
    /// An offset inside the kernel's own code.
    Own(u32),
}

/// One relocation of the code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Relocation {
    pub offset: u32,
    pub kind: Reloc,
    pub target: Target,
    pub addend: i64,
}

/// A compiled kernel as stored: the code, its alignment and relocations, and the kernel's
/// error messages (code `i + 1` is message `i`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub code: Vec<u8>,
    pub alignment: u64,
    pub relocs: Vec<Relocation>,
    pub errors: Vec<String>,
}

/// The relocation kinds this format stores (those of x86-64 and AArch64 code).
const KINDS: [Reloc; 11] = [
    Reloc::Abs4,
    Reloc::Abs8,
    Reloc::X86PCRel4,
    Reloc::X86CallPCRel4,
    Reloc::X86CallPLTRel4,
    Reloc::X86GOTPCRel4,
    Reloc::Arm64Call,
    Reloc::Aarch64AdrGotPage21,
    Reloc::Aarch64Ld64GotLo12Nc,
    Reloc::Aarch64AdrPrelPgHi21,
    Reloc::Aarch64AddAbsLo12Nc,
];

fn kind_code(k: Reloc) -> Option<u8> {
    KINDS.iter().position(|x| *x == k).map(|i| i as u8)
}

/// The relocation of a freshly compiled function, by name, or `None` when this format cannot
/// store it.
pub(crate) fn relocation(
    r: &ModuleReloc,
    name_of: impl Fn(u32) -> Option<String>,
) -> Option<Relocation> {
    kind_code(r.kind)?;
    let target = match &r.name {
        ModuleRelocTarget::User {
            namespace: 0,
            index,
        } => Target::Symbol(name_of(*index)?),
        ModuleRelocTarget::LibCall(l) => Target::LibCall(l.to_string()),
        ModuleRelocTarget::FunctionOffset(_, off) => Target::Own(*off),
        _ => return None,
    };
    Some(Relocation {
        offset: r.offset,
        kind: r.kind,
        target,
        addend: r.addend,
    })
}

/// A stored relocation for the module where `own` is the kernel and `id_of` finds the imports.
pub(crate) fn module_reloc(
    r: &Relocation,
    own: cranelift_module::FuncId,
    id_of: impl Fn(&str) -> Option<u32>,
) -> Option<ModuleReloc> {
    let name = match &r.target {
        Target::Symbol(s) => ModuleRelocTarget::user(0, id_of(s)?),
        Target::LibCall(l) => ModuleRelocTarget::LibCall(LibCall::from_str(l).ok()?),
        Target::Own(off) => ModuleRelocTarget::FunctionOffset(own, *off),
    };
    Some(ModuleReloc {
        offset: r.offset,
        kind: r.kind,
        name,
        addend: r.addend,
    })
}

/// FNV-1a, 64 bits: the file name of a key and the checksum of a file (not a defence against
/// anyone, only against collisions, which a load tells apart by the key, and damage).
fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The cache in one directory.
#[derive(Clone, Debug)]
pub struct DiskCache {
    dir: PathBuf,
}

impl DiskCache {
    /// The cache in `dir` (created when the first entry is written).
    pub fn new(dir: impl Into<PathBuf>) -> DiskCache {
        DiskCache { dir: dir.into() }
    }

    /// The cache of this user, or `None` when `WSP_JIT_CACHE=off` or no directory is known.
    pub fn from_env() -> Option<DiskCache> {
        let var = |n: &str| std::env::var_os(n).filter(|v| !v.is_empty());
        if std::env::var("WSP_JIT_CACHE").is_ok_and(|v| v == "off") {
            return None;
        }
        let dir = var("WSP_CACHE_DIR")
            .map(PathBuf::from)
            .or_else(|| var("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("wsp/jit")))
            .or_else(|| var("HOME").map(|d| PathBuf::from(d).join(".cache/wsp/jit")))?;
        Some(DiskCache::new(dir))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The whole key of a kernel (IR as JSON) compiled for `host`.
    pub(crate) fn key(ir: &str, host: &str) -> String {
        format!(
            "{FORMAT}\nwsp {} build {}\n{host}\n{ir}",
            env!("CARGO_PKG_VERSION"),
            env!("WSP_JIT_BUILD_ID")
        )
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir
            .join(format!("{:016x}.wspjit", fnv(key.as_bytes())))
    }

    /// The entry of `key`, if there is a sound one. A hit marks the file as used (its
    /// modification time), which [`DiskCache::store`]'s pruning goes by.
    pub(crate) fn load(&self, key: &str) -> Option<Entry> {
        let path = self.path(key);
        let bytes = std::fs::read(&path).ok()?;
        let e = decode(&bytes, key)?;
        if let Ok(f) = std::fs::File::options().append(true).open(&path) {
            let _ = f.set_modified(std::time::SystemTime::now());
        }
        Some(e)
    }

    /// Stores `e` under `key`: written to a temporary file, then renamed into place. Failures
    /// are ignored (the next run compiles again).
    pub(crate) fn store(&self, key: &str, e: &Entry) {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        if std::fs::create_dir_all(&self.dir).is_err() {
            return;
        }
        let path = self.path(key);
        let tmp = self.dir.join(format!(
            ".{:016x}.{}.{}.tmp",
            fnv(key.as_bytes()),
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        if std::fs::write(&tmp, encode(key, e)).is_ok() && std::fs::rename(&tmp, &path).is_ok() {
            self.prune(MAX_ENTRIES);
            return;
        }
        let _ = std::fs::remove_file(&tmp);
    }

    /// Keeps the cache bounded: past `max` entries ([`MAX_ENTRIES`]), the least recently used
    /// are removed down to three quarters of it (a concurrent run may remove an entry another
    /// is about to read: that read is a miss).
    fn prune(&self, max: usize) {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut entries: Vec<(std::time::SystemTime, PathBuf)> = rd
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".wspjit"))
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .collect();
        if entries.len() <= max {
            return;
        }
        entries.sort();
        for (_, p) in &entries[..entries.len() - max * 3 / 4] {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn put(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u64).to_le_bytes());
    out.extend_from_slice(b);
}

fn encode(key: &str, e: &Entry) -> Vec<u8> {
    let mut body = Vec::new();
    put(&mut body, key.as_bytes());
    put(&mut body, &e.code);
    body.extend_from_slice(&e.alignment.to_le_bytes());
    body.extend_from_slice(&(e.relocs.len() as u64).to_le_bytes());
    for r in &e.relocs {
        body.extend_from_slice(&r.offset.to_le_bytes());
        body.push(kind_code(r.kind).unwrap_or(u8::MAX));
        let (tag, name) = match &r.target {
            Target::Symbol(s) => (0u8, s.clone()),
            Target::LibCall(l) => (1, l.clone()),
            Target::Own(off) => (2, off.to_string()),
        };
        body.push(tag);
        put(&mut body, name.as_bytes());
        body.extend_from_slice(&r.addend.to_le_bytes());
    }
    body.extend_from_slice(&(e.errors.len() as u64).to_le_bytes());
    for m in &e.errors {
        put(&mut body, m.as_bytes());
    }
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&fnv(&body).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// Reads an encoded entry front to back; every read is checked.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.u64()?).ok()?;
        self.take(n)
    }
    fn string(&mut self) -> Option<String> {
        String::from_utf8(self.bytes()?.to_vec()).ok()
    }
}

fn decode(bytes: &[u8], key: &str) -> Option<Entry> {
    let mut r = Reader(bytes);
    if r.take(8)? != MAGIC {
        return None;
    }
    let sum = r.u64()?;
    if fnv(r.0) != sum {
        return None;
    }
    if r.bytes()? != key.as_bytes() {
        return None;
    }
    let code = r.bytes()?.to_vec();
    let alignment = r.u64()?;
    let n = r.u64()?;
    let mut relocs = Vec::new();
    for _ in 0..n {
        let offset = r.u32()?;
        let kind = *KINDS.get(usize::from(r.u8()?))?;
        let tag = r.u8()?;
        let name = r.string()?;
        let target = match tag {
            0 => Target::Symbol(name),
            1 => Target::LibCall(name),
            2 => Target::Own(name.parse().ok()?),
            _ => return None,
        };
        let addend = i64::from_le_bytes(r.take(8)?.try_into().ok()?);
        relocs.push(Relocation {
            offset,
            kind,
            target,
            addend,
        });
    }
    let n = r.u64()?;
    let mut errors = Vec::new();
    for _ in 0..n {
        errors.push(r.string()?);
    }
    if !r.0.is_empty() {
        return None;
    }
    Some(Entry {
        code,
        alignment,
        relocs,
        errors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        Entry {
            code: vec![0x90, 0xc3, 1, 2, 3],
            alignment: 16,
            relocs: vec![
                Relocation {
                    offset: 1,
                    kind: Reloc::Abs8,
                    target: Target::Symbol("wsp_rowtopk".into()),
                    addend: -4,
                },
                Relocation {
                    offset: 3,
                    kind: Reloc::X86CallPCRel4,
                    target: Target::LibCall("FmaF32".into()),
                    addend: 0,
                },
                Relocation {
                    offset: 2,
                    kind: Reloc::X86PCRel4,
                    target: Target::Own(4),
                    addend: 0,
                },
            ],
            errors: vec!["a".into(), "région".into()],
        }
    }

    #[test]
    fn entries_round_trip_and_a_damaged_or_foreign_one_is_a_miss() {
        let key = DiskCache::key("{\"name\":\"k\"}", "x86_64 flags");
        let e = entry();
        let bytes = encode(&key, &e);
        assert_eq!(decode(&bytes, &key), Some(e));
        // Another key (a hash collision, another host, another version): a miss.
        assert_eq!(decode(&bytes, &DiskCache::key("{}", "x86_64 flags")), None);
        // Any damaged byte or a truncation: a miss, never a panic.
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x41;
            assert_eq!(decode(&b, &key), None, "byte {i}");
            assert_eq!(decode(&bytes[..i], &key), None, "length {i}");
        }
    }

    #[test]
    fn stores_and_loads_through_a_directory_and_a_missing_one_is_a_miss() {
        let dir = std::env::temp_dir().join(format!("wsp-jit-disk-{}", std::process::id()));
        let c = DiskCache::new(dir.join("nested"));
        let key = DiskCache::key("ir", "host");
        assert_eq!(c.load(&key), None);
        c.store(&key, &entry());
        assert_eq!(c.load(&key), Some(entry()));
        // No temporary files are left.
        let names: Vec<String> = std::fs::read_dir(c.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        assert!(names[0].ends_with(".wspjit"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_least_recently_used_entries_go_first() {
        let dir = std::env::temp_dir().join(format!("wsp-jit-prune-{}", std::process::id()));
        let c = DiskCache::new(&dir);
        let keys: Vec<String> = (0..6)
            .map(|i| DiskCache::key(&i.to_string(), "h"))
            .collect();
        let t0 = std::time::SystemTime::now() - std::time::Duration::from_secs(100);
        for (i, k) in keys.iter().enumerate() {
            c.store(k, &entry());
            let f = std::fs::File::options()
                .append(true)
                .open(c.path(k))
                .unwrap();
            f.set_modified(t0 + std::time::Duration::from_secs(i as u64))
                .unwrap();
        }
        // Entry 0 is used: it becomes the most recent.
        assert!(c.load(&keys[0]).is_some());
        c.prune(4);
        let kept: Vec<bool> = keys.iter().map(|k| c.path(k).exists()).collect();
        assert_eq!(kept, [true, false, false, false, true, true]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
