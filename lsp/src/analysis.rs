//! What the server answers, as pure functions of a [`Workspace`] and positions: no I/O, no
//! protocol state. Offsets are byte offsets; [`LineIndex`] converts to and from LSP positions
//! (UTF-16 code units), clamping anything out of range.

use std::collections::BTreeMap;

use tower_lsp_server::ls_types as lsp;
use wsp_core::Workspace;
use wsp_diagnostics::{Diagnostic, FileName, Severity, Tag};
use wsp_syntax::ast::{Item, ItemKind};
use wsp_syntax::{lex, Token};

/// Byte offsets ↔ LSP positions for one text.
pub struct LineIndex<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    pub fn new(text: &'a str) -> LineIndex<'a> {
        LineIndex {
            text,
            starts: wsp_diagnostics::render::line_starts(text),
        }
    }

    pub fn position(&self, offset: usize) -> lsp::Position {
        let offset = offset.min(self.text.len());
        let line = self
            .starts
            .partition_point(|s| *s <= offset)
            .saturating_sub(1);
        let start = self.starts[line];
        let mut end = offset;
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let character: usize = self.text[start..end].chars().map(char::len_utf16).sum();
        lsp::Position::new(line as u32, character as u32)
    }

    /// The byte offset of a position; positions past a line's end (or inside a surrogate pair)
    /// clamp to the nearest valid offset.
    pub fn offset(&self, p: lsp::Position) -> usize {
        let Some(start) = self.starts.get(p.line as usize).copied() else {
            return self.text.len();
        };
        let end = self
            .starts
            .get(p.line as usize + 1)
            .map(|e| e - 1)
            .unwrap_or(self.text.len());
        let mut units = 0usize;
        for (i, ch) in self.text[start..end].char_indices() {
            if units >= p.character as usize {
                return start + i;
            }
            units += ch.len_utf16();
        }
        end
    }

    pub fn range(&self, start: usize, end: usize) -> lsp::Range {
        lsp::Range::new(self.position(start), self.position(end))
    }
}

fn severity(s: Severity) -> lsp::DiagnosticSeverity {
    match s {
        Severity::Error => lsp::DiagnosticSeverity::ERROR,
        Severity::Warning => lsp::DiagnosticSeverity::WARNING,
        Severity::Note => lsp::DiagnosticSeverity::INFORMATION,
    }
}

/// Maps a workspace path to a URI (`None` for embedded std modules and unknown paths).
pub type UriOf<'a> = &'a dyn Fn(&str) -> Option<lsp::Uri>;

/// The diagnostics of one file, as `wsp check` reports them, converted for the editor.
pub fn diagnostics(ws: &Workspace, path: &str, uri_of: UriOf<'_>) -> Vec<lsp::Diagnostic> {
    let Some(text) = ws.text(&FileName::new(path)) else {
        return Vec::new();
    };
    let mine: Vec<Diagnostic> = ws
        .check(path)
        .into_iter()
        .filter(|d| d.primary.file.as_str() == path)
        .collect();
    if mine.is_empty() {
        return Vec::new();
    }
    // Lines are indexed only for a file with diagnostics (a clean file costs no pass over
    // its text).
    let idx = LineIndex::new(&text);
    mine.iter().map(|d| convert(ws, d, &idx, uri_of)).collect()
}

/// The text after a `didChange`'s changes, applied in order to `current` (the text the server
/// has; empty if none): a change with a range replaces that range (positions as LSP counts
/// them, clamped to the text), one without replaces the whole text.
pub fn apply_changes(
    current: Option<&str>,
    changes: Vec<lsp::TextDocumentContentChangeEvent>,
) -> String {
    let mut text = current.unwrap_or("").to_string();
    for c in changes {
        match c.range {
            Some(r) => {
                let (a, b) = (offset_at(&text, r.start), offset_at(&text, r.end));
                let (a, b) = (a.min(b), a.max(b));
                text.replace_range(a..b, &c.text);
            }
            None => text = c.text,
        }
    }
    text
}

