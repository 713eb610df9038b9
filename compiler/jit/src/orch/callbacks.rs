//! The host callbacks of the generated code. Each returns 0 (or a value) on success and −1
//! after storing the error in the context; none unwinds.

use super::*;

type Sig = (&'static [char], char);

/// `(symbol, address, (argument kinds, result kind))`; `i`: i64 or pointer, `f`: f64.
/// The order is the one of [`super::codegen::Cb`].
pub fn symbols() -> Vec<(&'static str, *const u8, Sig)> {
    const I2: &[char] = &['i', 'i'];
    const I3: &[char] = &['i', 'i', 'i'];
    const I4: &[char] = &['i', 'i', 'i', 'i'];
    const I5: &[char] = &['i', 'i', 'i', 'i', 'i'];
    const F2: &[char] = &['f', 'f'];
    vec![
        ("wsp_o_sync", sync as *const u8, (I2, 'i')),
        ("wsp_o_order", order as *const u8, (I2, 'i')),
        ("wsp_o_begin", begin as *const u8, (I2, 'i')),
        ("wsp_o_view", view as *const u8, (I3, 'i')),
        ("wsp_o_task", task as *const u8, (I2, 'i')),
        ("wsp_o_run", run as *const u8, (I2, 'i')),
        ("wsp_o_send", send as *const u8, (I5, 'i')),
        ("wsp_o_recv", recv as *const u8, (I4, 'i')),
        ("wsp_o_elem", elem as *const u8, (I5, 'i')),
        ("wsp_o_ragged", ragged as *const u8, (I4, 'i')),
        ("wsp_o_span", span as *const u8, (I4, 'i')),
        ("wsp_o_col", col as *const u8, (I4, 'i')),
        ("wsp_o_clear", clear as *const u8, (I2, 'i')),
        ("wsp_o_push", push as *const u8, (I4, 'i')),
        ("wsp_o_tuple", tuple as *const u8, (I4, 'i')),
        ("wsp_o_data", data as *const u8, (I3, 'i')),
        ("wsp_o_fail", fail as *const u8, (I4, 'i')),
        ("wsp_o_fmod", fmod as *const u8, (F2, 'f')),
        ("wsp_o_fmin", fmin as *const u8, (F2, 'f')),
        ("wsp_o_fmax", fmax as *const u8, (F2, 'f')),
        ("wsp_o_local", local as *const u8, (I3, 'i')),
    ]
}

/// Runs `f` on the context; an error is stored and reported as −1.
fn with(cx: *mut Ctx<'_, '_>, f: impl FnOnce(&mut Ctx<'_, '_>) -> Result<i64, ExecError>) -> i64 {
    // SAFETY: the generated code passes back the context `invoke` gave it, alive and not
    // otherwise borrowed during the callback.
    let cx = unsafe { &mut *cx };
    match f(cx) {
        Ok(v) => v,
        Err(e) => {
            cx.err = Some(e);
            -1
        }
    }
}

/// [`with`] for a callback of call site `s`: its errors are placed at the call.
fn with_site(
    cx: *mut Ctx<'_, '_>,
    s: i64,
    f: impl FnOnce(&mut Ctx<'_, '_>) -> Result<i64, ExecError>,
) -> i64 {
    with(cx, |cx| {
        f(cx).map_err(|e| match site(cx, s) {
            Ok((site, _)) => e.within(&site.call.at),
            Err(_) => e,
        })
    })
}

fn host<'a, 'h>(cx: &Ctx<'_, 'h>) -> &'a mut Host<'h> {
    // SAFETY: the host outlives every invocation; callbacks run one at a time and a
    // nested invocation (`run`) only starts from a callback that does not touch the
    // host again after it returns.
    unsafe { &mut *cx.host }
}

fn id(x: i64) -> u32 {
    u32::try_from(x).unwrap_or(u32::MAX)
}

extern "C" fn sync(cx: *mut Ctx<'_, '_>, t: i64) -> i64 {
    with(cx, |cx| {
        let h = host(cx);
        h.backend.sync(TensorId(id(t)), h.tensors).map_err(xerr)?;
        Ok(0)
    })
}

extern "C" fn order(cx: *mut Ctx<'_, '_>, ev: i64) -> i64 {
    with(cx, |cx| {
        let e = match ev {
            codegen::BEGIN_PAR => OrderEvent::Begin { seq: false },
            codegen::BEGIN_SEQ => OrderEvent::Begin { seq: true },
            codegen::STEP => OrderEvent::Step,
            _ => OrderEvent::End,
        };
        host(cx).backend.order(e).map_err(xerr)?;
        Ok(0)
    })
}

fn orch<'h>(cx: &Ctx<'_, 'h>) -> &'h CompiledOrch<'h> {
    // SAFETY: the host outlives every invocation (see `host`).
    unsafe { (*cx.host).o }
}

