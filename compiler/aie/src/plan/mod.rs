//! The static placement of a program on the AIE-ML array: every task, the compute tile it runs
//! on, the object FIFOs between the shim DMA, the tiles and each other, the shim transfers of
//! the host's runtime sequence (with the waits that order them through DDR) and each core's
//! program. The MLIR design ([`crate::mlir`]) and the CPU stand-in ([`crate::cpu`]) are both
//! printed from one [`Plan`], so they describe the same dataflow.
//!
//! AIE has no run-time scheduler: the workload is expanded at compile time by the reference
//! workload interpreter ([`wsp_ir::exec`]) with a backend that records tasks instead of running
//! them. Anything that would make the expansion depend on tensor data (a `when` on data, a
//! Ragged or Sparse axis, a coordinate read from a tensor) is refused before that.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use wsp_arch::capabilities::{self, Backend as CapBackend, Support};
use wsp_backend::{BackendDiagnostic, Severity};
use wsp_ir::dtype::{DType, ScalarValue};
use wsp_ir::exec::{self, ProcAction, TaskBackend, TaskInstance, TaskRecord, TaskValue};
use wsp_ir::kernel::{Direction, Kernel, Op, ParamKind, Stmt};
use wsp_ir::tensor::{Data, HostTensor};
use wsp_ir::workload::*;

use crate::kernel_cc;

mod checks;
mod expand;
mod kernels;

use checks::*;
use expand::*;
pub use kernels::kernel_io;
use kernels::*;

/// Compute tiles the design may use: two per column of the four-column array, so that each
/// tile's input and output object FIFO has a shim DMA channel of its own column (a shim tile
/// has two MM2S and two S2MM channels).
pub const MAX_TILES: usize = 8;
/// Columns of the `npu1_4col` device.
pub const COLUMNS: usize = 4;
/// The first compute row (row 0: shim tiles, row 1: memory tiles).
pub const FIRST_COMPUTE_ROW: usize = 2;
/// DMA channels of a compute tile in each direction (S2MM in, MM2S out).
pub const TILE_DMA_CHANNELS: usize = 2;
/// Bytes of data memory reserved for a core's stack (mlir-aie's default stack size).
pub const STACK_BYTES: u64 = 1024;
/// The most tasks one design may unroll into static core programs and shim transfers.
pub const MAX_TASKS: usize = 20_000;

/// One end of an object FIFO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The shim tile of this column (DDR through the shim DMA).
    Shim(usize),
    /// Compute tile `i` of [`Plan::tiles`].
    Tile(usize),
}

/// What an object FIFO carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FifoKind {
    /// The packed input tiles of one task per element (shim → tile).
    Input,
    /// The packed output tiles of one task per element (tile → shim).
    Output,
    /// Tokens of a CSP channel (tile → tile): one task's coordinates per element.
    Channel(ChannelId),
}

#[derive(Clone, Debug)]
pub struct Fifo {
    pub name: String,
    pub kind: FifoKind,
    pub producer: End,
    pub consumer: End,
    pub depth: u32,
    /// Bytes of one element (a `memref<N x i8>`; tokens: `memref<N x i32>`).
    pub elem_bytes: u64,
}

/// A compute tile.
#[derive(Clone, Debug)]
pub struct TilePlan {
    pub col: usize,
    pub row: usize,
    /// The process instance it runs (CSP), if any.
    pub process: Option<String>,
    pub input: Option<usize>,
    pub output: Option<usize>,
    pub kernels: BTreeSet<KernelId>,
    pub program: Vec<Step>,
    /// Data memory the tile's buffers take (FIFO elements, kernel locals, stack).
    pub memory: u64,
}

/// One step of a core's program.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Runs task `i` of [`Plan::tasks`]: acquire the input and output elements, call the
    /// kernel, release them.
    Task(usize),
    /// Writes a token into FIFO `fifo`.
    Send { fifo: usize, token: Vec<i64> },
    /// Takes a token from FIFO `fifo`.
    Recv { fifo: usize },
}

/// A strided block of a global tensor, in elements: `offset + i·strides[0] + j·strides[1]`
/// for `i < sizes[0]`, `j < sizes[1]` (row-major stream order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub tensor: TensorId,
    pub offset: u64,
    pub sizes: [u64; 2],
    pub strides: [u64; 2],
}