/// The byte offset of position `p` in `text`, as [`LineIndex::offset`] gives it, reading only
/// the lines up to `p`'s (a keystroke in a long file does not index all of its lines).
fn offset_at(text: &str, p: lsp::Position) -> usize {
    let b = text.as_bytes();
    // Line breaks as `line_starts` counts them: `\n`, `\r\n`, or a lone `\r`.
    let mut breaks = memchr::memchr2_iter(b'\n', b'\r', b)
        .filter(|&i| !(b[i] == b'\r' && b.get(i + 1) == Some(&b'\n')));
    let mut start = 0;
    for _ in 0..p.line {
        match breaks.next() {
            Some(i) => start = i + 1,
            None => return text.len(),
        }
    }
    let end = breaks.next().map_or(text.len(), |i| i + 1);
    let line = &text[start..end];
    start + LineIndex::new(line).offset(lsp::Position::new(0, p.character))
}

fn convert(
    ws: &Workspace,
    d: &Diagnostic,
    idx: &LineIndex<'_>,
    uri_of: UriOf<'_>,
) -> lsp::Diagnostic {
    let mut message = d.message.clone();
    if !d.primary.message.is_empty() {
        message.push_str(&format!(" ({})", d.primary.message));
    }
    for n in &d.notes {
        message.push_str(&format!("\nnote: {n}"));
    }
    if let Some(h) = &d.help {
        message.push_str(&format!("\nhelp: {h}"));
    }
    let related: Vec<lsp::DiagnosticRelatedInformation> = d
        .secondary
        .iter()
        .filter_map(|l| {
            let text = ws.text(&l.file)?;
            let uri = uri_of(l.file.as_str())?;
            let li = LineIndex::new(&text);
            Some(lsp::DiagnosticRelatedInformation {
                location: lsp::Location::new(
                    uri,
                    li.range(l.span.start as usize, l.span.end as usize),
                ),
                message: l.message.clone(),
            })
        })
        .collect();
    let tags: Vec<lsp::DiagnosticTag> = d
        .tags
        .iter()
        .map(|t| match t {
            Tag::Unnecessary => lsp::DiagnosticTag::UNNECESSARY,
            Tag::Deprecated => lsp::DiagnosticTag::DEPRECATED,
        })
        .collect();
    lsp::Diagnostic {
        range: idx.range(d.primary.span.start as usize, d.primary.span.end as usize),
        severity: Some(severity(d.severity)),
        code: Some(lsp::NumberOrString::String(d.code.to_string())),
        code_description: explanation_url(d.code).map(|href| lsp::CodeDescription { href }),
        source: Some("wsp".into()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        tags: (!tags.is_empty()).then_some(tags),
        data: None,
    }
}

/// The identifier at a byte offset: its text and byte range.
pub fn ident_at(text: &str, offset: usize) -> Option<(String, usize, usize)> {
    lex(text).into_iter().find_map(|t| {
        let (s, e) = (t.span.start as usize, t.span.end as usize);
        (t.kind == Token::Ident && s <= offset && offset <= e)
            .then(|| (text[s..e].to_string(), s, e))
    })
}

/// A named item of some loaded file.
pub struct Decl {
    pub path: String,
    /// The item (the database's own node, shared).
    pub item: std::sync::Arc<Item>,
    /// Absolute byte range of the item and of its name.
    pub range: (usize, usize),
    pub name: (usize, usize),
}

/// The named items of a file, in source order.
pub fn decls(ws: &Workspace, path: &str) -> Vec<Decl> {
    let Some(file) = ws.file_handle(path) else {
        return Vec::new();
    };
    // The workspace's memoised parse: re-parsing here made every request cost a parse of
    // every file it looked at.
    wsp_core::db::parse_file(ws.db(), file)
        .file
        .items
        .iter()
        .filter_map(|n| {
            let base = n.range.start as usize;
            let name = n.item.name()?.span;
            Some(Decl {
                path: path.to_string(),
                range: (base, n.range.end as usize),
                name: (base + name.start as usize, base + name.end as usize),
                item: n.item.clone(),
            })
        })
        .collect()
}

/// Whether `from` imports `target`, directly or through other files.
pub fn imports_transitively(ws: &Workspace, from: &str, target: &str) -> bool {
    let mut seen = vec![from.to_string()];
    let mut todo = vec![from.to_string()];
    while let Some(p) = todo.pop() {
        let Some(file) = ws.file_handle(&p) else {
            continue;
        };
        for (q, _) in wsp_core::resolve::imports_of(ws.db(), file) {
            if q == target {
                return true;
            }
            if !seen.contains(q) {
                seen.push(q.clone());
                todo.push(q.clone());
            }
        }
    }
    false
}

/// The files whose names are in scope in `path`: itself, then the loaded files it imports
/// (std modules included), in import order.
pub fn scope_paths(ws: &Workspace, path: &str) -> Vec<String> {
    let mut out = vec![path.to_string()];
    if let Some(file) = ws.file_handle(path) {
        for (p, target) in wsp_core::resolve::imports_of(ws.db(), file) {
            if matches!(target, wsp_core::resolve::ImportTarget::Loaded(_)) && !out.contains(p) {
                out.push(p.clone());
            }
        }
    }
    out
}

/// The declaration of the global name `name` as file `path` sees it: the checker's own
/// resolution (`wsp_core::resolve::declaring_file`: the file's items, then the modules it
/// imports the name from), so go to definition, hover and references agree with the errors.
pub fn find_decl(ws: &Workspace, path: &str, name: &str) -> Option<Decl> {
    let file = ws.file_handle(path)?;
    let (home, _) = wsp_core::resolve::declaring_file(ws.db(), file, name)?;
    decls(ws, home.path(ws.db()))
        .into_iter()
        .find(|d| d.item.name().is_some_and(|n| n.name == name))
}

pub fn kind_word(item: &Item) -> &'static str {
    match &item.kind {
        ItemKind::Const(_) => "const",
        ItemKind::Param(_) => "param",
        ItemKind::Axis(_) => "axis",
        ItemKind::Tensor(_) => "tensor",
        ItemKind::Kernel(_) => "kernel",
        ItemKind::Workload(_) => "workload",
        ItemKind::Channel(_) => "channel",
        ItemKind::Process(_) => "process",
        ItemKind::Schedule(_) => "schedule",
        ItemKind::Import(_) | ItemKind::Expect(_) | ItemKind::Error => "item",
    }
}

