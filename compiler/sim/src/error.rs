//! A failed run: [`SimError`], and the errors the run makes of bad setups, schedules it cannot
//! run, limits and runtime failures.

use std::fmt;
use wsp_ir::exec;
use wsp_ir::workload::{Program, SrcSpan};
use wsp_runtime as rt;
use wsp_runtime::RuntimeError;
use wsp_vocab::codes;

/// A failed run. `code` is the diagnostic code (E08xx) where there is one.
#[derive(Clone, Debug, PartialEq)]
pub enum SimError {
    /// Bad data, params, schedule or arguments: nothing ran. `at` is the tensor declaration
    /// whose data or shape is wrong, when the error is about one.
    Setup {
        code: &'static str,
        message: String,
        at: Option<SrcSpan>,
    },
    /// A task, view or kernel failed during the run; `at` is the task call or (`place`) the
    /// axis whose data is wrong, when known.
    Exec {
        code: &'static str,
        message: String,
        at: Option<SrcSpan>,
        place: exec::Place,
    },
    /// The run deadlocked: the runtime's report, as text and (when the runtime made it) as
    /// the structure (for `--stats json`).
    Deadlock(String, Option<Box<rt::DeadlockReport>>),
    /// A kernel failed on a task (E0810); `at` is the kernel's declaration, when known.
    Kernel {
        message: String,
        at: Option<SrcSpan>,
    },
}

impl SimError {
    /// The message without the `error[CODE]: ` of its display.
    pub fn message(&self) -> &str {
        match self {
            SimError::Setup { message, .. }
            | SimError::Exec { message, .. }
            | SimError::Kernel { message, .. } => message,
            SimError::Deadlock(m, _) => m,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            SimError::Setup { code, .. } | SimError::Exec { code, .. } => code,
            SimError::Kernel { .. } => codes::E0810,
            SimError::Deadlock(..) => codes::E0811,
        }
    }
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Setup { code, message, .. } | SimError::Exec { code, message, .. } => {
                write!(f, "error[{code}]: {message}")
            }
            SimError::Kernel { message, .. } => write!(f, "error[E0810]: {message}"),
            SimError::Deadlock(m, _) => write!(f, "error[E0811]: {m}"),
        }
    }
}

impl std::error::Error for SimError {}

pub(crate) fn setup(message: impl Into<String>) -> SimError {
    SimError::Setup {
        code: codes::E0807,
        message: message.into(),
        at: None,
    }
}

/// The schedule (its selection, a directive or a key) cannot run on the simulator.
pub(crate) fn schedule_error(message: impl Into<String>) -> SimError {
    SimError::Setup {
        code: codes::E0814,
        message: message.into(),
        at: None,
    }
}

/// The run reached `--max-tasks` or `--max-cycles`.
fn limit_error(l: rt::RunLimit) -> SimError {
    SimError::Exec {
        code: codes::E0815,
        message: limit_message(l),
        at: None,
        place: exec::Place::Task,
    }
}

pub(crate) fn limit_message(l: rt::RunLimit) -> String {
    format!("stopped: {l}")
}

pub(crate) fn from_runtime(p: &Program, e: RuntimeError) -> SimError {
    match e {
        RuntimeError::Deadlock(r) => SimError::Deadlock(r.to_string(), Some(r)),
        RuntimeError::Limit(l) => limit_error(l),
        e @ RuntimeError::WindowFull { .. } => SimError::Exec {
            code: codes::E0816,
            message: e.to_string(),
            at: None,
            place: exec::Place::Task,
        },
        RuntimeError::Kernel { ref kernel, .. } => SimError::Kernel {
            at: p
                .kernels
                .iter()
                .find(|k| &k.name == kernel)
                .and_then(|k| k.at.clone()),
            message: e.to_string(),
        },
        other => SimError::Exec {
            code: codes::E0810,
            message: other.to_string(),
            at: None,
            place: exec::Place::Task,
        },
    }
}