impl Segment {
    pub fn elements(&self) -> u64 {
        self.sizes[0] * self.sizes[1]
    }
    /// The flat element interval it touches (inclusive start, exclusive end).
    fn span(&self) -> (u64, u64) {
        if self.elements() == 0 {
            return (self.offset, self.offset);
        }
        let last = self.offset
            + (self.sizes[0] - 1) * self.strides[0]
            + (self.sizes[1] - 1) * self.strides[1];
        (self.offset, last + 1)
    }
}

/// An operation of the host's runtime sequence.
#[derive(Clone, Debug, PartialEq)]
pub enum HostOp {
    /// The shim DMA fills one element of input FIFO `fifo` from these segments, in order.
    Fill { fifo: usize, segments: Vec<Segment> },
    /// The shim DMA drains one element of output FIFO `fifo` into these segments, in order.
    Drain { fifo: usize, segments: Vec<Segment> },
    /// Waits until every transfer issued so far on FIFO `fifo` has completed.
    Wait { fifo: usize },
}

/// A tile parameter of a task.
#[derive(Clone, Debug)]
pub struct TileArgPlan {
    pub param: usize,
    pub valid: [u32; 2],
    pub segment: Segment,
}

/// A task, placed.
#[derive(Clone, Debug)]
pub struct TaskPlan {
    pub kernel: KernelId,
    pub tile: usize,
    pub coords: Vec<i64>,
    /// Tile parameters, in parameter order.
    pub tiles: Vec<TileArgPlan>,
    /// Scalar parameters, in parameter order: their dtype and value.
    pub scalars: Vec<(DType, ScalarValue)>,
}

/// How a kernel's tile parameters travel.
#[derive(Clone, Debug)]
pub struct KernelIo {
    /// Parameters whose current contents the kernel needs (in, inout, and out parameters
    /// that the kernel may not overwrite entirely), in parameter order.
    pub reads: Vec<usize>,
    /// Parameters the kernel writes (out, inout), in parameter order.
    pub writes: Vec<usize>,
    /// Bytes of data memory the kernel's own buffers take.
    pub locals: u64,
    /// Bytes of the packed `reads` and `writes` tiles at their static shapes (each 4-byte
    /// aligned): the kernel's input and output element sizes.
    pub in_bytes: u64,
    pub out_bytes: u64,
}

/// A global tensor of the design.
#[derive(Clone, Debug)]
pub struct TensorPlan {
    pub name: String,
    pub kind: TensorKind,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub init: Option<Init>,
}

impl TensorPlan {
    pub fn elements(&self) -> u64 {
        self.shape.iter().map(|d| *d as u64).product()
    }
}

/// The whole placement.
#[derive(Clone, Debug)]
pub struct Plan {
    pub workload: String,
    pub tensors: Vec<TensorPlan>,
    /// Per kernel of the program (`None`: not called).
    pub io: Vec<Option<KernelIo>>,
    pub tiles: Vec<TilePlan>,
    pub fifos: Vec<Fifo>,
    pub tasks: Vec<TaskPlan>,
    pub host: Vec<HostOp>,
    /// The data memory of one compute tile (the arch model's `DM`).
    pub tile_memory: u64,
}

type Diags = Vec<BackendDiagnostic>;

fn error(msg: impl Into<String>, at: Option<SrcSpan>, help: &str) -> BackendDiagnostic {
    BackendDiagnostic::error(msg, at).with_help(help)
}

fn warning(msg: impl Into<String>, at: Option<SrcSpan>) -> BackendDiagnostic {
    BackendDiagnostic::warning(msg, at)
}

// ------------------------------------------------------------------------ the plan

fn segment_of(v: &exec::TileView) -> Segment {
    Segment {
        tensor: v.tensor,
        offset: v.origin as u64,
        sizes: [u64::from(v.valid[0]), u64::from(v.valid[1])],
        strides: [v.row_stride as u64, v.col_stride as u64],
    }
}

fn overlaps(a: &Segment, b: &Segment) -> bool {
    if a.tensor != b.tensor {
        return false;
    }
    let (x0, x1) = a.span();
    let (y0, y1) = b.span();
    x0 < y1 && y0 < x1
}

fn align4(n: u64) -> u64 {
    n.div_ceil(4) * 4
}

