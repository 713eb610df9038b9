//! Replacing a set of files as a whole: `wsp run`'s outputs (`--out-dir`), trace and graph.
//!
//! Every file is first written and synced beside its destination ([`FileSet::stage`]). The
//! commit then writes a journal (`.wsp-commit.PID.journal`, beside the first destination)
//! naming each staged file, its destination and the name its old file is moved aside to; once
//! the journal is on disk the new set is decided. Each destination's old file is moved aside
//! and the new one renamed in; the directories are synced; the old files and the journal go.
//!
//! A failure while the process runs rolls every destination back. A process killed between
//! two renames leaves the journal: the next run that writes into that directory finds it
//! ([`recover`]) and completes the switch (every staged file of a journal was complete before
//! the journal was written), so readers never see old and new files mixed for longer than the
//! killed run's own lifetime. [`recover`] also removes the temporary files that killed runs
//! left (their names carry the process id: `.NAME.PID.XXXXXX.tmp`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Files staged to replace their destinations together.
#[derive(Default)]
pub struct FileSet {
    staged: Vec<(tempfile::NamedTempFile, PathBuf)>,
}

/// One destination of a journal.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
struct Entry {
    /// The staged new file.
    tmp: PathBuf,
    dst: PathBuf,
    /// Where the old file goes while the set is switched.
    old: PathBuf,
}

#[derive(Debug, Serialize, Deserialize)]
struct Journal {
    pid: u32,
    entries: Vec<Entry>,
}