/// Hover text for the name at `offset`: its declaration, doc comment, and what the checker
/// knows (a workload's type with its dependencies, a kernel's footprint per on-chip buffer).
pub fn hover(ws: &Workspace, path: &str, offset: usize) -> Option<(String, (usize, usize))> {
    let text = ws.text(&FileName::new(path))?;
    let (name, s, e) = ident_at(&text, offset)?;
    // A name bound inside its item shadows a top-level item of the same name.
    if let Some(md) = crate::features::local_hover(ws, path, &text, &name, s) {
        return Some((md, (s, e)));
    }
    let view = crate::features::view_hover(ws, path, &text, s);
    let d = find_decl(ws, path, &name)?;
    let src = ws.text(&FileName::new(d.path.as_str()))?;
    let decl_text = src.get(d.range.0..d.range.1)?;
    let mut doc = Vec::new();
    let mut header = Vec::new();
    for line in decl_text.lines() {
        let t = line.trim();
        if let Some(c) = t.strip_prefix("///") {
            doc.push(c.trim().to_string());
        } else {
            header.push(line.trim_end());
            if !matches!(d.item.kind, ItemKind::Schedule(_)) || header.len() > 8 {
                break;
            }
        }
    }
    let header = header.join("\n");
    let header = header.trim_end_matches('{').trim_end();
    let mut out = format!("```wsp\n{header}\n```\n");
    if !doc.is_empty() {
        out.push_str(&format!("\n{}\n", doc.join(" ")));
    }
    match &d.item.kind {
        ItemKind::Workload(_) => {
            if let Some((_, ty)) = ws
                .workload_types(&d.path)
                .into_iter()
                .find(|(n, _)| *n == name)
            {
                out.push_str(&format!("\n`{name}: {ty}`\n"));
            }
        }
        ItemKind::Kernel(_) => {
            if let Some((_, fp)) = ws
                .kernel_footprints(&d.path)
                .into_iter()
                .find(|(n, _)| *n == name)
            {
                out.push_str(&format!(
                    "\non-chip memory on {}: {}\n",
                    fp.arch,
                    fp.summary()
                ));
            }
            if let Some((arch, c)) = kernel_cycles(ws, path, &d.path, &name) {
                out.push_str(&format!(
                    "\nestimated per task on {arch}: {} cycles of compute, {} B loaded, {} B stored\n",
                    c.compute, c.load_bytes, c.store_bytes
                ));
            }
        }
        ItemKind::Axis(_) => {
            if let Some(t) = ws
                .file_handle(&d.path)
                .and_then(|f| wsp_core::wltype::axis_types(ws.db(), f).get(&name).cloned())
            {
                out.push_str(&format!("\n`{name}: {t}`\n"));
            }
        }
        ItemKind::Const(_) | ItemKind::Param(_) => {
            if let Some(v) = ws
                .file_handle(&d.path)
                .and_then(|f| wsp_core::db::const_values(ws.db(), f).get(&name).copied())
            {
                out.push_str(&format!("\n`{name} = {v}`\n"));
            }
        }
        ItemKind::Tensor(_) => {
            let sym = ws.file_handle(&d.path).and_then(|f| {
                wsp_core::resolve::scope(ws.db(), f)
                    .get(&name)
                    .map(|s| s.symbol.clone())
            });
            if let Some(wsp_core::db::Symbol::Tensor {
                dtype,
                dims: Some(dims),
                ..
            }) = sym
            {
                out.push_str(&format!(
                    "\n`{name}: {dtype}{}`\n",
                    wsp_core::types::show(&dims)
                ));
            }
        }
        ItemKind::Channel(c) => out.push_str(&channel_info(ws, &d, c)),
        ItemKind::Schedule(sc) => out.push_str(&schedule_info(ws, &src, &d, sc)),
        _ => {}
    }
    if let Some(v) = view {
        out.push_str(&format!("\n{v}"));
    }
    if d.path != path {
        out.push_str(&format!(
            "\n{} `{name}` from `{}`\n",
            kind_word(&d.item),
            d.path
        ));
    }
    Some((out, (s, e)))
}

