//! External backends: an executable `wsp-backend-NAME` is the backend `NAME`.
//!
//! The protocol (version [`PROTOCOL`]; docs/backends.md is its reference):
//!
//! * `wsp-backend-NAME describe` prints one JSON object on standard output and exits 0:
//!   `{"protocol": 1, "name": "NAME", "archs": [...], "description": "...",
//!   "capabilities": [{"key": "kernel.pipe", "support": "unsupported", "reason": "..."}],
//!   "default": "unsupported", "default_reason": "..."}`. Keys are those of the capability
//!   matrix (`wsp_arch::capabilities::MATRIX`); keys not listed take `default` (itself
//!   `unsupported` unless given). Standard input is empty.
//! * `wsp-backend-NAME emit --out-dir DIR [--arch A] [--option K=V]...` reads the Program IR
//!   (JSON, `wsp_ir::Program`) on standard input, writes its files under `DIR` (an empty
//!   directory), and prints `{"diagnostics": [...]}` ([`BackendDiagnostic`]s) on standard
//!   output. Exit 0: emitted (warnings allowed; an error diagnostic still fails the
//!   emission); exit 1: the program cannot be emitted, and the error diagnostics say why.
//!   Any other exit, a signal, or output that is not the protocol's JSON is a crash.
//!
//! Every run has a timeout; on expiry the plugin's whole process group is killed. The
//! plugin's standard error is shown when it fails. The environment variable
//! `WSP_BACKEND_PROTOCOL` carries the protocol version.

use std::ffi::OsString;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use wsp_arch::capabilities::{CapabilityTable, Support};

use crate::{BackendDiagnostic, EmitOptions};

/// The protocol version this `wsp` speaks.
pub const PROTOCOL: u32 = 1;

/// The prefix of a plugin executable's name.
pub const PREFIX: &str = "wsp-backend-";

/// The default time a plugin may take for one command.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// At most this much standard output is read (the diagnostics JSON).
const MAX_STDOUT: usize = 64 << 20;
/// At most this much standard error is kept (its end is shown on failure).
const MAX_STDERR: usize = 64 << 10;

/// An external backend found on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plugin {
    /// `NAME` of `wsp-backend-NAME`.
    pub name: String,
    /// The executable.
    pub path: PathBuf,
}

/// The backend name of an executable's file name (`wsp-backend-NAME` → `NAME`), when it is a
/// plugin's: `NAME` is lowercase ASCII letters, digits, `_` and `-`, starting with a letter.
pub fn plugin_name(file_name: &str) -> Option<&str> {
    let name = file_name.strip_prefix(PREFIX)?;
    let mut chars = name.chars();
    let first = chars.next()?;
    (first.is_ascii_lowercase()
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-'))
    .then_some(name)
}

fn is_executable(p: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(p) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        true
    }
}

/// The plugins in one directory, sorted by name.
pub fn plugins_in(dir: &Path) -> Vec<Plugin> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<Plugin> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let file = e.file_name().to_str()?.to_string();
            let name = plugin_name(&file)?.to_string();
            let path = e.path();
            is_executable(&path).then_some(Plugin { name, path })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Finds plugins: first those named by `backend_paths` (`--backend-path`: an executable
/// `wsp-backend-NAME`, or a directory searched for them), then those in the directories of
/// `path_env` (`PATH`), in order. The first plugin of a name wins. An explicit path that does
/// not exist, or a file not named `wsp-backend-NAME` or not executable, is an error.
pub fn discover(
    backend_paths: &[PathBuf],
    path_env: Option<&std::ffi::OsStr>,
) -> Result<Vec<Plugin>, String> {
    let mut found: Vec<Plugin> = Vec::new();
    let add = |p: Plugin, found: &mut Vec<Plugin>| {
        if !found.iter().any(|f| f.name == p.name) {
            found.push(p);
        }
    };
    for p in backend_paths {
        if p.is_dir() {
            let dir = std::path::absolute(p).unwrap_or_else(|_| p.clone());
            for plugin in plugins_in(&dir) {
                add(plugin, &mut found);
            }
        } else if p.exists() {
            let file = p.file_name().and_then(|f| f.to_str()).unwrap_or("");
            let Some(name) = plugin_name(file) else {
                return Err(format!(
                    "`{}` is not a backend plugin: its name must be `{PREFIX}NAME` (NAME: lowercase letters, digits, `_`, `-`)",
                    p.display()
                ));
            };
            if !is_executable(p) {
                return Err(format!(
                    "backend plugin `{}` is not executable",
                    p.display()
                ));
            }
            let path = std::path::absolute(p).unwrap_or_else(|_| p.clone());
            add(
                Plugin {
                    name: name.to_string(),
                    path,
                },
                &mut found,
            );
        } else {
            return Err(format!(
                "`--backend-path {}`: no such file or directory",
                p.display()
            ));
        }
    }
    if let Some(path_env) = path_env {
        for dir in std::env::split_paths(path_env) {
            if dir.as_os_str().is_empty() {
                continue;
            }
            for plugin in plugins_in(&dir) {
                add(plugin, &mut found);
            }
        }
    }
    Ok(found)
}

/// What a plugin's `describe` declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Description {
    pub name: String,
    pub archs: Vec<String>,
    /// One line for listings (empty when not given).
    pub description: String,
    pub capabilities: CapabilityTable,
}

