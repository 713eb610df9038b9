//! Orchestration, host launcher, CMake project and plan file (see the crate docs).