/// Builds the plan, or the diagnostics that prevent it. Warnings go to `warnings`.
pub fn plan(
    program: &Program,
    tile_memory: u64,
    schedule: Option<&str>,
    warnings: &mut Diags,
) -> Result<Plan, Diags> {
    let mut diags = Diags::new();
    let (sched, w) = program.select_run(schedule).map_err(|m| {
        vec![error(
            m,
            None,
            "name the workload with `schedule main = ...`",
        )]
    })?;
    let wname = program
        .workloads
        .get(w.index())
        .map(|x| x.name.clone())
        .unwrap_or_default();

    let mut sc = StaticCheck {
        p: program,
        diags: Vec::new(),
        seen_workloads: BTreeSet::new(),
    };
    sc.workload(w);
    diags.append(&mut sc.diags);
    let dispatch = directives(sched, &mut diags);
    if let Err(e) = check_channel_dag(program, w) {
        diags.push(e);
    }
    if diags.iter().any(|d| d.severity == Severity::Error) {
        let (errs, warns): (Diags, Diags) = diags
            .into_iter()
            .partition(|d| d.severity == Severity::Error);
        warnings.extend(warns);
        return Err(errs);
    }
    warnings.append(&mut diags);

    // Shapes (params at their defaults; the design is specialised to them).
    let params: Vec<ScalarValue> = program.params.iter().map(|p| p.default).collect();
    let mut tensors = Vec::new();
    let mut host = Vec::new();
    for decl in &program.tensors {
        let shape = wsp_ir::data::tensor_shape(decl, &params).map_err(|e| {
            vec![error(
                e.message.clone(),
                e.at.clone(),
                "fix the tensor's shape",
            )]
        })?;
        host.push(HostTensor {
            dtype: decl.dtype,
            shape: shape.clone(),
            data: Data::zeros(decl.dtype, 0),
        });
        tensors.push(TensorPlan {
            name: decl.name.clone(),
            kind: decl.kind,
            dtype: decl.dtype,
            shape,
            init: decl.init.clone(),
        });
    }

    let mut rec = Recorder::default();
    if let Err(e) = exec::run_workload_on(program, w, &params, &mut host, &mut rec) {
        let msg = if rec.too_many {
            format!(
                "the AIE target unrolls every task into static core programs and shim transfers, and workload `{wname}` has more than {MAX_TASKS}"
            )
        } else if rec.data_read {
            format!(
                "the AIE target cannot expand workload `{wname}` at compile time: {}",
                e.message
            )
        } else {
            format!(
                "the AIE target could not expand workload `{wname}`: {}",
                e.message
            )
        };
        return Err(vec![error(
            msg,
            e.at.clone(),
            "run it with `wsp run`, or make the iteration space static and smaller",
        )]);
    }

    // Kernels: io, warnings, bodies.
    let mut io: Vec<Option<KernelIo>> = vec![None; program.kernels.len()];
    let called: BTreeSet<KernelId> = rec.tasks.iter().map(|t| t.kernel).collect();
    for kid in &called {
        let Some(k) = program.kernel(*kid) else {
            continue;
        };
        // An extern kernel's own `aie:` source replaces the body's C++.
        if k.externs.iter().any(|e| e.target == "aie") {
            io[kid.index()] = Some(kernel_io(k));
            continue;
        }
        if k.body.is_none() {
            diags.push(error(
                format!(
                    "kernel `{}` has no `.wsp` body and no `aie:` source, and the AIE target compiles kernels from one of them",
                    k.name
                ),
                k.at.clone(),
                "give the extern kernel `aie: \"k.cc\"` (its C++ for the core) or `sim: k_ref` (a `.wsp` kernel with the same parameters)",
            ));
            continue;
        }
        if let Err(m) = kernel_cc::check_kernel(k) {
            diags.push(error(
                format!(
                    "kernel `{}` cannot be compiled for an AIE core: {m}",
                    k.name
                ),
                k.at.clone(),
                "run it with `wsp run`",
            ));
            continue;
        }
        kernel_warnings(k, warnings);
        io[kid.index()] = Some(kernel_io(k));
    }
    // One C symbol and one file per kernel.
    let mut names: BTreeMap<String, &str> = BTreeMap::new();
    for kid in &called {
        if let Some(k) = program.kernel(*kid) {
            let c = kernel_cc::sanitize(&k.name);
            if let Some(other) = names.insert(c.clone(), &k.name) {
                diags.push(error(
                    format!(
                        "kernels `{other}` and `{}` would both be compiled as the C function `wsp_{c}`",
                        k.name
                    ),
                    k.at.clone(),
                    "rename one of the kernels",
                ));
            }
        }
    }
    if !diags.is_empty() {
        return Err(diags);
    }

    // Tiles.
    let mut tiles: Vec<TilePlan> = Vec::new();
    let connect = !rec.threads.is_empty();
    let ntiles = if connect {
        if rec.threads.len() > MAX_TILES {
            return Err(vec![error(
                format!(
                    "the processes of `{wname}` have {} instances, and each takes a compute tile of its own: at most {MAX_TILES} can be fed by the shim DMA",
                    rec.threads.len()
                ),
                None,
                "replicate fewer processes",
            )]);
        }
        rec.threads.len()
    } else {
        match &dispatch {
            Dispatch::RoundRobin(n) => (*n).min(rec.tasks.len().max(1)),
            Dispatch::Key { .. } => MAX_TILES,
        }
    };
    for i in 0..ntiles {
        tiles.push(TilePlan {
            col: i % COLUMNS,
            row: FIRST_COMPUTE_ROW + i / COLUMNS,
            process: if connect {
                rec.threads.get(i).cloned()
            } else {
                None
            },
            input: None,
            output: None,
            kernels: BTreeSet::new(),
            program: Vec::new(),
            memory: 0,
        });
    }

    // Tasks.
    let mut tasks = Vec::new();
    for (i, t) in rec.tasks.iter().enumerate() {
        let tile = match (t.thread, &dispatch) {
            (Some(th), _) => th,
            (None, Dispatch::RoundRobin(_)) => i % ntiles.max(1),
            (None, Dispatch::Key { hash, key }) => match eval_key(key, &t.axes) {
                // A key the task's coordinates do not determine: tile 0 (as the matrix says).
                None => 0,
                Some(k) if *hash => (mix(k) % ntiles as u64) as usize,
                Some(k) => k.rem_euclid(ntiles as i64) as usize,
            },
        };
        let Some(k) = program.kernel(t.kernel) else {
            continue;
        };
        let mut tl = Vec::new();
        let mut scalars = Vec::new();
        for (pi, (p, a)) in k.params.iter().zip(&t.args).enumerate() {
            match (&p.kind, a) {
                (ParamKind::Tile { .. }, TaskValue::Tile(v)) => tl.push(TileArgPlan {
                    param: pi,
                    valid: v.valid,
                    segment: segment_of(v),
                }),
                (ParamKind::Scalar { dtype, .. }, TaskValue::Scalar(s)) => {
                    scalars.push((*dtype, *s))
                }
                _ => {}
            }
        }
        tiles[tile].kernels.insert(t.kernel);
        if t.thread.is_none() {
            tiles[tile].program.push(Step::Task(i));
        }
        tasks.push(TaskPlan {
            kernel: t.kernel,
            tile,
            coords: t.coords.clone(),
            tiles: tl,
            scalars,
        });
    }

    // FIFOs: each tile's input and output, then the channels' token FIFOs.
    let mut fifos: Vec<Fifo> = Vec::new();
    for (ti, tile) in tiles.iter_mut().enumerate() {
        let (mut inb, mut outb) = (0u64, 0u64);
        for k in &tile.kernels {
            if let Some(kio) = &io[k.index()] {
                inb = inb.max(kio.in_bytes);
                outb = outb.max(kio.out_bytes);
            }
        }
        if inb > 0 {
            tile.input = Some(fifos.len());
            fifos.push(Fifo {
                name: format!("in_{}_{}", tile.col, tile.row),
                kind: FifoKind::Input,
                producer: End::Shim(tile.col),
                consumer: End::Tile(ti),
                depth: 2,
                elem_bytes: inb,
            });
        }
        if outb > 0 {
            tile.output = Some(fifos.len());
            fifos.push(Fifo {
                name: format!("out_{}_{}", tile.col, tile.row),
                kind: FifoKind::Output,
                producer: End::Tile(ti),
                consumer: End::Shim(tile.col),
                depth: 2,
                elem_bytes: outb,
            });
        }
    }
    // Token FIFOs: one per (channel, sender, receiver) pair that exchanged tokens.
    let mut token_fifo: BTreeMap<(u32, usize, usize), usize> = BTreeMap::new();
    for (th, prog) in rec.programs.iter().enumerate() {
        for st in prog {
            if let RStep::Send { channel, token, id } = st {
                let Some(&(_, Some(to))) = rec.sends.get(*id) else {
                    continue;
                };
                let key = (channel.0, th, to);
                if let std::collections::btree_map::Entry::Vacant(slot) = token_fifo.entry(key) {
                    let Some(ch) = program.channels.get(channel.index()) else {
                        continue;
                    };
                    if ch.depth == 0 {
                        warnings.push(
                            warning(
                                format!(
                                    "channel `{}`: depth-0 (rendezvous) channels on AIE: {}",
                                    ch.name,
                                    capabilities::support(CapBackend::Aie, "csp.rendezvous")
                                        .map_or("", |e| e.reason)
                                ),
                                None,
                            )
                            .with_capability("csp.rendezvous"),
                        );
                    }
                    slot.insert(fifos.len());
                    fifos.push(Fifo {
                        name: format!("ch_{}_{}_{}", ch.name, th, to),
                        kind: FifoKind::Channel(*channel),
                        producer: End::Tile(th),
                        consumer: End::Tile(to),
                        depth: ch.depth.max(1),
                        elem_bytes: 4 * token.len().max(1) as u64,
                    });
                }
            }
        }
    }
    // Process steps join the tasks already dealt to their tiles (tasks outside the processes,
    // e.g. of a `sequential` around the `connect`) in task order: a core must take its input
    // elements in the order the host fills them, which is task order.
    for (th, prog) in rec.programs.iter().enumerate() {
        let dealt = std::mem::take(&mut tiles[th].program);
        let mut dealt = dealt.into_iter().peekable();
        for st in prog {
            if let RStep::Task(i) = st {
                while let Some(Step::Task(j)) = dealt.peek() {
                    if j > i {
                        break;
                    }
                    tiles[th].program.push(Step::Task(*j));
                    dealt.next();
                }
            }
            let step = match st {
                RStep::Task(i) => Step::Task(*i),
                RStep::Send { channel, token, id } => {
                    let Some(&(_, Some(to))) = rec.sends.get(*id) else {
                        continue;
                    };
                    let Some(&f) = token_fifo.get(&(channel.0, th, to)) else {
                        continue;
                    };
                    Step::Send {
                        fifo: f,
                        token: token.clone(),
                    }
                }
                RStep::Recv { channel, id } => {
                    let Some(&(from, _)) = rec.sends.get(*id) else {
                        continue;
                    };
                    let Some(&f) = token_fifo.get(&(channel.0, from, th)) else {
                        continue;
                    };
                    Step::Recv { fifo: f }
                }
            };
            tiles[th].program.push(step);
        }
        tiles[th].program.extend(dealt);
    }
    // Tokens travel as i32 words.
    if rec.programs.iter().flatten().any(|st| {
        matches!(st, RStep::Send { token, .. } if token.iter().any(|v| i32::try_from(*v).is_err()))
    }) {
        return Err(vec![error(
            format!("a channel of `{wname}` carries a coordinate outside the 32-bit range of an AIE token word"),
            None,
            "send smaller coordinates",
        )]);
    }
    // Sends whose token nobody received: the channel keeps them (no FIFO can).
    if rec.sends.iter().any(|s| s.1.is_none()) {
        return Err(vec![error(
            format!("a channel of `{wname}` ends the run holding tokens no process receives; an object FIFO needs a consumer for every element"),
            None,
            "consume every token that is sent",
        )]);
    }
    for tok in fifos
        .iter()
        .filter(|f| matches!(f.kind, FifoKind::Channel(_)))
    {
        if tok.elem_bytes > 4 * 64 {
            return Err(vec![error(
                format!(
                    "channel FIFO `{}` carries tokens of more than 64 coordinates",
                    tok.name
                ),
                None,
                "send fewer values",
            )]);
        }
    }
    for task in &tasks {
        for a in &task.tiles {
            if a.segment.strides[1] != 1 && a.segment.sizes[1] > 1 {
                // The shim DMA's innermost dimension is contiguous.
                let k = &program.kernels[task.kernel.index()];
                return Err(vec![error(
                    format!(
                        "kernel `{}`: the view of tensor `{}` for parameter `{}` is not contiguous along the tile's columns (stride {}), and the shim DMA moves contiguous innermost runs",
                        k.name,
                        program.tensors[a.segment.tensor.index()].name,
                        k.params[a.param].name,
                        a.segment.strides[1]
                    ),
                    k.at.clone(),
                    "view the tensor so that the tile's columns are its last dimension",
                )]);
            }
            let d = program.tensors[a.segment.tensor.index()].dtype;
            let bytes = a.segment.elements() * d.size_bytes() as u64;
            if !bytes.is_multiple_of(4) {
                let k = &program.kernels[task.kernel.index()];
                return Err(vec![error(
                    format!(
                        "kernel `{}`: a tile of parameter `{}` moves {bytes} bytes, and the shim DMA moves whole 32-bit words",
                        k.name, k.params[a.param].name
                    ),
                    k.at.clone(),
                    "use tiles whose byte size is a multiple of 4",
                )]);
            }
        }
    }

    // DMA channels per tile, and data memory (depth 2 where it fits, else 1).
    let mut errs = Diags::new();
    for (ti, tile) in tiles.iter_mut().enumerate() {
        let ins = fifos.iter().filter(|f| f.consumer == End::Tile(ti)).count();
        let outs = fifos.iter().filter(|f| f.producer == End::Tile(ti)).count();
        if ins > TILE_DMA_CHANNELS || outs > TILE_DMA_CHANNELS {
            errs.push(error(
                format!(
                    "compute tile ({}, {}){} needs {ins} incoming and {outs} outgoing object FIFOs, and a compute tile has {TILE_DMA_CHANNELS} DMA channels each way",
                    tile.col,
                    tile.row,
                    tile.process.as_ref().map(|p| format!(" (process `{p}`)")).unwrap_or_default()
                ),
                None,
                "give each process at most one input and one output channel",
            ));
            continue;
        }
        let locals: u64 = tile
            .kernels
            .iter()
            .filter_map(|k| io[k.index()].as_ref().map(|x| x.locals))
            .sum();
        let tokens: u64 = fifos
            .iter()
            .filter(|f| matches!(f.kind, FifoKind::Channel(_)))
            .filter(|f| f.producer == End::Tile(ti) || f.consumer == End::Tile(ti))
            .map(|f| u64::from(f.depth) * f.elem_bytes)
            .sum();
        let data: Vec<usize> = [tile.input, tile.output].into_iter().flatten().collect();
        let data_bytes: u64 = data.iter().map(|f| fifos[*f].elem_bytes).sum();
        let fixed = locals + tokens + STACK_BYTES;
        let need = |depth: u64| fixed + depth * data_bytes;
        let depth = if need(2) <= tile_memory { 2 } else { 1 };
        if need(depth) > tile_memory {
            let biggest = tile
                .kernels
                .iter()
                .max_by_key(|k| io[k.index()].as_ref().map_or(0, |x| x.locals))
                .and_then(|k| program.kernel(*k));
            errs.push(error(
                format!(
                    "compute tile ({}, {}) needs {} bytes of data memory (object FIFO elements {data_bytes} single-buffered, kernel buffers {locals}, tokens {tokens}, stack {STACK_BYTES}), and it has {tile_memory}{}",
                    tile.col,
                    tile.row,
                    need(depth),
                    biggest
                        .map(|k| format!("; the largest kernel on it is `{}`", k.name))
                        .unwrap_or_default()
                ),
                biggest.and_then(|k| k.at.clone()),
                "use smaller tiles (split the view into more tasks) so that a task's tiles and the kernel's intermediates fit the core's data memory",
            ));
            continue;
        }
        for f in data {
            fifos[f].depth = depth as u32;
        }
        tile.memory = need(depth);
    }
    if !errs.is_empty() {
        return Err(errs);
    }

    let host_ops = host_sequence(&tasks, &tiles, &io, &fifos);
    Ok(Plan {
        workload: wname,
        tensors,
        io,
        tiles,
        fifos,
        tasks,
        host: host_ops,
        tile_memory,
    })
}