#[derive(Deserialize)]
struct DescribeJson {
    protocol: u32,
    name: String,
    #[serde(default)]
    archs: Vec<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    capabilities: Vec<CapJson>,
    #[serde(default)]
    default: Option<String>,
    #[serde(default)]
    default_reason: Option<String>,
}

#[derive(Deserialize)]
struct CapJson {
    key: String,
    support: String,
    #[serde(default)]
    reason: String,
}

#[derive(Deserialize)]
struct EmitJson {
    #[serde(default)]
    diagnostics: Vec<BackendDiagnostic>,
}

/// How a plugin failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// It could not be started.
    Spawn(String),
    /// It exited with a status other than the protocol's, or was killed by a signal.
    Crashed { status: String },
    /// It did not finish within the timeout (its process group was killed).
    TimedOut { after: Duration },
    /// Its standard output is not the protocol's JSON.
    Garbage { problem: String, excerpt: String },
    /// It broke a rule of the protocol (version, name, capabilities, files written).
    Protocol(String),
}

/// A plugin's failure, naming the plugin, with the end of its standard error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginError {
    pub plugin: String,
    pub path: PathBuf,
    /// `describe` or `emit`.
    pub command: &'static str,
    pub failure: Box<Failure>,
    /// The last lines of its standard error (possibly empty).
    pub stderr: String,
}

impl fmt::Display for PluginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "backend plugin `{}` ({}) failed in `{}`: ",
            self.plugin,
            self.path.display(),
            self.command
        )?;
        match &*self.failure {
            Failure::Spawn(e) => write!(f, "cannot run it: {e}")?,
            Failure::Crashed { status } => write!(f, "it crashed ({status})")?,
            Failure::TimedOut { after } => write!(
                f,
                "it did not finish within {} s and was killed (`--backend-timeout SECS` allows more)",
                after.as_secs_f64()
            )?,
            Failure::Garbage { problem, excerpt } => {
                write!(f, "its output is not the protocol's JSON: {problem}")?;
                if !excerpt.is_empty() {
                    write!(f, "\n  output begins: {excerpt}")?;
                }
            }
            Failure::Protocol(e) => f.write_str(e)?,
        }
        if !self.stderr.is_empty() {
            write!(f, "\n  its standard error ends with:")?;
            for l in self.stderr.lines() {
                write!(f, "\n  | {l}")?;
            }
        }
        Ok(())
    }
}