fn site<'h>(
    cx: &Ctx<'_, 'h>,
    s: i64,
) -> Result<(&'h CallSite, &'h wsp_ir::kernel::Kernel), ExecError> {
    let o = orch(cx);
    let site = o
        .calls
        .get(usize::try_from(s).unwrap_or(usize::MAX))
        .ok_or_else(|| xerr("bad call site"))?;
    let k =
        o.p.kernel(site.call.kernel)
            .ok_or_else(|| xerr(format!("kernel #{} does not exist", site.call.kernel.0)))?;
    Ok((site, k))
}

extern "C" fn begin(cx: *mut Ctx<'_, '_>, s: i64) -> i64 {
    with_site(cx, s, |cx| {
        let (site, _) = site(cx, s)?;
        let mut coords = std::mem::take(&mut cx.coords);
        coords.clear();
        coords.extend((0..site.call.coords.len()).map(|i| cx.slot(site.coords + i)));
        cx.coords = coords;
        // One argument per parameter (a view left from the last task is reused).
        let n = site.args.len();
        cx.args.truncate(n);
        while cx.args.len() < n {
            cx.args.push(TaskValue::Scalar(ScalarValue::Int(0)));
        }
        cx.nviews = 0;
        Ok(0)
    })
}

extern "C" fn view(cx: *mut Ctx<'_, '_>, s: i64, arg: i64) -> i64 {
    with_site(cx, s, |cx| {
        let (site, k) = site(cx, s)?;
        let a = usize::try_from(arg).unwrap_or(usize::MAX);
        let (Some(param), Some(TaskArg::View(v)), Some(SiteArg::View { base })) =
            (k.params.get(a), site.call.args.get(a), site.args.get(a))
        else {
            return Err(xerr("bad view argument"));
        };
        let ParamKind::Tile { tile, partial, .. } = param.kind else {
            return Err(xerr("bad view argument"));
        };
        let h = host(cx);
        let t = h
            .tensors
            .get(v.tensor.index())
            .ok_or_else(|| xerr("bad tensor"))?;
        let rank = t.shape.len();
        let mut dims = std::mem::take(&mut cx.dims);
        dims.clear();
        for d in 0..rank {
            dims.push(match v.dims.get(d) {
                Some(ViewDim::Index { .. }) => (cx.slot(base + 2 * d), None),
                Some(ViewDim::Slice { .. }) => {
                    (cx.slot(base + 2 * d), Some(cx.slot(base + 2 * d + 1)))
                }
                Some(ViewDim::Full) | None => {
                    (0, Some(t.shape.get(d).copied().unwrap_or(0) as i64))
                }
            });
        }
        let name = TaskName {
            kernel: k,
            coords: &cx.coords,
        };
        let Some(slot) = cx.args.get_mut(a) else {
            return Err(xerr("bad view argument"));
        };
        if !matches!(slot, TaskValue::Tile(_)) {
            *slot = TaskValue::Tile(TileView::empty());
        }
        let TaskValue::Tile(tv) = slot else {
            return Err(xerr("bad view argument"));
        };
        let r = exec::resolve_view_dims(
            h.o.p,
            h.tensors,
            v,
            &dims,
            tile,
            partial,
            &name,
            &param.name,
            tv,
        );
        cx.dims = dims;
        r?;
        cx.nviews += 1;
        Ok(0)
    })
}

extern "C" fn task(cx: *mut Ctx<'_, '_>, s: i64) -> i64 {
    with(cx, |cx| {
        let (site, k) = site(cx, s)?;
        let mut args = std::mem::take(&mut cx.args);
        let views = site
            .args
            .iter()
            .filter(|a| matches!(a, SiteArg::View { .. }))
            .count();
        if cx.nviews != views || args.len() != site.args.len() {
            cx.args = args;
            return Err(xerr("a view was not resolved"));
        }
        for (x, a) in args.iter_mut().zip(&site.args) {
            if let SiteArg::Scalar { slot, ty } = a {
                let bits = cx.slot(*slot);
                *x = TaskValue::Scalar(match ty {
                    Ty::I => ScalarValue::Int(bits),
                    Ty::F => ScalarValue::Float(f64::from_bits(bits as u64)),
                    Ty::B => ScalarValue::Bool(bits != 0),
                });
            }
        }
        let nvars = cx.nvars;
        cx.axes.clear();
        for v in 0..nvars {
            let (val, bound, axis) = (
                cx.slot(1 + v),
                cx.slot(1 + nvars + v),
                cx.slot(1 + 2 * nvars + v),
            );
            if axis >= 0 && bound != 0 {
                cx.axes.push((AxisId(id(axis)), val));
            }
        }
        let process = cx.process.then_some(cx.thread);
        let inst = TaskInstance {
            kernel: site.call.kernel,
            ir: k,
            coords: &cx.coords,
            args: &args,
            process,
            axes: &cx.axes,
            at: site.call.at.as_ref(),
        };
        let h = host(cx);
        let r = h.backend.task(&inst, h.tensors);
        if let Err(e) = r {
            return Err(e.of_task(&inst.label(), &site.call.at));
        }
        if h.backend.keeps_records() {
            let rec = TaskRecord::new(site.call.kernel, &cx.coords, process, &args);
            host(cx).out.push(rec);
        }
        cx.args = args;
        Ok(0)
    })
}