/// The estimated cost of one task of kernel `name` (full tiles), declared in `decl_path`, on
/// the architecture of the file `path` (its schedule's `.target`, else ascend910b): the
/// kernel's IR from the lowering (`wsp_lower::kernel_ir`) priced by the architecture model
/// with `wsp_ir::cost::task_cost`, the simulator's figure. `None` when the kernel does not
/// lower.
fn kernel_cycles(
    ws: &Workspace,
    path: &str,
    decl_path: &str,
    name: &str,
) -> Option<(String, wsp_ir::cost::TaskCost)> {
    let file = ws.file_handle(path)?;
    let k = wsp_lower::kernel_ir(ws.db(), ws.file_handle(decl_path)?, name)?;
    let k = &k;
    let arch_name = wsp_core::memory::file_target(ws.db(), file).clone();
    let arch = wsp_arch::Arch::builtin(&arch_name).ok()?;
    let cost = wsp_ir::cost::task_cost(&arch, k, &[]).ok()?;
    Some((arch_name, cost))
}

/// A channel's depth (folded; 1 when not written) and the processes that produce and consume
/// it (in any loaded file).
fn channel_info(ws: &Workspace, d: &Decl, c: &wsp_syntax::ast::ChannelDecl) -> String {
    let name = &c.name.name;
    let consts = ws
        .file_handle(&d.path)
        .map(|f| wsp_core::db::const_values(ws.db(), f).clone())
        .unwrap_or_default();
    let depth = match c
        .args
        .iter()
        .find(|a| a.name.as_ref().is_some_and(|n| n.name == "depth"))
    {
        Some(a) => match wsp_core::types::eval_int(&a.value, &consts) {
            Some(0) => "0 (rendezvous)".to_string(),
            Some(v) => v.to_string(),
            None => "not a constant".to_string(),
        },
        None => "1 (the default)".to_string(),
    };
    let (mut producers, mut consumers) = (Vec::new(), Vec::new());
    let mut files = ws.paths();
    if !files.contains(&d.path) {
        files.push(d.path.clone());
    }
    for p in files {
        for x in decls(ws, &p) {
            if let ItemKind::Process(pr) = &x.item.kind {
                if pr.produces.iter().any(|n| n.name == *name) {
                    producers.push(format!("`{}`", pr.name.name));
                }
                if pr.consumes.iter().any(|n| n.name == *name) {
                    consumers.push(format!("`{}`", pr.name.name));
                }
            }
        }
    }
    let list = |v: &Vec<String>| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    format!(
        "\nchannel `{name}`: depth {depth}; produced by {}; consumed by {}\n",
        list(&producers),
        list(&consumers)
    )
}

