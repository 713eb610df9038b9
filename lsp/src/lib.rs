//! `wsp lsp`: the language server. It owns one [`Workspace`] (the same salsa database `wsp
//! check` uses), so the editor shows exactly what CI shows. It never runs user code: it links
//! no JIT, runtime or simulator.
//!
//! Concurrency: the workspace sits behind a mutex. A request holds it only to take a snapshot
//! of the database, and answers from the snapshot on its own thread; an edit takes the mutex,
//! which cancels the queries of every snapshot (they unwind; long loops between queries check
//! now and then) and waits for them to be dropped, so a long request never holds up an edit:
//! it answers ContentModified instead. Edits are applied at once and checked at once (a burst
//! of edits is checked once after a short wait); only the newest edit publishes, and only for
//! the edited file and the open files whose diagnostics changed.
//! Every handler runs under `catch_unwind`: a panic becomes an error reply (or a log message
//! for notifications) and the server keeps serving.

pub mod analysis;
pub mod features;
pub mod framing;

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer, LspService, Server};
use wsp_core::Workspace;
use wsp_diagnostics::FileName;

use analysis::LineIndex;

/// An edit that arrives while the previous edit's check is still pending is part of a burst
/// (a paste, a script, keys queued behind a slow request): the server waits this long and
/// checks once for the whole burst. Any other edit (typing) is checked at once: a re-check
/// after a one-line edit takes a few milliseconds (docs/perf.md), so a fixed debounce would
/// only add latency.
const BURST_DEBOUNCE: Duration = Duration::from_millis(30);

/// What a request reads: a snapshot of the workspace ([`Workspace::snapshot`]).
struct Snap {
    ws: Workspace,
}

struct State {
    ws: Workspace,
    /// Open documents: workspace path → URI.
    open: BTreeMap<String, Uri>,
    /// The diagnostics last published per open document, so that an edit republishes only
    /// the edited document and those whose diagnostics changed.
    published: BTreeMap<String, Vec<Diagnostic>>,
}

impl State {
    /// Applies the client's settings — `{"arch": NAME, "target": "sim" | "ascend" | "aie",
    /// "strict": bool, "lints": ["narrowing"]}`, at the top level, under `"wsp"` or under `"wsp"."check"` (VS Code's
    /// `wsp.check.*` section; initialization options, or `workspace/didChangeConfiguration`)
    /// — as `wsp check --arch/--target/--strict` would. Returns the problems with the
    /// settings (unknown names); the rest still applies.
    fn configure(&mut self, settings: &LSPAny) -> Vec<String> {
        let v = settings.get("wsp").unwrap_or(settings);
        let v = v.get("check").unwrap_or(v);
        let mut problems = Vec::new();
        let text = |key: &str| {
            v.get(key)
                .and_then(|x| x.as_str())
                .filter(|s| !s.is_empty())
        };
        if v.get("arch").is_some() {
            if let Err(e) = self.ws.set_arch(text("arch")) {
                problems.push(format!("wsp lsp: setting `arch`: {e}"));
            }
        }
        if v.get("target").is_some() || v.get("strict").is_some() {
            let strict = v.get("strict").and_then(|x| x.as_bool()).unwrap_or(false);
            if let Err(e) = self.ws.set_target(text("target"), strict) {
                problems.push(format!("wsp lsp: setting `target`: {e}"));
            }
        }
        if let Some(l) = v.get("lints") {
            // `["narrowing"]`, as `wsp check --warn narrowing`.
            let names: Vec<&str> = l
                .as_array()
                .map(|a| a.iter().filter_map(|x| x.as_str()).collect())
                .unwrap_or_default();
            if let Err(e) = self.ws.set_lints(&names) {
                problems.push(format!("wsp lsp: setting `lints`: {e}"));
            }
        }
        problems
    }

    /// Reads files imported by loaded files from disk until the import graph is closed.
    fn load_imports(&mut self) {
        self.ws
            .load_imports(|m| wsp_ir::fsio::read_module(std::path::Path::new(m)));
    }

    /// [`State::load_imports`] for the imports of `path`, just edited: the other files'
    /// imports are as they were (asking every file again cost a pass over every file's items
    /// on every keystroke).
    fn load_imports_of(&mut self, path: &str) {
        self.ws.load_imports_of(&[path.to_string()], |m| {
            wsp_ir::fsio::read_module(std::path::Path::new(m))
        });
    }
}

