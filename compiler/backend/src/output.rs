//! Committing an emitted tree to its output directory as a whole.
//!
//! A backend (built-in or plugin) writes into a *staging* directory beside the destination:
//! `PARENT/.NAME.wsp-staging-XXXXXX/out` (the wrapper a [`tempfile::TempDir`]). The extra level (the wrapper) makes stray writes of a
//! plugin through `..` visible: anything in the wrapper besides `out` means the plugin wrote
//! outside its directory. When the emission succeeds and the staged tree passes
//! [`Staging::verify`] (regular files and directories only: no symbolic links, no hard links
//! to other files, no special files), [`Staging::commit`] writes the marker file
//! [`MARKER`] into it and replaces the destination as a whole: the old directory is renamed
//! aside into the wrapper, the staged one renamed into its place, and the wrapper removed. On
//! any failure the destination stays as it was and the wrapper is removed (also when a
//! [`Staging`] is dropped without being committed).
//!
//! A destination is only ever replaced when it does not exist, is an empty directory, or holds
//! the marker (it was produced by `wsp emit`): [`check_destination`] refuses files, symbolic
//! links and every other non-empty directory, so a mistyped `-o` cannot lose a directory.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::FileTree;

/// The marker file `wsp emit` writes into every tree it commits.
pub const MARKER: &str = ".wsp-emit";

/// The destination as an absolute path ending in a directory name, or why it cannot be one.
pub fn destination(dest: &Path) -> Result<PathBuf, String> {
    let abs = std::path::absolute(dest)
        .map_err(|e| format!("`{}`: cannot resolve the path: {e}", dest.display()))?;
    let clean: PathBuf = abs.components().collect();
    match clean.components().next_back() {
        Some(Component::Normal(_)) => Ok(clean),
        _ => Err(format!(
            "`{}` does not name a directory that can be replaced; give a directory name",
            dest.display()
        )),
    }
}

/// Why `dest` may not be (re)placed by an emitted tree, if it may not: it is a file, a
/// symbolic link, or a non-empty directory without the [`MARKER`] of `wsp emit`.
pub fn check_destination(dest: &Path) -> Result<(), String> {
    let dest = destination(dest)?;
    if let Ok(cwd) = std::env::current_dir() {
        if cwd.starts_with(&dest) {
            return Err(format!(
                "`{}` holds the working directory; give an output directory inside it",
                dest.display()
            ));
        }
    }
    let meta = match fs::symlink_metadata(&dest) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("`{}`: {e}", dest.display())),
    };
    let ft = meta.file_type();
    if ft.is_symlink() {
        return Err(format!(
            "`{}` is a symbolic link; give the path of a directory to emit into",
            dest.display()
        ));
    }
    if !ft.is_dir() {
        return Err(format!(
            "`{}` is a file, not a directory; `-o` names the directory to emit into",
            dest.display()
        ));
    }
    let mut entries =
        fs::read_dir(&dest).map_err(|e| format!("cannot read `{}`: {e}", dest.display()))?;
    if entries.next().is_none() {
        return Ok(());
    }
    match fs::symlink_metadata(dest.join(MARKER)) {
        Ok(m) if m.file_type().is_file() => Ok(()),
        _ => Err(format!(
            "`{}` is not empty and was not produced by `wsp emit` (it has no `{MARKER}` file); \
             refusing to replace it: choose another output directory, or empty this one",
            dest.display()
        )),
    }
}

/// A staging directory beside a destination (see the module documentation).
#[derive(Debug)]
pub struct Staging {
    /// Removed with everything in it when dropped, unless it keeps a previous tree that could
    /// not be moved back.
    wrapper: Option<tempfile::TempDir>,
    out: PathBuf,
    dest: PathBuf,
}

impl Staging {
    /// Creates the staging directory for `dest` (and `dest`'s parent directories if missing),
    /// after checking that `dest` may be replaced.
    pub fn beside(dest: &Path) -> Result<Staging, String> {
        check_destination(dest)?;
        let dest = destination(dest)?;
        let parent = dest.parent().unwrap_or(Path::new("/")).to_path_buf();
        fs::create_dir_all(&parent)
            .map_err(|e| format!("cannot create `{}`: {e}", parent.display()))?;
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let wrapper = tempfile::Builder::new()
            .prefix(&format!(".{name}.wsp-staging-"))
            .tempdir_in(&parent)
            .map_err(|e| {
                format!(
                    "cannot create a staging directory in `{}`: {e}",
                    parent.display()
                )
            })?;
        let staging = Staging {
            out: wrapper.path().join("out"),
            wrapper: Some(wrapper),
            dest,
        };
        fs::create_dir(&staging.out)
            .map_err(|e| format!("cannot create `{}`: {e}", staging.out.display()))?;
        Ok(staging)
    }