/// The runtime sequence: per task in generation order, fill its input element and drain its
/// output element; a wait precedes any transfer that could overtake an earlier one on another
/// FIFO touching the same elements (read after write, write after read, write after write).
fn host_sequence(
    tasks: &[TaskPlan],
    tiles: &[TilePlan],
    io: &[Option<KernelIo>],
    fifos: &[Fifo],
) -> Vec<HostOp> {
    let mut ops = Vec::new();
    // Issued transfers not yet waited for: (fifo, task, segment, is_write).
    let mut pending: Vec<(usize, usize, Segment, bool)> = Vec::new();
    let wait =
        |fifo: usize, ops: &mut Vec<HostOp>, pending: &mut Vec<(usize, usize, Segment, bool)>| {
            ops.push(HostOp::Wait { fifo });
            pending.retain(|p| p.0 != fifo);
        };
    for (ti, t) in tasks.iter().enumerate() {
        let Some(kio) = io.get(t.kernel.index()).and_then(Option::as_ref) else {
            continue;
        };
        let tile = &tiles[t.tile];
        let segs = |params: &[usize]| -> Vec<Segment> {
            t.tiles
                .iter()
                .filter(|a| params.contains(&a.param))
                .map(|a| a.segment.clone())
                .collect()
        };
        let reads = segs(&kio.reads);
        let writes = segs(&kio.writes);
        if let (Some(f), false) = (tile.input, reads.is_empty()) {
            loop {
                let hit = pending
                    .iter()
                    .find(|p| p.3 && p.0 != f && reads.iter().any(|s| overlaps(s, &p.2)))
                    .map(|p| p.0);
                match hit {
                    Some(g) => wait(g, &mut ops, &mut pending),
                    None => break,
                }
            }
            for s in &reads {
                pending.push((f, ti, s.clone(), false));
            }
            ops.push(HostOp::Fill {
                fifo: f,
                segments: reads,
            });
        }
        if let (Some(f), false) = (tile.output, writes.is_empty()) {
            loop {
                let hit = pending
                    .iter()
                    .find(|p| p.0 != f && p.1 != ti && writes.iter().any(|s| overlaps(s, &p.2)))
                    .map(|p| p.0);
                match hit {
                    Some(g) => wait(g, &mut ops, &mut pending),
                    None => break,
                }
            }
            for s in &writes {
                pending.push((f, ti, s.clone(), true));
            }
            ops.push(HostOp::Drain {
                fifo: f,
                segments: writes,
            });
        }
    }
    // The host returns when every output has landed.
    for (i, f) in fifos.iter().enumerate() {
        if f.kind == FifoKind::Output {
            ops.push(HostOp::Wait { fifo: i });
        }
    }
    ops
}

