//! The .wsp formatter.
