//! The cpu_sim backend: runs Program IR with JIT kernels on the task-graph runtime.
