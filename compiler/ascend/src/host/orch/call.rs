//! A task call as C: its coordinates, region arguments, scalars, cycles and keys, submitted
//! through the runtime's C ABI.

use super::*;

impl Orch<'_> {
    pub(super) fn call(
        &mut self,
        call: &TaskCall,
        cx: &Cx,
        out: &mut String,
        ind: usize,
        after: &str,
    ) {
        let pad = "    ".repeat(ind);
        let p = self.p;
        let Some(k) = p.kernel(call.kernel) else {
            self.diags.push(diag(
                format!("kernel #{} does not exist", call.kernel.0),
                call.at.clone(),
            ));
            return;
        };
        if call.args.len() != k.params.len() {
            self.diags.push(diag(
                format!(
                    "task {}: {} arguments for {} parameters",
                    k.name,
                    call.args.len(),
                    k.params.len()
                ),
                call.at.clone(),
            ));
            return;
        }
        let mut reads = Vec::new();
        call.coords.iter().for_each(|c| expr_reads(c, &mut reads));
        for a in &call.args {
            if let TaskArg::Scalar { value } = a {
                expr_reads(value, &mut reads);
            }
        }
        let mut b = String::new();
        let _ = writeln!(b, "{pad}{{ /* {} */", k.name.replace("*/", "* /"));
        let p1 = format!("{pad}    ");
        self.syncs(&reads, &mut b, &p1);
        let nc = call.coords.len();
        let _ = writeln!(b, "{p1}int64_t co_[{}];", nc.max(1));
        for (i, c) in call.coords.iter().enumerate() {
            let Some(c) = self.expr_ty(c, Ty::I, cx, "a task coordinate") else {
                return;
            };
            let _ = writeln!(b, "{p1}co_[{i}] = {c};");
        }
        let _ = writeln!(b, "{p1}WSP_CHECK({});", cx.where_);
        // The task's label for messages.
        let label = c_str(&format!("task {}", k.name));
        let _ = writeln!(
            b,
            "{p1}char lab_[160]; wsp_label(lab_, sizeof lab_, {label}, co_, {nc});"
        );
        let ntiles = k
            .params
            .iter()
            .filter(|x| matches!(x.kind, ParamKind::Tile { .. }))
            .count();
        let nscal = 2 * ntiles + (k.params.len() - ntiles);
        let _ = writeln!(
            b,
            "{p1}struct wsp_rt_arg a_[{}];\n{p1}int64_t sc_[{}];\n{p1}uint32_t va_[{}][2];\n{p1}memset(a_, 0, sizeof a_);\n{p1}(void)va_;",
            ntiles.max(1),
            nscal.max(1),
            ntiles.max(1)
        );
        let (mut ti, mut si) = (0usize, 0usize);
        for (prm, arg) in k.params.iter().zip(&call.args) {
            match (&prm.kind, arg) {
                (ParamKind::Tile { dir, tile, partial }, TaskArg::View(view)) => {
                    let Some(decl) = p.tensors.get(view.tensor.index()) else {
                        self.diags.push(diag(
                            format!("tensor #{} does not exist", view.tensor.0),
                            call.at.clone(),
                        ));
                        return;
                    };
                    let shape = &self.shapes[view.tensor.index()];
                    let rank = shape.len();
                    let pname = &prm.name;
                    if view.dims.len() > rank {
                        self.diags.push(diag(
                            format!(
                                "task {}: the view of `{}` for `{pname}` indexes {} dimensions of a rank-{rank} tensor",
                                k.name,
                                decl.name,
                                view.dims.len()
                            ),
                            call.at.clone(),
                        ));
                        return;
                    }
                    if decl.dtype != tile.dtype {
                        self.diags.push(diag(
                            format!(
                                "task {}: `{}` is {} but parameter `{pname}` is {}",
                                k.name, decl.name, decl.dtype, tile.dtype
                            ),
                            call.at.clone(),
                        ));
                        return;
                    }
                    let kept: Vec<usize> = (0..rank)
                        .filter(|d| !matches!(view.dims.get(*d), Some(ViewDim::Index { .. })))
                        .collect();
                    if kept.len() > 2 {
                        self.diags.push(diag(
                            format!(
                                "task {}: the view of `{}` for `{pname}` keeps {} dimensions; a tile has at most 2",
                                k.name,
                                decl.name,
                                kept.len()
                            ),
                            call.at.clone(),
                        ));
                        return;
                    }
                    let (row_dim, col_dim) = match kept.len() {
                        0 => (None, None),
                        1 => (None, Some(kept[0])),
                        _ => (Some(kept[0]), Some(kept[1])),
                    };
                    if kept.len() < 2 && tile.shape[0] != 1 || kept.is_empty() && tile.shape[1] != 1
                    {
                        self.diags.push(diag(
                            format!(
                                "task {}: the view of `{}` has fewer dimensions than parameter `{pname}` of shape [{}, {}]",
                                k.name, decl.name, tile.shape[0], tile.shape[1]
                            ),
                            call.at.clone(),
                        ));
                        return;
                    }
                    let msg = c_str(&format!("the view of `{}` for `{pname}`", decl.name));
                    let dir_c = match dir {
                        wsp_ir::kernel::Direction::In => "WSP_DIR_IN",
                        wsp_ir::kernel::Direction::Out => "WSP_DIR_OUT",
                        wsp_ir::kernel::Direction::InOut => "WSP_DIR_INOUT",
                    };
                    // A local tensor's instance is the one its running block made.
                    let tensor = if decl.kind == wsp_ir::workload::TensorKind::Local {
                        format!("wsp_local[{}]", view.tensor.0)
                    } else {
                        view.tensor.0.to_string()
                    };
                    let _ = writeln!(
                        b,
                        "{p1}a_[{ti}].tensor = {tensor}; a_[{ti}].dir = {dir_c}; va_[{ti}][0] = 1; va_[{ti}][1] = 1;"
                    );
                    if rank == 0 {
                        let _ = writeln!(
                            b,
                            "{p1}a_[{ti}].rank = 1; a_[{ti}].offsets[0] = 0; a_[{ti}].extents[0] = 1; a_[{ti}].strides[0] = 1;"
                        );
                    } else {
                        let _ = writeln!(b, "{p1}a_[{ti}].rank = {rank};");
                    }
                    for (d, &size) in shape.iter().enumerate() {
                        let size = size as i64;
                        let (s, e) = match view.dims.get(d) {
                            Some(ViewDim::Index { at }) => (self.affine(at, cx), None),
                            Some(ViewDim::Slice { start, end }) => {
                                (self.affine(start, cx), Some(self.affine(end, cx)))
                            }
                            Some(ViewDim::Full) | None => (Some(c_i64(0)), Some(Some(c_i64(size)))),
                        };
                        let Some(s) = s else { return };
                        match e {
                            None => {
                                let _ = writeln!(
                                    b,
                                    "{p1}{{ int64_t s_ = {s}; WSP_CHECK({w}); if (s_ < 0 || s_ >= {size}) return wsp_view_error(lab_, {msg}, {d});\n{p1}  a_[{ti}].offsets[{d}] = s_; a_[{ti}].extents[{d}] = 1; a_[{ti}].strides[{d}] = 1; }}",
                                    w = cx.where_
                                );
                            }
                            Some(e) => {
                                let Some(e) = e else { return };
                                let td = usize::from(Some(d) == col_dim);
                                let stat = tile.shape[td];
                                let part = i32::from(partial[td]);
                                let _ = writeln!(
                                    b,
                                    "{p1}{{ int64_t s_ = {s}; int64_t e_ = {e}; WSP_CHECK({w}); int64_t c_;\n{p1}  if (wsp_slice(s_, e_, {size}, {stat}, {part}, &c_)) return wsp_view_error(lab_, {msg}, {d});\n{p1}  va_[{ti}][{td}] = (uint32_t)c_; a_[{ti}].offsets[{d}] = s_; a_[{ti}].extents[{d}] = c_ > 1 ? c_ : 1; a_[{ti}].strides[{d}] = 1; }}",
                                    w = cx.where_
                                );
                            }
                        }
                    }
                    let dim = |x: Option<usize>| x.map_or(-1, |x| x as i64);
                    let _ = writeln!(
                        b,
                        "{p1}sc_[{si}] = {}; sc_[{}] = {};",
                        dim(row_dim),
                        si + 1,
                        dim(col_dim)
                    );
                    if dir.writes() {
                        let _ = writeln!(b, "{p1}wsp_written[{}] = 1;", view.tensor.0);
                    }
                    si += 2;
                    ti += 1;
                }
                (ParamKind::Scalar { .. }, TaskArg::Scalar { value }) => {
                    let Some((c, t)) = self.expr(value, cx) else {
                        return;
                    };
                    let v = match t {
                        Ty::F => format!("wsp_bits({c})"),
                        Ty::I => c,
                        Ty::B => format!("(int64_t)({c})"),
                    };
                    let _ = writeln!(b, "{p1}sc_[{si}] = {v};");
                    si += 1;
                }
                _ => {
                    self.diags.push(diag(
                        format!(
                            "task {}: argument `{}` is of the wrong kind (view vs scalar)",
                            k.name, prm.name
                        ),
                        call.at.clone(),
                    ));
                    return;
                }
            }
        }
        let _ = writeln!(b, "{p1}WSP_CHECK({});", cx.where_);
        // Cycles.
        let cyc = match &self.cycles[call.kernel.index()] {
            Cycles::Const(c) => format!("UINT64_C({c})"),
            Cycles::Table { dims, name } => {
                let mut idx = String::from("0");
                for (j, td, stat) in dims {
                    let ti = tile_index(k, *j);
                    idx = format!("({idx}) * {} + va_[{ti}][{td}]", stat + 1);
                }
                let _ = writeln!(
                    b,
                    "{p1}uint64_t cy_ = {name}[{idx}];\n{p1}if (cy_ == UINT64_MAX) {{ fprintf(stderr, \"wsp_host: %s: the architecture model prices no task of these extents\\n\", lab_); return 1; }}"
                );
                "cy_".to_string()
            }
        };
        let keys = self.keys;
        let mut kc = Vec::new();
        for k in [&keys.dispatch, &keys.priority, &keys.stream] {
            kc.push(match k {
                None => "0".to_string(),
                Some(k) => match self.key(k, cx, &call.at) {
                    Some(c) => c,
                    None => return,
                },
            });
        }
        let _ = writeln!(
            b,
            "{p1}struct wsp_rt_task t_ = {{ {}, co_, {nc}, a_, {ntiles}, sc_, {nscal}, {cyc}, 0, 0, 0 }};\n{p1}t_.key = {}; t_.priority = {}; t_.stream = {}; WSP_CHECK({});\n{p1}uint64_t id_ = 0; if (wsp_cx_submit(cx, &t_, &id_) != WSP_RT_OK) return wsp_fail_cx(cx, lab_);\n{p1}(void)id_;{after}\n{pad}}}",
            call.kernel.0, kc[0], kc[1], kc[2], cx.where_
        );
        out.push_str(&b);
    }
}