/// Each directive of a schedule: how it is written, and how every backend treats the form
/// used (enforced, recorded, diagnosed or unsupported, with the reason), the checked target
/// (`wsp check --target`) first when one is set.
fn schedule_info(ws: &Workspace, src: &str, d: &Decl, sc: &wsp_syntax::ast::Schedule) -> String {
    use wsp_arch::capabilities as caps;
    let mut out =
        String::from("\n| directive | form | sim | ascend | aie |\n|---|---|---|---|---|\n");
    let target = ws.target().and_then(|t| t.backend());
    let mut notes = Vec::new();
    for dir in &sc.directives {
        let name = dir.name.name.as_str();
        let written = src
            .get(d.range.0 + dir.span.start as usize..d.range.0 + dir.span.end as usize)
            .unwrap_or(name)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let policy = dir.args.first().and_then(|a| match &a.value.kind {
            wsp_syntax::ast::ExprKind::Name(n) => Some(n.name.clone()),
            wsp_syntax::ast::ExprKind::Call { callee, .. } => match &callee.kind {
                wsp_syntax::ast::ExprKind::Name(n) => Some(n.name.clone()),
                _ => None,
            },
            _ => None,
        });
        let key = if matches!(name, "dispatch" | "timing" | "ready") {
            policy
                .as_deref()
                .and_then(|p| wsp_vocab::schedule::capability_key(name, Some(p)))
        } else {
            wsp_vocab::schedule::capability_key(name, None)
        };
        let help = wsp_core::check::directive_help(name).replace('|', "\\|");
        let cells: Vec<String> = match key.and_then(caps::capability) {
            Some(cap) => caps::Backend::ALL
                .iter()
                .map(|b| {
                    let e = cap.on(*b);
                    if !e.reason.is_empty() && (target.is_none() || target == Some(*b)) {
                        notes.push(format!("- `{written}` on {}: {}", b.name(), e.reason));
                    }
                    let mark = if target == Some(*b) { " (target)" } else { "" };
                    format!("{}{mark}", e.support.name())
                })
                .collect(),
            None => vec!["?".into(), "?".into(), "?".into()],
        };
        out.push_str(&format!(
            "| `{}` | {help} | {} |\n",
            written.replace('|', "\\|"),
            cells.join(" | ")
        ));
    }
    if !notes.is_empty() {
        out.push('\n');
        out.push_str(&notes.join("\n"));
        out.push('\n');
    }
    out
}

/// A document symbol: name, kind, item range, name range (byte offsets).
pub type Symbol = (String, lsp::SymbolKind, (usize, usize), (usize, usize));

/// Document symbols: one per named item.
pub fn symbols(ws: &Workspace, path: &str) -> Vec<Symbol> {
    decls(ws, path)
        .into_iter()
        .filter_map(|d| {
            let kind = match &d.item.kind {
                ItemKind::Const(_) | ItemKind::Param(_) => lsp::SymbolKind::CONSTANT,
                ItemKind::Axis(_) => lsp::SymbolKind::ENUM,
                ItemKind::Tensor(_) => lsp::SymbolKind::VARIABLE,
                ItemKind::Kernel(_) => lsp::SymbolKind::FUNCTION,
                ItemKind::Workload(_) | ItemKind::Process(_) => lsp::SymbolKind::CLASS,
                ItemKind::Channel(_) => lsp::SymbolKind::EVENT,
                ItemKind::Schedule(_) => lsp::SymbolKind::OBJECT,
                _ => return None,
            };
            Some((d.item.name()?.name.clone(), kind, d.range, d.name))
        })
        .collect()
}

/// Whether a workspace-symbol query matches a name: its characters appear in order in the name,
/// ignoring case (`wsym` matches `workspace_symbol`); an empty query matches everything.
pub fn query_matches(query: &str, name: &str) -> bool {
    let mut it = name.chars().flat_map(char::to_lowercase);
    query
        .chars()
        .flat_map(char::to_lowercase)
        .all(|q| it.any(|c| c == q))
}

/// Workspace symbols: the named items of every loaded user file matching `query`, as `(path,
/// symbol)`, by file then source order.
pub fn workspace_symbols(ws: &Workspace, query: &str) -> Vec<(String, Symbol)> {
    let mut out = Vec::new();
    for p in ws.paths() {
        for s in symbols(ws, &p) {
            if query_matches(query, &s.0) {
                out.push((p.clone(), s));
            }
        }
    }
    out
}

/// Where the explanation of a diagnostic code is published: `$WSP_EXPLANATIONS_URL/<CODE>.md`
/// when that is set (e.g. a repository's web view of `compiler/diagnostics/explanations`),
/// else the `file://` URL of `compiler/diagnostics/explanations/<CODE>.md` in the source tree
/// the server was built from, when it exists. `None` for codes without an explanation.
pub fn explanation_url(code: &str) -> Option<lsp::Uri> {
    static BASE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    wsp_diagnostics::explain(code)?;
    let base = BASE.get_or_init(|| {
        if let Some(base) = std::env::var_os("WSP_EXPLANATIONS_URL") {
            return Some(base.to_string_lossy().trim_end_matches('/').to_string());
        }
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../compiler/diagnostics/explanations")
            .canonicalize()
            .ok()?;
        Some(lsp::Uri::from_file_path(dir)?.as_str().to_string())
    });
    format!("{}/{code}.md", base.as_ref()?).parse().ok()
}

