//! Errors of a workload run and their places: the task call an error happened in, or the
//! declaration of the axis whose data is wrong.

use crate::workload::SrcSpan;
use std::fmt;
use wsp_vocab::codes;

/// An error of a workload run (E0810: task/view errors; E0811: deadlock).
#[derive(Clone, Debug, PartialEq)]
pub struct ExecError {
    pub code: &'static str,
    pub message: String,
    /// Where the error is, when the program says where that is written: the task call it
    /// happened in, or (`place`) the axis whose data is wrong.
    pub at: Option<SrcSpan>,
    pub place: Place,
}

/// What an [`ExecError`]'s location is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Place {
    /// The task call the error happened in.
    #[default]
    Task,
    /// The declaration of an axis whose data (a Ragged row's length, a Sparse row's
    /// positions or columns, a DenseDyn size) is wrong.
    Axis,
}

impl ExecError {
    /// An error of code `code` with no location yet.
    pub fn new(code: &'static str, message: impl Into<String>) -> ExecError {
        ExecError {
            code,
            message: message.into(),
            at: None,
            place: Place::Task,
        }
    }

    /// Places the error at `at`, the declaration of the axis whose data it is about, unless
    /// it has a place already.
    pub fn on_axis(mut self, at: &Option<SrcSpan>) -> ExecError {
        if self.at.is_none() && at.is_some() {
            self.at.clone_from(at);
            self.place = Place::Axis;
        }
        self
    }

    /// Places the error at `at` (the task call it happened in) unless it has a place already.
    pub fn within(mut self, at: &Option<SrcSpan>) -> ExecError {
        if self.at.is_none() {
            self.at.clone_from(at);
        }
        self
    }
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error[{}]: {}", self.code, self.message)
    }
}

impl std::error::Error for ExecError {}

pub(super) fn xerr(message: impl Into<String>) -> ExecError {
    ExecError::new(codes::E0810, message)
}