/// The stream graph of a `connect` (processes joined by the channels they produce and
/// consume) must be acyclic: an object FIFO design has no back-pressure-free cycles.
fn check_channel_dag(p: &Program, w: WorkloadId) -> Result<(), BackendDiagnostic> {
    let mut procs = BTreeSet::new();
    collect_connects(p, w, &mut procs, &mut BTreeSet::new());
    let procs: Vec<usize> = procs.into_iter().collect();
    // Edge a → b when a produces a channel b consumes.
    let edge = |a: usize, b: usize| -> Option<ChannelId> {
        let (pa, pb) = (p.processes.get(a)?, p.processes.get(b)?);
        pa.produces
            .iter()
            .find(|c| pb.consumes.contains(c))
            .copied()
    };
    // Depth-first search for a cycle.
    let n = procs.len();
    let mut color = vec![0u8; n];
    fn dfs(
        i: usize,
        procs: &[usize],
        color: &mut [u8],
        path: &mut Vec<usize>,
        edge: &dyn Fn(usize, usize) -> Option<ChannelId>,
    ) -> Option<Vec<usize>> {
        color[i] = 1;
        path.push(i);
        for j in 0..procs.len() {
            if edge(procs[i], procs[j]).is_some() {
                if color[j] == 1 {
                    let start = path.iter().position(|x| *x == j).unwrap_or(0);
                    let mut cyc = path[start..].to_vec();
                    cyc.push(j);
                    return Some(cyc);
                }
                if color[j] == 0 {
                    if let Some(c) = dfs(j, procs, color, path, edge) {
                        return Some(c);
                    }
                }
            }
        }
        path.pop();
        color[i] = 2;
        None
    }
    for i in 0..n {
        if color[i] == 0 {
            if let Some(cyc) = dfs(i, &procs, &mut color, &mut Vec::new(), &edge) {
                let names: Vec<String> = cyc
                    .iter()
                    .map(|x| p.processes[procs[*x]].name.clone())
                    .collect();
                return Err(error(
                    format!(
                        "the stream graph is not a DAG: the processes {} form a cycle through their channels, and the AIE target places only acyclic object FIFO graphs",
                        names.join(" → ")
                    ),
                    None,
                    "break the cycle (e.g. send results forward to a new process instead of back)",
                ));
            }
        }
    }
    Ok(())
}