/// What one run of a plugin produced.
struct RunOutput {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

enum RunError {
    Spawn(String),
    TimedOut { stderr: Vec<u8> },
}

fn read_capped(mut r: impl Read, cap: usize, keep_tail: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                if out.len() > cap {
                    if keep_tail {
                        let cut = out.len() - cap;
                        out.drain(..cut);
                    } else {
                        out.truncate(cap);
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    out
}

#[cfg(unix)]
fn kill_group(pgid: u32) {
    if let Ok(pgid) = i32::try_from(pgid) {
        // SAFETY: sends a signal to the process group the plugin was started in (its own,
        // `process_group(0)`); no memory is touched.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

#[cfg(not(unix))]
fn kill_group(_pgid: u32) {}

/// Spawns `cmd`, retrying for a moment while the executable is busy (`ETXTBSY`: it was just
/// written, and a process forked meanwhile still holds it open for writing).
fn spawn(cmd: &mut Command) -> std::io::Result<std::process::Child> {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            #[cfg(unix)]
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 50 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            r => return r,
        }
    }
}

/// Runs `path args...` in its own process group with `stdin` as standard input, and waits
/// at most `timeout` for it (and for its standard output and error to close). On expiry the
/// group is killed. Once the plugin exits, what is left of its group is killed too, so no
/// stray process can write into the output afterwards.
fn run(
    path: &Path,
    args: &[OsString],
    stdin: Stdio,
    timeout: Duration,
) -> Result<RunOutput, RunError> {
    let mut cmd = Command::new(path);
    cmd.args(args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("WSP_BACKEND_PROTOCOL", PROTOCOL.to_string());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let start = Instant::now();
    let mut child = spawn(&mut cmd).map_err(|e| RunError::Spawn(e.to_string()))?;
    let pid = child.id();
    let (tx_out, rx_out) = mpsc::channel();
    let (tx_err, rx_err) = mpsc::channel();
    if let Some(out) = child.stdout.take() {
        std::thread::spawn(move || {
            let _ = tx_out.send(read_capped(out, MAX_STDOUT, false));
        });
    }
    if let Some(err) = child.stderr.take() {
        std::thread::spawn(move || {
            let _ = tx_err.send(read_capped(err, MAX_STDERR, true));
        });
    }
    let deadline = start + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(_) => break None,
        }
        if Instant::now() >= deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let Some(status) = status else {
        kill_group(pid);
        let _ = child.kill();
        let _ = child.wait();
        let stderr = rx_err
            .recv_timeout(Duration::from_millis(500))
            .unwrap_or_default();
        return Err(RunError::TimedOut { stderr });
    };
    kill_group(pid);
    let left = deadline.saturating_duration_since(Instant::now()) + Duration::from_millis(100);
    let stdout = rx_out.recv_timeout(left);
    let left = deadline.saturating_duration_since(Instant::now()) + Duration::from_millis(100);
    let stderr = rx_err.recv_timeout(left).unwrap_or_default();
    match stdout {
        Ok(stdout) => Ok(RunOutput {
            status,
            stdout,
            stderr,
        }),
        Err(_) => Err(RunError::TimedOut { stderr }),
    }
}

fn tail_lines(bytes: &[u8], n: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let t = text.trim();
    let mut e: String = t.chars().take(120).collect();
    if t.chars().count() > 120 {
        e.push_str("...");
    }
    format!("{e:?}")
}

fn describe_status(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let name = match sig {
                libc::SIGSEGV => " (SIGSEGV)",
                libc::SIGABRT => " (SIGABRT)",
                libc::SIGKILL => " (SIGKILL)",
                libc::SIGTERM => " (SIGTERM)",
                libc::SIGBUS => " (SIGBUS)",
                libc::SIGFPE => " (SIGFPE)",
                libc::SIGILL => " (SIGILL)",
                _ => "",
            };
            return format!("killed by signal {sig}{name}");
        }
    }
    match status.code() {
        Some(c) => format!("exit status {c}"),
        None => "no exit status".to_string(),
    }
}

impl Plugin {
    fn error(&self, command: &'static str, failure: Failure, stderr: &[u8]) -> PluginError {
        PluginError {
            plugin: self.name.clone(),
            path: self.path.clone(),
            command,
            failure: Box::new(failure),
            stderr: tail_lines(stderr, 20),
        }
    }

    fn run(
        &self,
        command: &'static str,
        args: Vec<OsString>,
        stdin: Stdio,
        timeout: Duration,
    ) -> Result<RunOutput, PluginError> {
        run(&self.path, &args, stdin, timeout).map_err(|e| match e {
            RunError::Spawn(e) => self.error(command, Failure::Spawn(e), &[]),
            RunError::TimedOut { stderr } => {
                self.error(command, Failure::TimedOut { after: timeout }, &stderr)
            }
        })
    }