/// A local tensor's block begins (`begin` 1) or ends (0).
extern "C" fn local(cx: *mut Ctx<'_, '_>, t: i64, begin: i64) -> i64 {
    with(cx, |cx| {
        let h = host(cx);
        let t = TensorId(id(t));
        if begin != 0 {
            wsp_ir::exec::local_begin(&mut *h.backend, h.tensors, t)?;
        } else {
            h.backend.local_end(t).map_err(xerr)?;
        }
        Ok(0)
    })
}

extern "C" fn run(cx: *mut Ctx<'_, '_>, w: i64) -> i64 {
    with(cx, |cx| {
        run_workload(host(cx), WorkloadId(id(w)))?;
        Ok(0)
    })
}

fn token(ptr: i64, n: i64) -> Vec<i64> {
    let n = usize::try_from(n).unwrap_or(0);
    // SAFETY: the generated code passes the address of `n` slots of its own block.
    unsafe { std::slice::from_raw_parts(ptr as *const i64, n) }.to_vec()
}

extern "C" fn send(cx: *mut Ctx<'_, '_>, ch: i64, ptr: i64, n: i64, after: i64) -> i64 {
    with(cx, |cx| {
        let tok = token(ptr, n);
        let c = ChannelId(id(ch));
        let p = host(cx).o.p;
        match &mut cx.io {
            Io::External(io) => {
                io.action = Some(ProcAction::Send {
                    channel: c,
                    token: tok,
                    after_task: after != 0,
                });
                Ok(0)
            }
            Io::Internal { chans, st } => {
                exec::try_send(p, chans, c, tok, st.send_state())?;
                Ok(0)
            }
            Io::None => Err(xerr("a channel operation outside a process")),
        }
    })
}

/// 0: a token (written to `out`), 1: closed and empty, 2: blocked.
extern "C" fn recv(cx: *mut Ctx<'_, '_>, ch: i64, out: i64, n: i64) -> i64 {
    with(cx, |cx| {
        let c = ChannelId(id(ch));
        let p = host(cx).o.p;
        let nb = usize::try_from(n).unwrap_or(0);
        let tok = match &mut cx.io {
            Io::External(io) => match io.inbox.take() {
                None => {
                    io.action = Some(ProcAction::Recv { channel: c });
                    return Ok(2);
                }
                Some(None) => return Ok(1),
                Some(Some(tok)) => tok,
            },
            Io::Internal { chans, st } => {
                let q = chans
                    .get_mut(c.index())
                    .ok_or_else(|| xerr("bad channel"))?;
                match q.queue.pop_front() {
                    Some((_, tok)) => tok,
                    None if q.live_producers == 0 => return Ok(1),
                    None => {
                        st.waiting = Some(format!("on `{}` (empty)", exec::chan_name(p, c)));
                        return Ok(2);
                    }
                }
            }
            Io::None => return Err(xerr("a channel operation outside a process")),
        };
        if tok.len() < nb {
            return Err(xerr(format!(
                "in {}: a token of {} values on `{}` binds {} names",
                cx.thread,
                tok.len(),
                exec::chan_name(p, c),
                nb
            )));
        }
        // SAFETY: `out` addresses `n` slots of the body's block.
        let dst = unsafe { std::slice::from_raw_parts_mut(out as *mut i64, nb) };
        dst.copy_from_slice(&tok[..nb]);
        Ok(0)
    })
}