fn collect_connects(
    p: &Program,
    w: WorkloadId,
    out: &mut BTreeSet<usize>,
    seen: &mut BTreeSet<usize>,
) {
    if !seen.insert(w.index()) {
        return;
    }
    let Some(wl) = p.workloads.get(w.index()) else {
        return;
    };
    match &wl.body {
        WorkloadBody::Connect { processes } => {
            out.extend(processes.iter().map(|i| i.process.index()));
        }
        WorkloadBody::Sequential { parts } | WorkloadBody::Combine { parts } => {
            for x in parts {
                collect_connects(p, *x, out, seen);
            }
        }
        WorkloadBody::Block { stmts } => {
            let mut v = Vec::new();
            wsp_ir::workload::walk_stmts(stmts, &mut |s| {
                if let WStmt::Run { workload } = s {
                    v.push(*workload);
                }
            });
            for x in v {
                collect_connects(p, x, out, seen);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(tensor: u32, offset: u64, rows: u64, cols: u64, stride: u64) -> Segment {
        Segment {
            tensor: TensorId(tensor),
            offset,
            sizes: [rows, cols],
            strides: [stride, 1],
        }
    }

    #[test]
    fn overlap_is_by_tensor_and_element_range() {
        let a = seg(0, 0, 2, 4, 8); // elements 0..12
        assert!(overlaps(&a, &seg(0, 11, 1, 1, 1)));
        assert!(!overlaps(&a, &seg(0, 12, 1, 4, 4)));
        assert!(!overlaps(&a, &seg(1, 0, 2, 4, 8)));
        assert!(
            !overlaps(&a, &seg(0, 0, 0, 4, 8)),
            "an empty segment touches nothing"
        );
    }

    fn task(kernel: u32, tile: usize, segs: Vec<Segment>) -> TaskPlan {
        TaskPlan {
            kernel: KernelId(kernel),
            tile,
            coords: Vec::new(),
            tiles: segs
                .into_iter()
                .enumerate()
                .map(|(i, s)| TileArgPlan {
                    param: i,
                    valid: [s.sizes[0] as u32, s.sizes[1] as u32],
                    segment: s,
                })
                .collect(),
            scalars: Vec::new(),
        }
    }

    #[test]
    fn the_host_waits_only_where_a_transfer_could_overtake_another() {
        // One kernel: param 0 read, param 1 written. Two tiles, each with an input (0, 2) and
        // an output (1, 3) FIFO.
        let io = vec![Some(KernelIo {
            reads: vec![0],
            writes: vec![1],
            locals: 0,
            in_bytes: 16,
            out_bytes: 16,
        })];
        let tile = |i: usize| TilePlan {
            col: i,
            row: 2,
            process: None,
            input: Some(2 * i),
            output: Some(2 * i + 1),
            kernels: BTreeSet::new(),
            program: Vec::new(),
            memory: 0,
        };
        let fifo = |kind| Fifo {
            name: String::new(),
            kind,
            producer: End::Shim(0),
            consumer: End::Shim(0),
            depth: 2,
            elem_bytes: 16,
        };
        let fifos = vec![
            fifo(FifoKind::Input),
            fifo(FifoKind::Output),
            fifo(FifoKind::Input),
            fifo(FifoKind::Output),
        ];
        let tiles = vec![tile(0), tile(1)];
        // t0 on tile 0: X[0..4] -> T[0..4]; t1 on tile 1: T[0..4] -> Y[0..4] (reads what t0
        // wrote); t2 on tile 1: X[4..8] -> Y[4..8] (independent).
        let tasks = vec![
            task(0, 0, vec![seg(0, 0, 1, 4, 4), seg(1, 0, 1, 4, 4)]),
            task(0, 1, vec![seg(1, 0, 1, 4, 4), seg(2, 0, 1, 4, 4)]),
            task(0, 1, vec![seg(0, 4, 1, 4, 4), seg(2, 4, 1, 4, 4)]),
        ];
        let ops = host_sequence(&tasks, &tiles, &io, &fifos);
        let kinds: Vec<String> = ops
            .iter()
            .map(|o| match o {
                HostOp::Fill { fifo, .. } => format!("fill{fifo}"),
                HostOp::Drain { fifo, .. } => format!("drain{fifo}"),
                HostOp::Wait { fifo } => format!("wait{fifo}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "fill0", "drain1", // t0
                "wait1", "fill2", "drain3", // t1 waits for t0's T to land
                "fill2", "drain3", // t2: nothing to wait for
                "wait1", "wait3", // the end
            ]
        );
    }
}