/// The language server.
pub struct Backend {
    client: Client,
    state: Arc<Mutex<State>>,
    generation: Arc<AtomicU64>,
    /// The newest generation whose publication task has finished (burst detection).
    finished: Arc<AtomicU64>,
    /// Testing hook: `WSP_LSP_INJECT_PANIC=1` makes every handler panic before doing its work,
    /// `WSP_LSP_INJECT_PANIC=codeAction,inlayHint` only the named ones, to prove that panics
    /// are contained and the server keeps serving.
    inject_panic: Option<Vec<String>>,
    /// Edits per document (open, change, close), counted before they are applied: a request
    /// whose document's count moved while it ran answers `ContentModified`.
    edits: Arc<Mutex<BTreeMap<String, u64>>>,
    /// Testing hook: `WSP_LSP_REQUEST_DELAY_MS=n` makes every document request wait n ms
    /// before it starts, so that a test can change the document meanwhile.
    request_delay: Option<Duration>,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The workspace path of a URI: the file-system path, relative to the current directory when
/// it lies inside it (so imports resolve as they do for `wsp check`).
fn path_of(uri: &Uri) -> String {
    match uri.to_file_path() {
        Some(p) => {
            let p: PathBuf = p.into_owned();
            let cwd = std::env::current_dir().ok();
            let rel = cwd
                .as_deref()
                .and_then(|c| p.strip_prefix(c).ok())
                .map(Path::to_path_buf)
                .unwrap_or(p);
            rel.to_string_lossy().replace('\\', "/")
        }
        None => uri.as_str().to_string(),
    }
}

fn uri_of(path: &str) -> Option<Uri> {
    if path.starts_with("std/") {
        return None;
    }
    let p = Path::new(path);
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(p)
    };
    Uri::from_file_path(abs)
}

fn internal(what: &str) -> Error {
    Error {
        code: ErrorCode::InternalError,
        message: format!(
            "wsp lsp: internal error while answering {what}; the server keeps running"
        )
        .into(),
        data: None,
    }
}

impl Backend {
    pub fn new(client: Client) -> Backend {
        Backend {
            client,
            state: Arc::new(Mutex::new(State {
                ws: Workspace::new(),
                open: BTreeMap::new(),
                published: BTreeMap::new(),
            })),
            generation: Arc::new(AtomicU64::new(0)),
            finished: Arc::new(AtomicU64::new(0)),
            inject_panic: std::env::var("WSP_LSP_INJECT_PANIC")
                .ok()
                .filter(|v| !v.is_empty() && v != "0")
                .map(|v| v.split(',').map(|s| s.trim().to_string()).collect()),
            edits: Arc::new(Mutex::new(BTreeMap::new())),
            request_delay: std::env::var("WSP_LSP_REQUEST_DELAY_MS")
                .ok()
                .and_then(|v| v.parse().ok())
                .map(Duration::from_millis),
        }
    }

    /// How many edits `path` has had.
    fn edit_count(&self, path: &str) -> u64 {
        let m = self.edits.lock().unwrap_or_else(|e| e.into_inner());
        m.get(path).copied().unwrap_or(0)
    }

    /// Counts an edit of `uri`'s document (before it is applied).
    fn count_edit(&self, uri: &Uri) {
        let mut m = self.edits.lock().unwrap_or_else(|e| e.into_inner());
        *m.entry(path_of(uri)).or_default() += 1;
    }