    /// The directory the tree is written into (absolute).
    pub fn dir(&self) -> &Path {
        &self.out
    }

    /// The wrapper around [`Staging::dir`]: scratch space of the driver, removed at the end.
    pub fn wrapper(&self) -> &Path {
        self.wrapper.as_ref().map_or(&self.out, |w| w.path())
    }

    /// The destination the tree is committed to (absolute).
    pub fn destination(&self) -> &Path {
        &self.dest
    }

    /// Writes a built-in backend's tree into the staging directory.
    pub fn write_tree(&self, tree: &FileTree) -> Result<(), String> {
        for (path, contents) in tree.iter() {
            crate::check_relative_path(path)?;
            if path == MARKER {
                return Err(format!(
                    "`{MARKER}` is reserved for `wsp emit`'s marker file"
                ));
            }
            let p = self.out.join(path);
            if let Some(dir) = p.parent() {
                fs::create_dir_all(dir)
                    .map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
            }
            fs::write(&p, contents).map_err(|e| format!("cannot write `{}`: {e}", p.display()))?;
        }
        Ok(())
    }

    /// Checks what was written: nothing beside the staging directory, and inside it only
    /// regular files (each with one link) and directories; no [`MARKER`] of its own. The
    /// error names the first offending path relative to the output directory.
    pub fn verify(&self) -> Result<(), String> {
        let mut stray: Vec<String> = fs::read_dir(self.wrapper())
            .map_err(|e| format!("cannot read `{}`: {e}", self.wrapper().display()))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != "out")
            .collect();
        stray.sort();
        if let Some(s) = stray.first() {
            return Err(format!(
                "wrote `../{s}`, outside the output directory it was given"
            ));
        }
        let meta = fs::symlink_metadata(&self.out)
            .map_err(|e| format!("the output directory is gone: {e}"))?;
        if !meta.file_type().is_dir() {
            return Err("replaced the output directory it was given with something else".into());
        }
        if fs::symlink_metadata(self.out.join(MARKER)).is_ok() {
            return Err(format!(
                "wrote `{MARKER}`, which is reserved for `wsp emit`'s marker file"
            ));
        }
        verify_dir(&self.out, "")
    }

    /// Writes the marker (naming `target`) and replaces the destination with the staged tree.
    /// On failure the destination is left as it was.
    pub fn commit(self, target: &str) -> Result<(), String> {
        let marker = format!(
            "{{\"produced_by\": \"wsp emit\", \"target\": {}}}\n",
            serde_json::Value::String(target.to_string())
        );
        fs::write(self.out.join(MARKER), marker)
            .map_err(|e| format!("cannot write the marker file: {e}"))?;
        check_destination(&self.dest)?;
        let exists = fs::symlink_metadata(&self.dest).is_ok();
        if !exists {
            return fs::rename(&self.out, &self.dest)
                .map_err(|e| format!("cannot move the tree to `{}`: {e}", self.dest.display()));
        }
        let old = self.wrapper().join("old");
        fs::rename(&self.dest, &old).map_err(|e| {
            format!(
                "cannot move the previous `{}` aside: {e}",
                self.dest.display()
            )
        })?;
        if let Err(e) = fs::rename(&self.out, &self.dest) {
            let back = fs::rename(&old, &self.dest);
            return Err(match back {
                Ok(()) => format!("cannot move the tree to `{}`: {e}", self.dest.display()),
                Err(b) => format!(
                    "cannot move the tree to `{}`: {e}; the previous tree is kept at `{}` ({b})",
                    self.dest.display(),
                    old.display()
                ),
            });
        }
        Ok(())
        // Dropping `self` removes the wrapper and the previous tree in it.
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // If the previous tree could not be moved back (see `commit`), keep it (and the
        // wrapper holding it); otherwise the `TempDir` removes the wrapper.
        if fs::symlink_metadata(self.wrapper().join("old")).is_ok()
            && fs::symlink_metadata(&self.dest).is_err()
        {
            if let Some(w) = self.wrapper.take() {
                let _ = w.keep();
            }
        }
    }
}