extern "C" fn elem(cx: *mut Ctx<'_, '_>, t: i64, idx: i64, n: i64, out: i64) -> i64 {
    with(cx, |cx| {
        let index = token(idx, n);
        let h = host(cx);
        let v = exec::read_elem(h.o.p, h.tensors, TensorId(id(t)), &index, cx.thread)?;
        let bits = match v {
            ScalarValue::Float(f) => f.to_bits() as i64,
            ScalarValue::Int(i) => i,
            ScalarValue::UInt(u) => i64::try_from(u).unwrap_or(i64::MAX),
            ScalarValue::Bool(b) => i64::from(b),
        };
        // SAFETY: `out` addresses one slot of the body's block.
        unsafe { *(out as *mut i64) = bits };
        Ok(0)
    })
}

extern "C" fn ragged(cx: *mut Ctx<'_, '_>, a: i64, b: i64, out: i64) -> i64 {
    with(cx, |cx| {
        let h = host(cx);
        let n = exec::ragged_row_len(h.o.p, h.tensors, AxisId(id(a)), b, cx.thread)?;
        // SAFETY: `out` addresses one slot of the body's block.
        unsafe { *(out as *mut i64) = n };
        Ok(0)
    })
}

extern "C" fn span(cx: *mut Ctx<'_, '_>, a: i64, b: i64, out: i64) -> i64 {
    with(cx, |cx| {
        let h = host(cx);
        let (s, e) = exec::sparse_row_span(h.o.p, h.tensors, AxisId(id(a)), b, cx.thread)?;
        // SAFETY: `out` addresses two slots of the body's block.
        unsafe {
            *(out as *mut i64) = s;
            *(out as *mut i64).add(1) = e;
        }
        Ok(0)
    })
}

extern "C" fn col(cx: *mut Ctx<'_, '_>, a: i64, i: i64, out: i64) -> i64 {
    with(cx, |cx| {
        let h = host(cx);
        let c = exec::sparse_col(h.o.p, h.tensors, AxisId(id(a)), i, cx.thread)?;
        // SAFETY: `out` addresses one slot of the body's block.
        unsafe { *(out as *mut i64) = c };
        Ok(0)
    })
}

fn buf<'a>(cx: &'a mut Ctx<'_, '_>, b: i64) -> Result<&'a mut Vec<i64>, ExecError> {
    cx.bufs
        .get_mut(usize::try_from(b).unwrap_or(usize::MAX))
        .ok_or_else(|| xerr("bad buffer"))
}

extern "C" fn clear(cx: *mut Ctx<'_, '_>, b: i64) -> i64 {
    with(cx, |cx| {
        buf(cx, b)?.clear();
        Ok(0)
    })
}

extern "C" fn push(cx: *mut Ctx<'_, '_>, b: i64, ptr: i64, n: i64) -> i64 {
    with(cx, |cx| {
        let v = token(ptr, n);
        buf(cx, b)?.extend_from_slice(&v);
        Ok(0)
    })
}

/// Pushes a complete iteration tuple; more than [`MAX_LOOP_ITERATIONS`] is an error.
extern "C" fn tuple(cx: *mut Ctx<'_, '_>, b: i64, ptr: i64, n: i64) -> i64 {
    with(cx, |cx| {
        let v = token(ptr, n);
        let thread = cx.thread.to_string();
        let bf = buf(cx, b)?;
        if bf.len() / v.len().max(1) >= MAX_LOOP_ITERATIONS {
            return Err(xerr(format!(
                "in {thread}: a loop has more than {MAX_LOOP_ITERATIONS} iterations"
            )));
        }
        bf.extend_from_slice(&v);
        Ok(0)
    })
}

/// The address of buffer `b`'s values; their count goes to `len`.
extern "C" fn data(cx: *mut Ctx<'_, '_>, b: i64, len: i64) -> i64 {
    with(cx, |cx| {
        let bf = buf(cx, b)?;
        // SAFETY: `len` addresses one slot of the body's block.
        unsafe { *(len as *mut i64) = bf.len() as i64 };
        Ok(bf.as_ptr() as i64)
    })
}

extern "C" fn fail(cx: *mut Ctx<'_, '_>, f: i64, a: i64, b: i64) -> i64 {
    with(cx, |cx| {
        let o = host(cx).o;
        let fail = o.fails.get(usize::try_from(f).unwrap_or(usize::MAX));
        let m = fail
            .map(|x| x.message(cx.thread, a, b))
            .unwrap_or_else(|| "unknown failure".into());
        match fail {
            Some(Fail::NegSize(_, at)) => Err(xerr(m).on_axis(at)),
            _ => Err(xerr(m)),
        }
    })
}

extern "C" fn fmod(x: f64, y: f64) -> f64 {
    x % y
}
extern "C" fn fmin(x: f64, y: f64) -> f64 {
    wsp_ir::num::minimum(x, y)
}
extern "C" fn fmax(x: f64, y: f64) -> f64 {
    wsp_ir::num::maximum(x, y)
}