fn abs(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The directory a file path is in (`.` for a bare name).
pub fn dir_of(p: &Path) -> PathBuf {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Makes the directory's entries durable (a rename is durable once its directory is synced).
fn sync_dir(dir: &Path) {
    if let Ok(f) = std::fs::File::open(dir) {
        let _ = f.sync_all();
    }
}

impl FileSet {
    /// Writes `bytes` beside `dst`, to replace it at [`FileSet::commit`].
    pub fn stage(&mut self, dst: &Path, bytes: &[u8]) -> Result<(), String> {
        if self.staged.iter().any(|(_, d)| abs(d) == abs(dst)) {
            return Err(format!(
                "two of the run's files (outputs, --trace, --graph) would be written to `{}`; give each its own path",
                dst.display()
            ));
        }
        if dst.is_dir() {
            return Err(format!(
                "cannot write `{}`: it is a directory",
                dst.display()
            ));
        }
        // A replaced file keeps its permissions.
        let tmp = crate::atomic::staged(dst, bytes)
            .map_err(|e| format!("cannot write `{}`: {e}", dst.display()))?;
        self.staged.push((tmp, dst.to_path_buf()));
        Ok(())
    }

    /// Replaces every destination with its staged file, all or none.
    pub fn commit(self) -> Result<(), String> {
        self.commit_as(std::process::id(), usize::MAX)
    }

    /// [`FileSet::commit`] with the journal written for process `pid`, stopping (as a killed
    /// process would) after `renames` renames.
    fn commit_as(self, pid: u32, renames: usize) -> Result<(), String> {
        let Some((_, first)) = self.staged.first() else {
            return Ok(());
        };
        let jdir = dir_of(first);
        // Names for the old files, taken now so the journal can name them.
        let mut entries = Vec::new();
        let mut held = Vec::new();
        for (tmp, dst) in &self.staged {
            let old = crate::atomic::temp_beside(dst, "old")
                .map_err(|e| format!("cannot write beside `{}`: {e}", dst.display()))?
                .into_temp_path();
            entries.push(Entry {
                tmp: abs(tmp.path()),
                dst: abs(dst),
                old: abs(&old),
            });
            held.push(old);
        }
        let journal = jdir.join(format!(".wsp-commit.{pid}.journal"));
        let text = serde_json::to_vec(&Journal {
            pid,
            entries: entries.clone(),
        })
        .map_err(|e| e.to_string())?;
        crate::atomic::write_atomic(&journal, &text)
            .map_err(|e| format!("cannot write `{}`: {e}", journal.display()))?;
        sync_dir(&jdir);
        // Decided: from here the staged and old files are the journal's to remove.
        for (tmp, _) in self.staged {
            let _ = tmp.into_temp_path().keep();
        }
        for old in held {
            let _ = old.keep();
        }
        let mut done = 0;
        // Whether each destination done had a file, now moved aside.
        let mut had = Vec::new();
        let mut failure = None;
        for e in &entries {
            if done >= renames {
                // A killed process: the journal stays for the next run.
                return Err("stopped".into());
            }
            let moved = if e.dst.exists() {
                if let Err(err) = std::fs::rename(&e.dst, &e.old) {
                    failure = Some(format!("cannot replace `{}`: {err}", e.dst.display()));
                    break;
                }
                true
            } else {
                false
            };
            if let Err(err) = std::fs::rename(&e.tmp, &e.dst) {
                if moved {
                    let _ = std::fs::rename(&e.old, &e.dst);
                }
                failure = Some(format!("cannot write `{}`: {err}", e.dst.display()));
                break;
            }
            done += 1;
            had.push(moved);
        }
        if failure.is_some() {
            // Back to the old set, in reverse.
            for (e, moved) in entries[..done].iter().zip(&had).rev() {
                if *moved {
                    let _ = std::fs::rename(&e.old, &e.dst);
                } else {
                    let _ = std::fs::remove_file(&e.dst);
                }
            }
        }
        let mut dirs: Vec<PathBuf> = entries.iter().map(|e| dir_of(&e.dst)).collect();
        dirs.sort();
        dirs.dedup();
        dirs.iter().for_each(|d| sync_dir(d));
        for e in &entries {
            let _ = std::fs::remove_file(&e.tmp);
            let _ = std::fs::remove_file(&e.old);
        }
        let _ = std::fs::remove_file(&journal);
        sync_dir(&jdir);
        failure.map_or(Ok(()), Err)
    }
}

/// Whether process `pid` may still be running (a journal or temporary file of a live run is
/// left alone).
#[cfg(unix)]
fn alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    let Ok(p) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    let r = unsafe { libc::kill(p, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Elsewhere a process cannot be asked after: every run counts as alive.
#[cfg(not(unix))]
fn alive(_: u32) -> bool {
    true
}

/// The process id in a temporary file's name `.NAME.PID.XXXXXX.tmp` (or `.old`).
fn temp_pid(name: &str) -> Option<u32> {
    let rest = name
        .strip_prefix('.')?
        .strip_suffix(".tmp")
        .or_else(|| name.strip_prefix('.')?.strip_suffix(".old"))?;
    let (rest, _random) = rest.rsplit_once('.')?;
    let (_, pid) = rest.rsplit_once('.')?;
    pid.parse().ok()
}

/// Completes the switches that killed runs left in `dir` (their journals), and removes the
/// temporary files of runs no longer running. Returns what it did, one line a file set.
pub fn recover(dir: &Path) -> Vec<String> {
    let mut did = Vec::new();
    let Ok(list) = std::fs::read_dir(dir) else {
        return did;
    };
    let names: Vec<String> = list
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    for name in &names {
        let Some(pid) = name
            .strip_prefix(".wsp-commit.")
            .and_then(|n| n.strip_suffix(".journal"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if alive(pid) {
            continue;
        }
        let path = dir.join(name);
        let Ok(text) = wsp_ir::fsio::read_regular(&path, 1 << 24) else {
            continue;
        };
        let Ok(j) = serde_json::from_slice::<Journal>(&text) else {
            continue;
        };
        for e in &j.entries {
            if e.tmp.exists() {
                let _ = std::fs::rename(&e.tmp, &e.dst);
            }
        }
        let mut dirs: Vec<PathBuf> = j.entries.iter().map(|e| dir_of(&e.dst)).collect();
        dirs.sort();
        dirs.dedup();
        dirs.iter().for_each(|d| sync_dir(d));
        for e in &j.entries {
            let _ = std::fs::remove_file(&e.old);
        }
        let _ = std::fs::remove_file(&path);
        sync_dir(dir);
        did.push(format!(
            "completed the replacement of {} file(s) that an interrupted run (process {pid}) had begun: {}",
            j.entries.len(),
            j.entries
                .iter()
                .map(|e| e.dst.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for name in &names {
        if let Some(pid) = temp_pid(name) {
            if !alive(pid) && std::fs::remove_file(dir.join(name)).is_ok() {
                did.push(format!(
                    "removed `{}`, a temporary file of an interrupted run (process {pid})",
                    dir.join(name).display()
                ));
            }
        }
    }
    did
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process id no process has (above Linux's largest, 2^22).
    const DEAD: u32 = 2_000_000_000;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wsp-commit-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn listing(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    fn set(d: &Path, text: &str) -> FileSet {
        let mut s = FileSet::default();
        for n in ["A.npy", "B.npy", "C.npy"] {
            s.stage(&d.join(n), format!("{text} {n}").as_bytes())
                .unwrap();
        }
        s
    }

    #[test]
    fn a_set_replaces_its_files_and_leaves_nothing_else() {
        let d = scratch("whole");
        set(&d, "old").commit().unwrap();
        set(&d, "new").commit().unwrap();
        assert_eq!(listing(&d), ["A.npy", "B.npy", "C.npy"]);
        assert_eq!(
            std::fs::read_to_string(d.join("B.npy")).unwrap(),
            "new B.npy"
        );
    }

    #[test]
    fn a_switch_killed_between_renames_is_completed_by_the_next_run() {
        let d = scratch("killed");
        set(&d, "old").commit().unwrap();
        // Killed after one rename: A is new, B and C old.
        assert!(set(&d, "new").commit_as(DEAD, 1).is_err());
        assert_eq!(
            std::fs::read_to_string(d.join("A.npy")).unwrap(),
            "new A.npy"
        );
        assert_eq!(
            std::fs::read_to_string(d.join("B.npy")).unwrap(),
            "old B.npy"
        );
        assert!(listing(&d).iter().any(|n| n.ends_with(".journal")));
        let did = recover(&d);
        assert!(did[0].contains("3 file(s)"), "{did:?}");
        assert_eq!(listing(&d), ["A.npy", "B.npy", "C.npy"]);
        for n in ["A.npy", "B.npy", "C.npy"] {
            assert_eq!(
                std::fs::read_to_string(d.join(n)).unwrap(),
                format!("new {n}")
            );
        }
        // Killed before any rename: the next run switches the whole set too.
        assert!(set(&d, "third").commit_as(DEAD, 0).is_err());
        recover(&d);
        assert_eq!(listing(&d), ["A.npy", "B.npy", "C.npy"]);
        assert_eq!(
            std::fs::read_to_string(d.join("C.npy")).unwrap(),
            "third C.npy"
        );
    }

    #[test]
    fn a_live_run_s_journal_and_temporary_files_are_left_alone() {
        let d = scratch("live");
        set(&d, "old").commit().unwrap();
        assert!(set(&d, "new").commit_as(std::process::id(), 1).is_err());
        assert!(recover(&d).is_empty());
        assert!(listing(&d).iter().any(|n| n.ends_with(".journal")));
    }

    #[test]
    fn temporary_files_of_dead_runs_are_removed() {
        let d = scratch("stale");
        let stale = format!(".Y.npy.{DEAD}.a1B2c3.tmp");
        std::fs::write(d.join(&stale), "partial").unwrap();
        let mine = crate::atomic::temp_beside(&d.join("Y.npy"), "tmp").unwrap();
        std::fs::write(d.join("Y.npy"), "kept").unwrap();
        let did = recover(&d);
        assert_eq!(did.len(), 1, "{did:?}");
        assert!(!d.join(&stale).exists());
        assert!(
            mine.path().exists(),
            "a live process's temporary file stays"
        );
        assert_eq!(temp_pid(&stale), Some(DEAD));
        assert_eq!(temp_pid(".a.b.npy.123.XyZ.old"), Some(123));
        assert_eq!(temp_pid("Y.npy"), None);
    }
}