/// Quick fixes: the machine-applicable fixes of the diagnostics overlapping a range, as
/// `(title, path → edits (byte range, replacement))`.
#[allow(clippy::type_complexity)]
pub fn fixes(
    ws: &Workspace,
    path: &str,
    start: usize,
    end: usize,
) -> Vec<(
    String,
    String,
    BTreeMap<String, Vec<((usize, usize), String)>>,
)> {
    let mut out = Vec::new();
    for d in ws.check(path) {
        let (s, e) = (d.primary.span.start as usize, d.primary.span.end as usize);
        if d.primary.file.as_str() != path || e < start || s > end {
            continue;
        }
        for f in &d.fixes {
            let mut edits: BTreeMap<String, Vec<((usize, usize), String)>> = BTreeMap::new();
            for ed in &f.edits {
                edits
                    .entry(ed.file.as_str().to_string())
                    .or_default()
                    .push((
                        (ed.span.start as usize, ed.span.end as usize),
                        ed.replacement.clone(),
                    ));
            }
            out.push((f.title.clone(), d.code.to_string(), edits));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(
        range: Option<((u32, u32), (u32, u32))>,
        text: &str,
    ) -> lsp::TextDocumentContentChangeEvent {
        lsp::TextDocumentContentChangeEvent {
            range: range.map(|((l0, c0), (l1, c1))| {
                lsp::Range::new(lsp::Position::new(l0, c0), lsp::Position::new(l1, c1))
            }),
            range_length: None,
            text: text.to_string(),
        }
    }

    #[test]
    fn incremental_changes_apply_in_order() {
        let t = "kernel k() {\n    y = x\n}\n";
        // Insert, then delete on the text the insertion left; positions in UTF-16 units.
        let out = apply_changes(
            Some(t),
            vec![
                change(Some(((1, 9), (1, 9))), " * \u{1F600}"),
                change(Some(((1, 12), (1, 14))), "2.0"),
            ],
        );
        assert_eq!(out, "kernel k() {\n    y = x * 2.0\n}\n");
        // A change spanning lines, one past the end (clamped), and a whole-text replacement.
        let out = apply_changes(Some(t), vec![change(Some(((0, 11), (2, 1))), "{}")]);
        assert_eq!(out, "kernel k() {}\n");
        let out = apply_changes(Some(t), vec![change(Some(((9, 0), (9, 5))), "// end\n")]);
        assert_eq!(out, format!("{t}// end\n"));
        let out = apply_changes(
            Some(t),
            vec![
                change(None, "const N = 1\n"),
                change(Some(((0, 10), (0, 11))), "2"),
            ],
        );
        assert_eq!(out, "const N = 2\n");
        assert_eq!(
            apply_changes(None, vec![change(Some(((0, 0), (0, 0))), "x")]),
            "x"
        );
        // Offsets agree with the line index's for every position, whatever the line endings.
        for t in ["a\r\nbc\rd\n\u{1F600}é\n", "", "\n\n", "x"] {
            let idx = LineIndex::new(t);
            for line in 0..5 {
                for ch in 0..5 {
                    let p = lsp::Position::new(line, ch);
                    assert_eq!(offset_at(t, p), idx.offset(p), "{t:?} {p:?}");
                }
            }
        }
    }

    #[test]
    fn positions_round_trip_with_utf16() {
        let t = "ab\n\u{1F600}x\n";
        let i = LineIndex::new(t);
        let p = i.position(7); // after the emoji (4 bytes) on line 1
        assert_eq!(p, lsp::Position::new(1, 2));
        assert_eq!(i.offset(p), 7);
        assert_eq!(
            i.offset(lsp::Position::new(1, 1)),
            7,
            "inside a surrogate pair clamps"
        );
        assert_eq!(i.offset(lsp::Position::new(9, 9)), t.len());
        assert_eq!(i.offset(lsp::Position::new(0, 99)), 2);
        assert_eq!(i.position(999), lsp::Position::new(2, 0));
    }

    const SRC: &str = "axis rows = Dense[4]\ninput X: f32[4, 8, 8] = random(seed: 1)\noutput Y: f32[4, 8, 8]\n/// doubles a tile\nkernel double(x: in f32[8, 8], y: out f32[8, 8]) {\n    y = x * 2.0\n}\nworkload w {\n    for i in P(rows) { double[i](x: X[i], y: Y[i]) }\n}\n";

    fn ws() -> Workspace {
        let mut ws = Workspace::new();
        ws.set_file("a.wsp", SRC.to_string());
        ws
    }

    #[test]
    fn hover_shows_declaration_doc_type_and_footprint() {
        let ws = ws();
        let at = SRC.find("double[i]").unwrap() + 2;
        let (h, _) = hover(&ws, "a.wsp", at).unwrap();
        assert!(
            h.contains("kernel double(x: in f32[8, 8], y: out f32[8, 8])"),
            "{h}"
        );
        assert!(h.contains("doubles a tile"), "{h}");
        assert!(h.contains("UB 512 / 196,608 B"), "{h}");
        // 8×8 f32 multiply on ascend910b, one tile in and one out: the figure the simulator
        // prices the whole program's kernel with.
        let program = wsp_lower::lower(&ws, "a.wsp").expect("lowers");
        let k = program.kernels.iter().find(|k| k.name == "double").unwrap();
        let arch = wsp_arch::Arch::builtin("ascend910b").unwrap();
        let c = wsp_ir::cost::task_cost(&arch, k, &[]).unwrap();
        assert!(c.compute > 0);
        assert!(
            h.contains(&format!(
                "estimated per task on ascend910b: {} cycles of compute, 256 B loaded, 256 B stored",
                c.compute
            )),
            "{h}"
        );
        let at = SRC.find("workload w").unwrap() + 9;
        let (h, _) = hover(&ws, "a.wsp", at).unwrap();
        assert!(h.contains("Workload["), "{h}");
        assert!(hover(&ws, "a.wsp", 0).is_none(), "keywords have no hover");
    }

    const RICH: &str = "const N = 8\naxis rows = Dense[N / 2]\ninput X: f32[4, N, N] = random(seed: 1)\noutput Y: f32[4, 8, 8]\nkernel double(x: in f32[8, 8], y: out f32[8, 8]) {\n    let X = x * 2.0\n    y = X\n}\nchannel c: Channel[depth: 2]\nprocess prod produces c {\n    for i in P.seq(rows) { send c, double[i](x: X[i], y: Y[i]) }\n}\nprocess cons consumes c {\n    consume c as j { }\n}\nworkload w = connect(prod, cons)\nschedule s = w .dispatch(round_robin(4)) .task_window(8)\n";

    fn rich_hover(needle: &str, plus: usize) -> String {
        let mut ws = Workspace::new();
        ws.set_file("r.wsp", RICH.to_string());
        let at = RICH.find(needle).unwrap_or_else(|| panic!("{needle}")) + plus;
        hover(&ws, "r.wsp", at).map(|h| h.0).unwrap_or_default()
    }

    #[test]
    fn hover_of_local_tiles_shadows_items_and_names_the_buffer() {
        for needle in ["X = x", "X\n}"] {
            let h = rich_hover(needle, 0);
            assert!(h.contains("let X: f32[8, 8]"), "{h}");
            assert!(
                h.contains("tile of kernel `double`: f32[8, 8], 256 B"),
                "{h}"
            );
            assert!(h.contains("lives in UB on ascend910b"), "{h}");
            assert!(!h.contains("input X"), "the tensor must not show: {h}");
        }
        let h = rich_hover("x * 2.0", 0);
        assert!(
            h.contains("x: in f32[8, 8]") && h.contains("parameter of kernel `double`"),
            "{h}"
        );
        assert!(
            !h.contains("stored as"),
            "an `in` tile is not stored to: {h}"
        );
        // An `out` tile says how an assigned value is stored: the one implicit conversion.
        let h = rich_hover("y = X", 0);
        assert!(
            h.contains("a value assigned to it is stored as f32 (converted as `cast` converts)"),
            "{h}"
        );
        let h = rich_hover("i in P.seq", 0);
        assert!(h.contains("local `i` of process `prod`"), "{h}");
    }

    #[test]
    fn hover_of_a_local_tensor_shows_its_type_and_bytes() {
        let src = "axis rows = Dense[4]\ninput X: f32[4, 8, 8] = random(seed: 1)\noutput Y: f32[4, 8, 8]\nkernel double(x: in f32[8, 8], y: out f32[8, 8]) {\n    y = x * 2.0\n}\nworkload w {\n    for i in P(rows) {\n        let H: f32[8, 8] = scratch()\n        double[i](x: X[i], y: H)\n        double[i](x: H, y: Y[i])\n    }\n}\n";
        let mut ws = Workspace::new();
        ws.set_file("a.wsp", src.to_string());
        let at = src.find("x: H").expect("use") + 3;
        let (h, _) = hover(&ws, "a.wsp", at).expect("a hover");
        assert!(h.contains("let H: f32[8, 8] = scratch()"), "{h}");
        assert!(
            h.contains("local tensor of workload `w` (256 bytes)"),
            "{h}"
        );
        // Its definition is the `let`'s name.
        let def = crate::features::local_tensor_definition(&ws, "a.wsp", "H", at).expect("def");
        assert_eq!(&src[def.0..def.1], "H");
        assert_eq!(def.0, src.find("let H").expect("let") + 4);
    }

    #[test]
    fn hover_of_views_tensors_axes_constants_channels_schedules() {
        // The view at a task call: its shape against the parameter's.
        let h = rich_hover("X[i]", 0);
        assert!(h.contains("input X: f32[4, N, N]"), "{h}");
        assert!(h.contains("`X: f32[4, 8, 8]`"), "constants folded: {h}");
        assert!(h.contains("view `X[i]`: f32[8, 8]"), "{h}");
        assert!(
            h.contains("parameter `x` of kernel `double`: f32[8, 8]"),
            "{h}"
        );
        let h = rich_hover("rows)", 0);
        assert!(h.contains("`rows: Dense[4]`"), "{h}");
        let h = rich_hover("N, N]", 0);
        assert!(h.contains("`N = 8`"), "{h}");
        let h = rich_hover("c, double", 0);
        assert!(
            h.contains("channel `c`: depth 2; produced by `prod`; consumed by `cons`"),
            "{h}"
        );
        let h = rich_hover("schedule s", 9);
        assert!(h.contains("| `.dispatch(round_robin(4))` |"), "{h}");
        assert!(h.contains("round_robin(n)"), "directive help: {h}");
        assert!(h.contains("| enforced | enforced | diagnosed |"), "{h}");
        assert!(h.contains("AIE placement is static"), "reason: {h}");
        assert!(h.contains("task_window"), "{h}");
    }

    #[test]
    fn codes_link_to_their_explanation() {
        let mut ws = ws();
        ws.set_file("a.wsp", SRC.replace("y: Y[i]", "y: Yy[i]"));
        let d = diagnostics(&ws, "a.wsp", &|_| None);
        let href = d[0]
            .code_description
            .as_ref()
            .map(|c| c.href.as_str().to_string())
            .unwrap_or_default();
        assert!(
            href.starts_with("file://")
                && href.ends_with("/compiler/diagnostics/explanations/E0101.md"),
            "{href}"
        );
        assert!(explanation_url("E9999").is_none());
    }

    #[test]
    fn workspace_symbols_filter_by_query() {
        let mut ws = ws();
        ws.set_file(
            "b.wsp",
            "kernel twice(x: in f32[8, 8], y: out f32[8, 8]) {\n    y = x\n}\n".to_string(),
        );
        let all = workspace_symbols(&ws, "");
        assert_eq!(
            all.len(),
            6,
            "{:?}",
            all.iter().map(|s| &s.1 .0).collect::<Vec<_>>()
        );
        let names: Vec<(String, String)> = workspace_symbols(&ws, "DBL")
            .into_iter()
            .chain(workspace_symbols(&ws, "tw"))
            .map(|(p, s)| (p, s.0))
            .collect();
        assert_eq!(
            names,
            [
                ("a.wsp".into(), "double".into()),
                ("b.wsp".into(), "twice".into())
            ]
        );
        assert!(workspace_symbols(&ws, "zz").is_empty());
    }

    #[test]
    fn diagnostics_and_symbols() {
        let mut ws = ws();
        ws.set_file("a.wsp", SRC.replace("y: Y[i]", "y: Yy[i]"));
        let d = diagnostics(&ws, "a.wsp", &|_| None);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, Some(lsp::NumberOrString::String("E0101".into())));
        let names: Vec<String> = symbols(&ws, "a.wsp").into_iter().map(|s| s.0).collect();
        assert_eq!(names, ["rows", "X", "Y", "double", "w"]);
    }
}
