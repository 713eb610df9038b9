//! The workload expanded at compile time: the reference workload interpreter with a backend
//! that records each task (and each process's steps) instead of running it.

use super::*;
// ------------------------------------------------------------------------ expansion

pub(super) struct RecTask {
    pub(super) kernel: KernelId,
    pub(super) coords: Vec<i64>,
    pub(super) args: Vec<TaskValue>,
    pub(super) axes: Vec<(AxisId, i64)>,
    pub(super) thread: Option<usize>,
}

/// A step of a process instance as recorded.
pub(super) enum RStep {
    Task(usize),
    Send {
        channel: ChannelId,
        token: Vec<i64>,
        id: usize,
    },
    Recv {
        channel: ChannelId,
        id: usize,
    },
}

#[derive(Default)]
pub(super) struct Recorder {
    pub(super) tasks: Vec<RecTask>,
    pub(super) current: Option<usize>,
    pub(super) threads: Vec<String>,
    pub(super) programs: Vec<Vec<RStep>>,
    /// Per send id: (sending thread, receiving thread once received).
    pub(super) sends: Vec<(usize, Option<usize>)>,
    pub(super) too_many: bool,
    pub(super) data_read: bool,
}

impl TaskBackend for Recorder {
    fn task(
        &mut self,
        t: &TaskInstance<'_>,
        _tensors: &mut [HostTensor],
    ) -> Result<(), exec::TaskError> {
        if self.tasks.len() >= MAX_TASKS {
            self.too_many = true;
            return Err(exec::TaskError::Task(format!(
                "the design would unroll more than {MAX_TASKS} tasks"
            )));
        }
        let i = self.tasks.len();
        self.tasks.push(RecTask {
            kernel: t.kernel,
            coords: t.coords.to_vec(),
            args: t.args.to_vec(),
            axes: t.axes.to_vec(),
            thread: self.current,
        });
        if let Some(th) = self.current {
            if let Some(p) = self.programs.get_mut(th) {
                p.push(RStep::Task(i));
            }
        }
        Ok(())
    }

    fn keeps_records(&self) -> bool {
        false
    }

    fn sync(&mut self, _tensor: TensorId, _tensors: &mut [HostTensor]) -> Result<(), String> {
        self.data_read = true;
        Err(
            "the orchestration reads tensor data, which an AIE design cannot do at compile time"
                .into(),
        )
    }

    fn connect(
        &mut self,
        program: &Program,
        workload: &str,
        items: &[ConnectItem],
        params: &[ScalarValue],
        tensors: &mut [HostTensor],
    ) -> Option<Result<Vec<TaskRecord>, exec::ExecError>> {
        Some(self.run_connect(program, workload, items, params, tensors))
    }
}

pub(super) enum ThState {
    Ready(Option<Option<Vec<i64>>>),
    Sending(ChannelId, Vec<i64>),
    Receiving(ChannelId),
    Done,
}

impl Recorder {
    /// Steps the process instances in a fixed round-robin with bounded channels (depth 0 holds
    /// one token, as an object FIFO does), recording each instance's program.
    pub(super) fn run_connect(
        &mut self,
        program: &Program,
        workload: &str,
        items: &[ConnectItem],
        params: &[ScalarValue],
        tensors: &mut [HostTensor],
    ) -> Result<Vec<TaskRecord>, exec::ExecError> {
        let mut threads = exec::connect_threads(program, items)?;
        let base = self.threads.len();
        for t in &threads {
            self.threads.push(t.name().to_string());
            self.programs.push(Vec::new());
        }
        let nch = program.channels.len();
        let mut queues: Vec<VecDeque<(Vec<i64>, usize)>> = vec![VecDeque::new(); nch];
        let mut producers = vec![0usize; nch];
        for t in &threads {
            for c in &t.produces {
                if let Some(n) = producers.get_mut(c.index()) {
                    *n += 1;
                }
            }
        }
        let cap = |c: ChannelId| {
            program
                .channels
                .get(c.index())
                .map_or(1, |ch| ch.depth.max(1) as usize)
        };
        let mut state: Vec<ThState> = threads.iter().map(|_| ThState::Ready(None)).collect();
        let mut records = Vec::new();
        loop {
            let mut progress = false;
            let mut all_done = true;
            for i in 0..threads.len() {
                let th = base + i;
                let st = std::mem::replace(&mut state[i], ThState::Done);
                let next = match st {
                    ThState::Done => ThState::Done,
                    ThState::Ready(received) => {
                        progress = true;
                        self.current = Some(th);
                        let r =
                            threads[i].step(program, params, tensors, self, received, &mut records);
                        self.current = None;
                        match r? {
                            ProcAction::Continue => ThState::Ready(None),
                            ProcAction::Send { channel, token, .. } => {
                                ThState::Sending(channel, token)
                            }
                            ProcAction::Recv { channel } => ThState::Receiving(channel),
                            ProcAction::Finished => {
                                for c in &threads[i].produces {
                                    if let Some(n) = producers.get_mut(c.index()) {
                                        *n = n.saturating_sub(1);
                                    }
                                }
                                ThState::Done
                            }
                        }
                    }
                    ThState::Sending(c, token) => match queues.get_mut(c.index()) {
                        Some(q) if q.len() < cap(c) => {
                            progress = true;
                            let id = self.sends.len();
                            self.sends.push((th, None));
                            q.push_back((token.clone(), id));
                            self.programs[th].push(RStep::Send {
                                channel: c,
                                token,
                                id,
                            });
                            ThState::Ready(None)
                        }
                        _ => ThState::Sending(c, token),
                    },
                    ThState::Receiving(c) => {
                        let q = queues.get_mut(c.index());
                        match q.and_then(|q| q.pop_front()) {
                            Some((token, id)) => {
                                progress = true;
                                if let Some(s) = self.sends.get_mut(id) {
                                    s.1 = Some(th);
                                }
                                self.programs[th].push(RStep::Recv { channel: c, id });
                                ThState::Ready(Some(Some(token)))
                            }
                            None if producers.get(c.index()).copied().unwrap_or(0) == 0 => {
                                progress = true;
                                ThState::Ready(Some(None))
                            }
                            None => ThState::Receiving(c),
                        }
                    }
                };
                if !matches!(next, ThState::Done) {
                    all_done = false;
                }
                state[i] = next;
            }
            if all_done {
                return Ok(records);
            }
            if !progress {
                return Err(exec::ExecError::new(
                    "E0810",
                    format!("the processes of `{workload}` deadlock when their channels hold at least one token each (object FIFO depths)"),
                ));
            }
        }
    }
}