    /// [`Backend::with`] for a request about the document `uri`: when the document changed
    /// while the request ran, the answer (computed for the old text) is dropped and the
    /// request answers `ContentModified`, for the client to ask again.
    async fn with_doc<T: Send + 'static>(
        &self,
        what: &str,
        uri: Uri,
        f: impl FnOnce(&Snap) -> T + Send + 'static,
    ) -> Result<T> {
        let path = path_of(&uri);
        let before = self.edit_count(&path);
        let modified = || Error {
            code: ErrorCode::ContentModified,
            message: format!("wsp lsp: the document changed while answering {what}; ask again")
                .into(),
            data: None,
        };
        // The mutex is held only while the snapshot is taken.
        let snap = Snap {
            ws: self.with(what, |st| st.ws.snapshot())?,
        };
        let (delay, inject, name) = (self.request_delay, self.injects(what), what.to_string());
        let answer = move || {
            catch_unwind(AssertUnwindSafe(|| {
                if inject {
                    panic!("injected panic in {name}");
                }
                if let Some(d) = delay {
                    // A slow request (tests): it holds its snapshot, and yields to an edit
                    // as a long computation does.
                    let t0 = std::time::Instant::now();
                    while t0.elapsed() < d {
                        std::thread::sleep(Duration::from_millis(5));
                        snap.ws.unwind_if_cancelled();
                    }
                }
                f(&snap)
            }))
        };
        // On a thread of its own: the server goes on reading messages (an edit) meanwhile.
        let r = tokio::task::spawn_blocking(answer)
            .await
            .map_err(|_| internal(what))?;
        match r {
            Err(p) if wsp_core::is_cancelled(&*p) => Err(modified()),
            Err(_) => Err(internal(what)),
            Ok(_) if self.edit_count(&path) != before => Err(modified()),
            Ok(v) => Ok(v),
        }
    }

    /// Whether a panic is injected into request `what` (tests: `WSP_LSP_INJECT_PANIC`).
    fn injects(&self, what: &str) -> bool {
        self.inject_panic
            .as_ref()
            .is_some_and(|l| l.iter().any(|n| n == "1" || n == what))
    }

    /// Runs `f` on the state, containing panics.
    fn with<T>(&self, what: &str, f: impl FnOnce(&mut State) -> T) -> Result<T> {
        let inject = self.injects(what);
        catch_unwind(AssertUnwindSafe(|| {
            if inject {
                panic!("injected panic in {what}");
            }
            let mut st = lock(&self.state);
            f(&mut st)
        }))
        .map_err(|_| internal(what))
    }

    /// At once (after [`BURST_DEBOUNCE`] in a burst), unless a newer edit came: publishes the
    /// diagnostics of `edited` (always, first) and of every other open file whose diagnostics
    /// changed.
    fn schedule_publish(&self, edited: String, opened: bool) {
        let gen = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let burst = self.finished.load(Ordering::SeqCst) + 1 < gen;
        let (client, state, generation, finished) = (
            self.client.clone(),
            self.state.clone(),
            self.generation.clone(),
            self.finished.clone(),
        );
        tokio::spawn(async move {
            if burst {
                tokio::time::sleep(BURST_DEBOUNCE).await;
            } else {
                tokio::task::yield_now().await;
            }
            if generation.load(Ordering::SeqCst) != gen {
                finished.fetch_max(gen, Ordering::SeqCst);
                return;
            }
            // Checked on a snapshot, without the mutex: an edit meanwhile cancels the check
            // (its own publish follows) instead of waiting for it.
            let st = state.clone();
            let work = tokio::task::spawn_blocking(move || {
                catch_unwind(AssertUnwindSafe(|| {
                    let (ws, open, published) = {
                        let g = lock(&st);
                        (g.ws.snapshot(), g.open.clone(), g.published.clone())
                    };
                    let order = open
                        .iter()
                        .filter(|(p, _)| **p == edited)
                        .chain(open.iter().filter(|(p, _)| **p != edited));
                    let mut out = Vec::new();
                    for (p, u) in order {
                        // Editing a file changes the diagnostics of files that import it,
                        // and of no others (a new file may resolve someone's import: check
                        // all).
                        let affected = *p == edited
                            || !published.contains_key(p)
                            || opened
                            || analysis::imports_transitively(&ws, p, &edited);
                        if !affected {
                            continue;
                        }
                        let d = analysis::diagnostics(&ws, p, &uri_of);
                        if *p == edited || published.get(p) != Some(&d) {
                            out.push((p.clone(), u.clone(), d));
                        }
                    }
                    out
                }))
            })
            .await;
            match work {
                Ok(Ok(batch)) => {
                    // Published only if no newer edit came meanwhile (that edit's check
                    // publishes what changed since what the client has: `published`).
                    let current = {
                        let mut g = lock(&state);
                        let current = generation.load(Ordering::SeqCst) == gen;
                        if current {
                            for (p, _, d) in &batch {
                                g.published.insert(p.clone(), d.clone());
                            }
                        }
                        current
                    };
                    if current {
                        for (_, uri, diags) in batch {
                            client.publish_diagnostics(uri, diags, None).await;
                        }
                    }
                }
                Ok(Err(p)) if wsp_core::is_cancelled(&*p) => {}
                _ => {
                    client
                        .log_message(MessageType::ERROR, "wsp lsp: internal error while checking")
                        .await
                }
            }
            finished.fetch_max(gen, Ordering::SeqCst);
        });
    }

    async fn notify_failure(&self, r: Result<()>) {
        if let Err(e) = r {
            self.client.log_message(MessageType::ERROR, e.message).await;
        }
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, p: InitializeParams) -> Result<InitializeResult> {
        if let Some(opts) = &p.initialization_options {
            let problems = self.with("initialize", |st| st.configure(opts))?;
            for m in problems {
                self.client.show_message(MessageType::ERROR, m).await;
            }
        }
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                text_document_sync: Some(TextDocumentSyncCapability::Kind(
                    TextDocumentSyncKind::INCREMENTAL,
                )),
                hover_provider: Some(HoverProviderCapability::Simple(true)),
                definition_provider: Some(OneOf::Left(true)),
                document_symbol_provider: Some(OneOf::Left(true)),
                document_formatting_provider: Some(OneOf::Left(true)),
                code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
                references_provider: Some(OneOf::Left(true)),
                rename_provider: Some(OneOf::Right(RenameOptions {
                    prepare_provider: Some(true),
                    work_done_progress_options: Default::default(),
                })),
                completion_provider: Some(CompletionOptions {
                    trigger_characters: Some(vec![".".into(), ":".into(), "(".into(), ",".into()]),
                    ..Default::default()
                }),
                signature_help_provider: Some(SignatureHelpOptions {
                    trigger_characters: Some(vec!["(".into(), ",".into()]),
                    retrigger_characters: None,
                    work_done_progress_options: Default::default(),
                }),
                inlay_hint_provider: Some(OneOf::Left(true)),
                semantic_tokens_provider: Some(
                    SemanticTokensServerCapabilities::SemanticTokensOptions(
                        SemanticTokensOptions {
                            legend: SemanticTokensLegend {
                                token_types: features::TOKEN_TYPES.to_vec(),
                                token_modifiers: Vec::new(),
                            },
                            full: Some(SemanticTokensFullOptions::Bool(true)),
                            range: None,
                            work_done_progress_options: Default::default(),
                        },
                    ),
                ),
                folding_range_provider: Some(FoldingRangeProviderCapability::Simple(true)),
                document_highlight_provider: Some(OneOf::Left(true)),
                workspace_symbol_provider: Some(OneOf::Left(true)),
                ..Default::default()
            },
            server_info: Some(ServerInfo {
                name: "wsp".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            ..Default::default()
        })
    }

    async fn shutdown(&self) -> Result<()> {
        SHUT_DOWN.store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }

    async fn did_change_configuration(&self, p: DidChangeConfigurationParams) {
        let r = self.with("didChangeConfiguration", |st| st.configure(&p.settings));
        match r {
            Ok(problems) => {
                for m in problems {
                    self.client.show_message(MessageType::ERROR, m).await;
                }
            }
            Err(e) => self.notify_failure(Err(e)).await,
        }
        // Every open file's diagnostics may change (buffers, capabilities).
        self.schedule_publish(String::new(), true);
    }

    async fn did_open(&self, p: DidOpenTextDocumentParams) {
        self.count_edit(&p.text_document.uri);
        let r = self.with("didOpen", |st| {
            let path = path_of(&p.text_document.uri);
            st.ws.set_file(&path, p.text_document.text);
            st.open.insert(path.clone(), p.text_document.uri);
            st.load_imports();
            path
        });
        let edited = r.as_ref().ok().cloned().unwrap_or_default();
        self.notify_failure(r.map(drop)).await;
        self.schedule_publish(edited, true);
    }

    async fn did_change(&self, p: DidChangeTextDocumentParams) {
        self.count_edit(&p.text_document.uri);
        let r = self.with("didChange", |st| {
            let path = path_of(&p.text_document.uri);
            let files = st.ws.paths().len();
            // Incremental sync: each change replaces a range of the text as the previous
            // changes left it (one without a range replaces the whole text).
            if !p.content_changes.is_empty() {
                let current = st.ws.text(&FileName::new(path.as_str()));
                let text = analysis::apply_changes(current.as_deref(), p.content_changes);
                st.ws.set_file(&path, text);
                st.load_imports_of(&path);
            }
            // Newly loaded imports may resolve other files' imports: re-check every file.
            (path, st.ws.paths().len() != files)
        });
        let (edited, loaded) = r.as_ref().ok().cloned().unwrap_or_default();
        self.notify_failure(r.map(drop)).await;
        self.schedule_publish(edited, loaded);
    }

    async fn did_close(&self, p: DidCloseTextDocumentParams) {
        self.count_edit(&p.text_document.uri);
        let r = self.with("didClose", |st| {
            let path = path_of(&p.text_document.uri);
            st.open.remove(&path);
            st.published.remove(&path);
        });
        self.notify_failure(r).await;
        self.client
            .publish_diagnostics(p.text_document.uri, Vec::new(), None)
            .await;
    }

    async fn hover(&self, p: HoverParams) -> Result<Option<Hover>> {
        self.with_doc(
            "hover",
            p.text_document_position_params.text_document.uri.clone(),
            move |st| {
                let path = path_of(&p.text_document_position_params.text_document.uri);
                let text = st.ws.text(&FileName::new(path.as_str()))?;
                let idx = LineIndex::new(&text);
                let at = idx.offset(p.text_document_position_params.position);
                let (md, (s, e)) = analysis::hover(&st.ws, &path, at)?;
                Some(Hover {
                    contents: HoverContents::Markup(MarkupContent {
                        kind: MarkupKind::Markdown,
                        value: md,
                    }),
                    range: Some(idx.range(s, e)),
                })
            },
        )
        .await
    }

    async fn goto_definition(
        &self,
        p: GotoDefinitionParams,
    ) -> Result<Option<GotoDefinitionResponse>> {
        self.with_doc(
            "definition",
            p.text_document_position_params.text_document.uri.clone(),
            move |st| {
                let path = path_of(&p.text_document_position_params.text_document.uri);
                let text = st.ws.text(&FileName::new(path.as_str()))?;
                let at = LineIndex::new(&text).offset(p.text_document_position_params.position);
                let (name, _, _) = analysis::ident_at(&text, at)?;
                if let Some((s, e)) =
                    crate::features::local_tensor_definition(&st.ws, &path, &name, at)
                {
                    let uri = uri_of(&path)?;
                    let range = LineIndex::new(&text).range(s, e);
                    return Some(GotoDefinitionResponse::Scalar(Location::new(uri, range)));
                }
                let d = analysis::find_decl(&st.ws, &path, &name)?;
                let target = st.ws.text(&FileName::new(d.path.as_str()))?;
                let uri = uri_of(&d.path)?;
                let range = LineIndex::new(&target).range(d.name.0, d.name.1);
                Some(GotoDefinitionResponse::Scalar(Location::new(uri, range)))
            },
        )
        .await
    }

    async fn document_symbol(
        &self,
        p: DocumentSymbolParams,
    ) -> Result<Option<DocumentSymbolResponse>> {
        self.with_doc("documentSymbol", p.text_document.uri.clone(), move |st| {
            let path = path_of(&p.text_document.uri);
            let text = st.ws.text(&FileName::new(path.as_str()))?;
            let idx = LineIndex::new(&text);
            #[allow(deprecated)]
            let syms = analysis::symbols(&st.ws, &path)
                .into_iter()
                .map(|(name, kind, range, sel)| DocumentSymbol {
                    name,
                    detail: None,
                    kind,
                    tags: None,
                    deprecated: None,
                    range: idx.range(range.0, range.1),
                    selection_range: idx.range(sel.0, sel.1),
                    children: None,
                })
                .collect();
            Some(DocumentSymbolResponse::Nested(syms))
        })
        .await
    }

    async fn formatting(&self, p: DocumentFormattingParams) -> Result<Option<Vec<TextEdit>>> {
        let r = self
            .with_doc("formatting", p.text_document.uri.clone(), move |st| {
                let path = path_of(&p.text_document.uri);
                let text = st.ws.text(&FileName::new(path.as_str()))?;
                let idx = LineIndex::new(&text);
                Some(match wsp_fmt::format(&text) {
                    Ok(out) if out == *text => Ok(Vec::new()),
                    Ok(out) => Ok(vec![TextEdit::new(idx.range(0, text.len()), out)]),
                    Err(e) => Err(e.to_string()),
                })
            })
            .await?;
        match r {
            None => Ok(None),
            Some(Ok(edits)) => Ok(Some(edits)),
            Some(Err(msg)) => {
                self.client
                    .show_message(MessageType::WARNING, format!("wsp fmt: {msg}"))
                    .await;
                Ok(None)
            }
        }
    }

    async fn code_action(&self, p: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        self.with_doc("codeAction", p.text_document.uri.clone(), move |st| {
            let path = path_of(&p.text_document.uri);
            let text = st.ws.text(&FileName::new(path.as_str()))?;
            let idx = LineIndex::new(&text);
            let (s, e) = (idx.offset(p.range.start), idx.offset(p.range.end));
            let mut actions = Vec::new();
            for (title, code, edits) in analysis::fixes(&st.ws, &path, s, e) {
                let mut changes = std::collections::HashMap::new();
                for (file, list) in edits {
                    let (Some(uri), Some(t)) =
                        (uri_of(&file), st.ws.text(&FileName::new(file.as_str())))
                    else {
                        continue;
                    };
                    let li = LineIndex::new(&t);
                    let v: Vec<TextEdit> = list
                        .into_iter()
                        .map(|((a, b), r)| TextEdit::new(li.range(a, b), r))
                        .collect();
                    changes.insert(uri, v);
                }
                actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                    title: format!("{title} ({code})"),
                    kind: Some(CodeActionKind::QUICKFIX),
                    edit: Some(WorkspaceEdit {
                        changes: Some(changes),
                        ..Default::default()
                    }),
                    is_preferred: Some(true),
                    ..Default::default()
                }));
            }
            Some(actions)
        })
        .await
    }

    async fn references(&self, p: ReferenceParams) -> Result<Option<Vec<Location>>> {
        self.with_doc(
            "references",
            p.text_document_position.text_document.uri.clone(),
            move |st| {
                let path = path_of(&p.text_document_position.text_document.uri);
                let text = st.ws.text(&FileName::new(path.as_str()))?;
                let at = LineIndex::new(&text).offset(p.text_document_position.position);
                let refs = features::references(&st.ws, &path, at, p.context.include_declaration);
                Some(locations(&st.ws, refs))
            },
        )
        .await
    }

    async fn document_highlight(
        &self,
        p: DocumentHighlightParams,
    ) -> Result<Option<Vec<DocumentHighlight>>> {
        let uri = p.text_document_position_params.text_document.uri.clone();
        self.with_doc("documentHighlight", uri, move |st| {
            let path = path_of(&p.text_document_position_params.text_document.uri);
            let text = st.ws.text(&FileName::new(path.as_str()))?;
            let idx = LineIndex::new(&text);
            let at = idx.offset(p.text_document_position_params.position);
            let hl = features::highlights(&st.ws, &path, at)
                .into_iter()
                .map(|((a, b), decl)| DocumentHighlight {
                    range: idx.range(a, b),
                    kind: Some(if decl {
                        DocumentHighlightKind::WRITE
                    } else {
                        DocumentHighlightKind::READ
                    }),
                })
                .collect();
            Some(hl)
        })
        .await
    }

    async fn symbol(&self, p: WorkspaceSymbolParams) -> Result<Option<WorkspaceSymbolResponse>> {
        self.with("workspaceSymbol", |st| {
            let mut out = Vec::new();
            let mut index: BTreeMap<String, (Uri, std::sync::Arc<str>)> = BTreeMap::new();
            for (path, (name, kind, _, sel)) in analysis::workspace_symbols(&st.ws, &p.query) {
                if !index.contains_key(&path) {
                    let (Some(uri), Some(t)) =
                        (uri_of(&path), st.ws.text(&FileName::new(path.as_str())))
                    else {
                        continue;
                    };
                    index.insert(path.clone(), (uri, t));
                }
                let Some((uri, text)) = index.get(&path) else {
                    continue;
                };
                #[allow(deprecated)]
                out.push(SymbolInformation {
                    name,
                    kind,
                    tags: None,
                    deprecated: None,
                    location: Location::new(uri.clone(), LineIndex::new(text).range(sel.0, sel.1)),
                    container_name: Some(path.clone()),
                });
            }
            Some(WorkspaceSymbolResponse::Flat(out))
        })
    }

    async fn prepare_rename(
        &self,
        p: TextDocumentPositionParams,
    ) -> Result<Option<PrepareRenameResponse>> {
        let r = self
            .with_doc("prepareRename", p.text_document.uri.clone(), move |st| {
                let path = path_of(&p.text_document.uri);
                let text = st.ws.text(&FileName::new(path.as_str()))?;
                let idx = LineIndex::new(&text);
                let at = idx.offset(p.position);
                Some(features::prepare_rename(&st.ws, &path, at).map(|(s, e)| idx.range(s, e)))
            })
            .await?;
        match r {
            None => Ok(None),
            Some(Ok(range)) => Ok(Some(PrepareRenameResponse::Range(range))),
            Some(Err(msg)) => Err(Error::invalid_params(msg)),
        }
    }

    async fn rename(&self, p: RenameParams) -> Result<Option<WorkspaceEdit>> {
        let r = self
            .with_doc(
                "rename",
                p.text_document_position.text_document.uri.clone(),
                move |st| {
                    let path = path_of(&p.text_document_position.text_document.uri);
                    let text = st.ws.text(&FileName::new(path.as_str()))?;
                    let at = LineIndex::new(&text).offset(p.text_document_position.position);
                    Some(
                        features::rename(&st.ws, &path, at, &p.new_name).map(|edits| {
                            let mut changes = std::collections::HashMap::new();
                            for (file, ranges) in edits {
                                let (Some(uri), Some(t)) =
                                    (uri_of(&file), st.ws.text(&FileName::new(file.as_str())))
                                else {
                                    continue;
                                };
                                let li = LineIndex::new(&t);
                                let v: Vec<TextEdit> = ranges
                                    .into_iter()
                                    .map(|(a, b)| TextEdit::new(li.range(a, b), p.new_name.clone()))
                                    .collect();
                                changes.insert(uri, v);
                            }
                            WorkspaceEdit {
                                changes: Some(changes),
                                ..Default::default()
                            }
                        }),
                    )
                },
            )
            .await?;
        match r {
            None => Ok(None),
            Some(Ok(edit)) => Ok(Some(edit)),
            Some(Err(msg)) => Err(Error::invalid_params(msg)),
        }
    }

    async fn completion(&self, p: CompletionParams) -> Result<Option<CompletionResponse>> {
        self.with_doc(
            "completion",
            p.text_document_position.text_document.uri.clone(),
            move |st| {
                let path = path_of(&p.text_document_position.text_document.uri);
                let text = st.ws.text(&FileName::new(path.as_str()))?;
                let at = LineIndex::new(&text).offset(p.text_document_position.position);
                let nearby = modules_next_to(&path);
                let items = features::completion_with(&st.ws, &path, at, &nearby)
                    .into_iter()
                    .map(|(label, kind, detail, insert)| CompletionItem {
                        label,
                        kind: Some(kind),
                        detail: Some(detail),
                        insert_text: Some(insert),
                        ..Default::default()
                    })
                    .collect();
                Some(CompletionResponse::Array(items))
            },
        )
        .await
    }

    async fn signature_help(&self, p: SignatureHelpParams) -> Result<Option<SignatureHelp>> {
        self.with_doc(
            "signatureHelp",
            p.text_document_position_params.text_document.uri.clone(),
            move |st| {
                let path = path_of(&p.text_document_position_params.text_document.uri);
                let text = st.ws.text(&FileName::new(path.as_str()))?;
                let at = LineIndex::new(&text).offset(p.text_document_position_params.position);
                let (label, ranges, active) = features::signature_help(&st.ws, &path, at)?;
                let utf16 = |b: usize| label[..b].encode_utf16().count() as u32;
                let parameters = ranges
                    .iter()
                    .map(|(a, b)| ParameterInformation {
                        label: ParameterLabel::LabelOffsets([utf16(*a), utf16(*b)]),
                        documentation: None,
                    })
                    .collect();
                Some(SignatureHelp {
                    signatures: vec![SignatureInformation {
                        label: label.clone(),
                        documentation: None,
                        parameters: Some(parameters),
                        active_parameter: Some(active),
                    }],
                    active_signature: Some(0),
                    active_parameter: Some(active),
                })
            },
        )
        .await
    }

    async fn inlay_hint(&self, p: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
        self.with_doc("inlayHint", p.text_document.uri.clone(), move |st| {
            let path = path_of(&p.text_document.uri);
            let text = st.ws.text(&FileName::new(path.as_str()))?;
            let idx = LineIndex::new(&text);
            let (s, e) = (idx.offset(p.range.start), idx.offset(p.range.end));
            let hints = features::inlay_hints(&st.ws, &path)
                .into_iter()
                .filter(|(at, _)| s <= *at && *at <= e)
                .map(|(at, label)| InlayHint {
                    position: idx.position(at),
                    label: InlayHintLabel::String(label),
                    kind: Some(InlayHintKind::TYPE),
                    text_edits: None,
                    tooltip: None,
                    padding_left: None,
                    padding_right: None,
                    data: None,
                })
                .collect();
            Some(hints)
        })
        .await
    }

    async fn semantic_tokens_full(
        &self,
        p: SemanticTokensParams,
    ) -> Result<Option<SemanticTokensResult>> {
        self.with_doc("semanticTokens", p.text_document.uri.clone(), move |st| {
            let path = path_of(&p.text_document.uri);
            st.ws.text(&FileName::new(path.as_str()))?;
            Some(SemanticTokensResult::Tokens(SemanticTokens {
                result_id: None,
                data: features::semantic_tokens(&st.ws, &path),
            }))
        })
        .await
    }

    async fn folding_range(&self, p: FoldingRangeParams) -> Result<Option<Vec<FoldingRange>>> {
        self.with_doc("foldingRange", p.text_document.uri.clone(), move |st| {
            let path = path_of(&p.text_document.uri);
            st.ws.text(&FileName::new(path.as_str()))?;
            let ranges = features::folding_ranges(&st.ws, &path)
                .into_iter()
                .map(|(a, b, comment)| FoldingRange {
                    start_line: a,
                    end_line: b,
                    kind: Some(if comment {
                        FoldingRangeKind::Comment
                    } else {
                        FoldingRangeKind::Region
                    }),
                    ..Default::default()
                })
                .collect();
            Some(ranges)
        })
        .await
    }
}