    /// Runs `describe` and checks what it declares.
    pub fn describe(&self, timeout: Duration) -> Result<Description, PluginError> {
        let out = self.run("describe", vec!["describe".into()], Stdio::null(), timeout)?;
        if !out.status.success() {
            let status = describe_status(out.status);
            return Err(self.error("describe", Failure::Crashed { status }, &out.stderr));
        }
        let d: DescribeJson = serde_json::from_slice(&out.stdout).map_err(|e| {
            self.error(
                "describe",
                Failure::Garbage {
                    problem: e.to_string(),
                    excerpt: excerpt(&out.stdout),
                },
                &out.stderr,
            )
        })?;
        let protocol = |m: String| self.error("describe", Failure::Protocol(m), &out.stderr);
        if d.protocol != PROTOCOL {
            return Err(protocol(format!(
                "it speaks protocol {}; this wsp speaks protocol {PROTOCOL}",
                d.protocol
            )));
        }
        if d.name != self.name {
            return Err(protocol(format!(
                "it calls itself `{}`, but its file name makes it `{}`",
                d.name, self.name
            )));
        }
        let support = |s: &str| {
            Support::from_name(s).ok_or_else(|| {
                protocol(format!(
                    "unknown support `{s}` (enforced, recorded, diagnosed or unsupported)"
                ))
            })
        };
        let default = match &d.default {
            Some(s) => support(s)?,
            None => Support::Unsupported,
        };
        let default_reason = d.default_reason.clone().unwrap_or_else(|| {
            format!("the `{}` backend does not declare this feature", self.name)
        });
        let mut entries = Vec::new();
        for c in &d.capabilities {
            entries.push((c.key.clone(), support(&c.support)?, c.reason.clone()));
        }
        let capabilities = CapabilityTable::declared(&self.name, default, &default_reason, entries)
            .map_err(protocol)?;
        Ok(Description {
            name: d.name,
            archs: d.archs,
            description: d.description,
            capabilities,
        })
    }