fn verify_dir(dir: &Path, rel: &str) -> Result<(), String> {
    let mut entries: Vec<fs::DirEntry> = fs::read_dir(dir)
        .map_err(|e| format!("cannot read `{}`: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let rel = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        let meta =
            fs::symlink_metadata(e.path()).map_err(|err| format!("cannot read `{rel}`: {err}"))?;
        let ft = meta.file_type();
        if ft.is_symlink() {
            return Err(format!(
                "wrote a symbolic link `{rel}`; only regular files and directories may be emitted"
            ));
        }
        if ft.is_dir() {
            verify_dir(&e.path(), &rel)?;
        } else if ft.is_file() {
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                if meta.nlink() > 1 {
                    return Err(format!(
                        "wrote `{rel}` as a hard link to another file; only regular files and directories may be emitted"
                    ));
                }
            }
        } else {
            return Err(format!(
                "wrote `{rel}`, which is neither a regular file nor a directory"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> FileTree {
        let mut t = FileTree::new();
        for (p, c) in files {
            t.add(p, *c).unwrap();
        }
        t
    }

    fn commit(dest: &Path, files: &[(&str, &str)]) -> Result<(), String> {
        let s = Staging::beside(dest)?;
        s.write_tree(&tree(files))?;
        s.verify()?;
        s.commit("test")
    }

    fn listing(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn commits_new_and_replaces_own_trees_only() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("a/out");
        commit(&dest, &[("k/x.cpp", "1"), ("y.h", "2")]).unwrap();
        assert_eq!(listing(&dest), [".wsp-emit", "k", "y.h"]);
        assert_eq!(fs::read_to_string(dest.join("k/x.cpp")).unwrap(), "1");
        // Replaced as a whole: the old file is gone.
        commit(&dest, &[("z", "3")]).unwrap();
        assert_eq!(listing(&dest), [".wsp-emit", "z"]);
        // Nothing left beside it.
        assert_eq!(listing(&tmp.path().join("a")), ["out"]);

        // An empty directory is taken; a foreign one and a file are refused.
        let empty = tmp.path().join("empty");
        fs::create_dir(&empty).unwrap();
        commit(&empty, &[("z", "3")]).unwrap();
        let foreign = tmp.path().join("src");
        fs::create_dir(&foreign).unwrap();
        fs::write(foreign.join("main.rs"), "keep").unwrap();
        let e = commit(&foreign, &[("z", "3")]).unwrap_err();
        assert!(e.contains("not produced by `wsp emit`"), "{e}");
        assert_eq!(fs::read_to_string(foreign.join("main.rs")).unwrap(), "keep");
        let file = tmp.path().join("f.txt");
        fs::write(&file, "keep").unwrap();
        let e = commit(&file, &[("z", "3")]).unwrap_err();
        assert!(e.contains("is a file"), "{e}");
        assert_eq!(fs::read_to_string(&file).unwrap(), "keep");
        #[cfg(unix)]
        {
            let link = tmp.path().join("link");
            std::os::unix::fs::symlink(&dest, &link).unwrap();
            assert!(commit(&link, &[("z", "3")])
                .unwrap_err()
                .contains("symbolic link"));
        }
        assert!(destination(Path::new("/")).is_err());
        let cwd = std::env::current_dir().unwrap();
        assert!(check_destination(&cwd)
            .unwrap_err()
            .contains("holds the working directory"));
        assert!(check_destination(Path::new("."))
            .unwrap_err()
            .contains("holds the working directory"));
        assert!(destination(Path::new("..")).is_err());
        // No staging directory is left anywhere.
        assert!(listing(tmp.path())
            .iter()
            .all(|n| !n.contains("wsp-staging")));
    }

    #[test]
    fn failures_leave_the_destination_as_it_was() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("out");
        commit(&dest, &[("old", "1")]).unwrap();
        // A reserved name.
        assert!(commit(&dest, &[(MARKER, "x")]).is_err());
        // Dropped without commit (an emission that failed).
        {
            let s = Staging::beside(&dest).unwrap();
            s.write_tree(&tree(&[("new", "2")])).unwrap();
        }
        assert_eq!(listing(&dest), [".wsp-emit", "old"]);
        assert_eq!(listing(tmp.path()), ["out"]);
    }

    #[test]
    fn verify_finds_escapes_links_and_special_files() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("out");
        let s = Staging::beside(&dest).unwrap();
        fs::write(s.dir().join("../escaped.txt"), "x").unwrap();
        let e = s.verify().unwrap_err();
        assert!(e.contains("`../escaped.txt`, outside"), "{e}");
        drop(s);
        #[cfg(unix)]
        {
            let s = Staging::beside(&dest).unwrap();
            fs::create_dir(s.dir().join("d")).unwrap();
            std::os::unix::fs::symlink("/etc/passwd", s.dir().join("d/p")).unwrap();
            let e = s.verify().unwrap_err();
            assert!(e.contains("symbolic link `d/p`"), "{e}");
            drop(s);
            let s = Staging::beside(&dest).unwrap();
            fs::write(s.dir().join("a"), "x").unwrap();
            fs::hard_link(s.dir().join("a"), s.dir().join("b")).unwrap();
            assert!(s.verify().unwrap_err().contains("hard link"));
            drop(s);
        }
        let s = Staging::beside(&dest).unwrap();
        fs::write(s.dir().join(MARKER), "x").unwrap();
        assert!(s.verify().unwrap_err().contains("reserved"));
        drop(s);
        assert!(listing(tmp.path()).is_empty());
    }
}