/// The modules next to a file on disk, as `import` names them: `x` for `x.wsp` in its
/// directory, `d.x` for `d/x.wsp` one level down.
fn modules_next_to(path: &str) -> Vec<String> {
    let dir = Path::new(path).parent().unwrap_or(Path::new(""));
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let mut out = Vec::new();
    let scan = |d: &Path, prefix: &str, deeper: bool, out: &mut Vec<String>| {
        let Ok(rd) = std::fs::read_dir(d) else {
            return Vec::new();
        };
        let mut subdirs = Vec::new();
        for e in rd.flatten().take(500) {
            let p = e.path();
            let Some(stem) = p.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            if p.is_dir() && deeper {
                subdirs.push((p.clone(), format!("{prefix}{stem}.")));
            } else if p.extension().is_some_and(|x| x == "wsp") {
                out.push(format!("{prefix}{stem}"));
            }
        }
        subdirs
    };
    for (sub, prefix) in scan(dir, "", true, &mut out) {
        scan(&sub, &prefix, false, &mut out);
    }
    let own = Path::new(path).file_stem().and_then(|s| s.to_str());
    out.retain(|m| Some(m.as_str()) != own);
    out
}

/// Converts `(path, byte range)` pairs to locations (files without a URI are left out).
fn locations(ws: &Workspace, refs: Vec<(String, (usize, usize))>) -> Vec<Location> {
    refs.into_iter()
        .filter_map(|(file, (a, b))| {
            let uri = uri_of(&file)?;
            let t = ws.text(&FileName::new(file.as_str()))?;
            Some(Location::new(uri, LineIndex::new(&t).range(a, b)))
        })
        .collect()
}

/// Set when the client sent `shutdown`: then `exit` (or the end of the input) is a clean end.
static SHUT_DOWN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Serves the protocol on stdin/stdout until the client exits; `Ok(true)` when it asked for
/// `shutdown` first (the LSP specification's exit code 0), `Ok(false)` otherwise (exit code 1).
/// Malformed input is skipped and reported on standard error ([`framing`]).
pub fn run_stdio() -> std::io::Result<bool> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let (to_server, from_guard) = tokio::io::duplex(1 << 20);
        let stdin = tokio::io::BufReader::new(tokio::io::stdin());
        tokio::spawn(framing::guard(stdin, to_server, |why| {
            eprintln!("wsp lsp: skipped a malformed message: {why}");
        }));
        let (service, socket) = LspService::new(Backend::new);
        Server::new(from_guard, tokio::io::stdout(), socket)
            .serve(service)
            .await;
    });
    // The guard may still be blocked reading standard input (the client has not closed it):
    // do not wait for it.
    rt.shutdown_background();
    Ok(SHUT_DOWN.load(std::sync::atomic::Ordering::SeqCst))
}