    /// Runs `emit` with the program's IR (`ir_json`) on standard input, writing into `out_dir`
    /// (an existing empty directory). Returns the diagnostics it reported: `Ok` when it
    /// emitted (warnings only), `Err(Ok(errors and warnings))` when it reported errors,
    /// `Err(Err(failure))` when it failed.
    pub fn emit(
        &self,
        ir_json: &[u8],
        opts: &EmitOptions,
        out_dir: &Path,
        scratch: &Path,
        timeout: Duration,
    ) -> Result<Vec<BackendDiagnostic>, Result<Vec<BackendDiagnostic>, PluginError>> {
        let spawn_err = |e: std::io::Error| {
            Err(self.error(
                "emit",
                Failure::Spawn(format!("cannot pass the program: {e}")),
                &[],
            ))
        };
        // Standard input from an unlinked file: the plugin may read as little as it likes
        // without a broken pipe on our side.
        let input = scratch.join(".program-ir.json");
        std::fs::write(&input, ir_json).map_err(spawn_err)?;
        let file = std::fs::File::open(&input);
        let _ = std::fs::remove_file(&input);
        let file = file.map_err(spawn_err)?;
        let mut args: Vec<OsString> = vec!["emit".into(), "--out-dir".into(), out_dir.into()];
        if let Some(a) = &opts.arch {
            args.push("--arch".into());
            args.push(a.into());
        }
        for (k, v) in &opts.options {
            args.push("--option".into());
            args.push(format!("{k}={v}").into());
        }
        let out = self
            .run("emit", args, Stdio::from(file), timeout)
            .map_err(Err)?;
        let code = out.status.code();
        if !matches!(code, Some(0) | Some(1)) {
            let status = describe_status(out.status);
            return Err(Err(self.error(
                "emit",
                Failure::Crashed { status },
                &out.stderr,
            )));
        }
        let parsed: EmitJson = serde_json::from_slice(&out.stdout).map_err(|e| {
            Err(self.error(
                "emit",
                Failure::Garbage {
                    problem: e.to_string(),
                    excerpt: excerpt(&out.stdout),
                },
                &out.stderr,
            ))
        })?;
        let has_error = parsed
            .diagnostics
            .iter()
            .any(|d| d.severity == crate::Severity::Error);
        match (code, has_error) {
            (Some(0), false) => Ok(parsed.diagnostics),
            (_, true) => Err(Ok(parsed.diagnostics)),
            _ => Err(Err(self.error(
                "emit",
                Failure::Protocol(
                    "it exited with status 1 but reported no error diagnostic".into(),
                ),
                &out.stderr,
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_names() {
        assert_eq!(plugin_name("wsp-backend-summary"), Some("summary"));
        assert_eq!(plugin_name("wsp-backend-my_npu-2"), Some("my_npu-2"));
        for bad in [
            "wsp-backend-",
            "wsp-backend-Sum",
            "wsp-backend-a.py",
            "wsp-backend-2x",
            "backend-x",
        ] {
            assert_eq!(plugin_name(bad), None, "{bad}");
        }
    }

    #[cfg(unix)]
    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[cfg(unix)]
    #[test]
    fn discovery_order_and_errors() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        script(a.path(), "wsp-backend-one", "exit 0");
        script(a.path(), "wsp-backend-Bad", "exit 0");
        std::fs::write(a.path().join("wsp-backend-noexec"), "").unwrap();
        let two = script(b.path(), "wsp-backend-two", "exit 0");
        script(b.path(), "wsp-backend-one", "exit 0");
        let path_env = std::env::join_paths([a.path(), b.path()]).unwrap();
        let found = discover(&[], Some(&path_env)).unwrap();
        let names: Vec<(&str, &Path)> = found
            .iter()
            .map(|p| (p.name.as_str(), p.path.parent().unwrap()))
            .collect();
        assert_eq!(names, [("one", a.path()), ("two", b.path())]);
        // An explicit path comes first.
        let found = discover(&[b.path().into()], Some(&path_env)).unwrap();
        assert_eq!(found[0].path.parent().unwrap(), b.path());
        let found = discover(std::slice::from_ref(&two), None).unwrap();
        assert_eq!(
            found,
            [Plugin {
                name: "two".into(),
                path: two
            }]
        );
        assert!(discover(&[a.path().join("missing")], None)
            .unwrap_err()
            .contains("no such file"));
        assert!(discover(&[a.path().join("wsp-backend-noexec")], None)
            .unwrap_err()
            .contains("not executable"));
        let other = script(a.path(), "tool", "exit 0");
        assert!(discover(&[other], None)
            .unwrap_err()
            .contains("not a backend plugin"));
    }

    #[cfg(unix)]
    #[test]
    fn describe_checks_the_declaration() {
        let d = tempfile::tempdir().unwrap();
        let ok = r#"{"protocol": 1, "name": "ok", "archs": ["x"], "default": "enforced",
            "capabilities": [{"key": "kernel.pipe", "support": "unsupported", "reason": "no pipes"}]}"#;
        let p = script(d.path(), "wsp-backend-ok", &format!("echo '{ok}'"));
        let plugin = Plugin {
            name: "ok".into(),
            path: p,
        };
        let desc = plugin.describe(Duration::from_secs(10)).unwrap();
        assert_eq!(desc.archs, ["x"]);
        assert_eq!(
            desc.capabilities.entry("kernel.pipe").unwrap().support,
            Support::Unsupported
        );
        assert_eq!(
            desc.capabilities.entry("csp.channel").unwrap().support,
            Support::Enforced
        );
        for (body, want) in [
            ("echo '{\"protocol\": 2, \"name\": \"x\"}'", "protocol 2"),
            ("echo '{\"protocol\": 1, \"name\": \"y\"}'", "calls itself `y`"),
            ("echo hello", "not the protocol's JSON"),
            ("echo oops >&2; exit 3", "exit status 3"),
            ("kill -SEGV $$", "SIGSEGV"),
            (
                "echo '{\"protocol\": 1, \"name\": \"x\", \"capabilities\": [{\"key\": \"k.q\", \"support\": \"enforced\"}]}'",
                "unknown capability key `k.q`",
            ),
        ] {
            let p = script(d.path(), "wsp-backend-x", body);
            let plugin = Plugin {
                name: "x".into(),
                path: p,
            };
            let e = plugin.describe(Duration::from_secs(10)).unwrap_err();
            let text = e.to_string();
            assert!(
                text.contains(want) && text.contains("backend plugin `x`"),
                "{body}: {text}"
            );
            if body.contains("oops") {
                assert!(text.contains("| oops"), "{text}");
            }
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_hanging_plugin_and_its_children_are_killed() {
        let d = tempfile::tempdir().unwrap();
        // The child keeps standard output open after the plugin is killed.
        let p = script(d.path(), "wsp-backend-hang", "sleep 30 &\nsleep 30");
        let plugin = Plugin {
            name: "hang".into(),
            path: p,
        };
        let start = Instant::now();
        let e = plugin.describe(Duration::from_millis(300)).unwrap_err();
        assert!(matches!(*e.failure, Failure::TimedOut { .. }), "{e}");
        assert!(start.elapsed() < Duration::from_secs(5));
    }
}
