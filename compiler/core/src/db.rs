//! The salsa database, its inputs and the structural queries (parse, items, scope).
//!
//! Incrementality: a file is one input per item ([`ItemSrc`]), set by the driver only for the
//! items an edit changed ([`crate::layout`]). An item's identity ([`ItemId`]) is interned from
//! its file, kind and name (or its position among unnamed items of its kind) and its input,
//! never from its byte position, and the AST that [`item_ast`] returns has item-relative
//! spans. An edit inside one item therefore re-parses only that item; every other item's
//! queries find their inputs unchanged and are not re-run. [`scope`] holds signatures only
//! (names, kinds, kernel parameters), so editing a body does not change it either; whole-file
//! analyses read items through [`items_of`] in virtual offsets, which such an edit leaves
//! as they were.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use wsp_syntax::ast::{self, Item, ItemKind};

/// One source file: its path (as the user gave it), its text, and the text cut into items,
/// each an input of its own, so that an edit sets only the items it touches (the driver keeps
/// the cut: [`crate::layout`]).
#[salsa::input(debug)]
pub struct File {
    #[returns(ref)]
    pub path: String,
    #[returns(ref)]
    pub text: Arc<str>,
    /// The text before the first item (comments, or text that starts no item: E0007).
    #[returns(ref)]
    pub prefix: String,
    /// The items, in order.
    #[returns(ref)]
    pub items: Vec<ItemSrc>,
    /// Each item's real start (its byte offset in the file): moved by every edit before it,
    /// so only what makes spans absolute at the very end reads it.
    #[returns(ref)]
    pub starts: Vec<u32>,
    /// Each item's virtual start, and the end ([`crate::layout::Layout::virt`]): the offsets
    /// whole-file analyses give their spans, unchanged by an edit that keeps each item within
    /// its capacity.
    #[returns(ref)]
    pub virt: Vec<u32>,
}

/// The text of one item of a file, as the driver cut it, and the kind its first keyword says
/// ([`keyword_tag`]: what [`items_of`] filters by without parsing the item).
///
/// An item the driver has re-cut after an edit also carries what the driver parsed
/// ([`Workspace::set_file`](crate::Workspace::set_file)): its parse and its interface ([`Face`]: kind, name and signature — what other items read of it), each
/// set only when it changed. An edit of a body changes the parse only: what reads just the
/// interfaces of a file's items (its item list, its scope) then keeps its durability, and
/// salsa need not verify it item by item again.
#[salsa::input(debug)]
pub struct ItemSrc {
    #[returns(ref)]
    pub text: String,
    #[returns(copy)]
    pub keyword: Option<ItemTag>,
    #[returns(ref)]
    pub parsed: Option<Arc<wsp_syntax::ItemParse>>,
    #[returns(ref)]
    pub face: Option<Arc<Face>>,
}

/// What other items read of an item: its kind and name (name span item-relative), and its
/// signature — the item with the bodies of kernels, workloads and processes left out (what
/// [`symbol_of`] reads).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Face {
    pub tag: ItemTag,
    pub name: Option<ast::Ident>,
    pub sig: Arc<Item>,
}

impl Face {
    /// The interface of `item` (an item without a body is its own signature: shared).
    pub fn of(item: &Arc<Item>) -> Face {
        let empty = || ast::Block {
            stmts: Vec::new(),
            span: wsp_syntax::Span::default(),
        };
        let without_body = |kind| {
            Arc::new(Item {
                docs: None,
                kind,
                span: wsp_syntax::Span::default(),
            })
        };
        let sig = match &item.kind {
            ItemKind::Kernel(k) => without_body(ItemKind::Kernel(ast::Kernel {
                extern_span: k.extern_span,
                name: k.name.clone(),
                params: k.params.clone(),
                body: ast::KernelBody::Block(empty()),
            })),
            ItemKind::Workload(w) => without_body(ItemKind::Workload(ast::Workload {
                name: w.name.clone(),
                body: ast::WorkloadBody::Block(empty()),
            })),
            ItemKind::Process(p) => without_body(ItemKind::Process(ast::Process {
                name: p.name.clone(),
                consumes: p.consumes.clone(),
                produces: p.produces.clone(),
                body: empty(),
            })),
            _ => item.clone(),
        };
        Face {
            tag: tag_of(item),
            name: item.name().cloned(),
            sig,
        }
    }
}

/// The kind of item an item's text starts with ([`wsp_syntax::item_keyword`]); its parse's
/// kind ([`tag_of`]) is this or [`ItemTag::Error`].
pub fn keyword_tag(text: &str) -> Option<ItemTag> {
    use wsp_syntax::Token as T;
    Some(match wsp_syntax::item_keyword(text)? {
        T::Import => ItemTag::Import,
        T::Const => ItemTag::Const,
        T::Param => ItemTag::Param,
        T::Axis => ItemTag::Axis,
        T::Input | T::Output | T::Tensor => ItemTag::Tensor,
        T::Kernel => ItemTag::Kernel,
        T::Workload => ItemTag::Workload,
        T::Channel => ItemTag::Channel,
        T::Process => ItemTag::Process,
        T::Schedule => ItemTag::Schedule,
        T::Expect => ItemTag::Expect,
        _ => return None,
    })
}

/// The set of loaded files by path (user files and std modules). Module resolution reads it.
#[salsa::input(debug)]
pub struct FileSet {
    #[returns(ref)]
    pub files: BTreeMap<String, File>,
    /// Paths that could not be read, with the I/O error.
    #[returns(ref)]
    pub unreadable: BTreeMap<String, String>,
    /// The architecture model chosen by the driver (`wsp check --arch`), overriding the
    /// schedules' `.target(...)` for resource checks.
    #[returns(ref)]
    pub arch: Option<String>,
    /// The backend chosen by the driver (`wsp check --target`) for capability checks; `None`:
    /// no capability diagnostics.
    #[returns(ref)]
    pub target: Option<crate::capabilities::Target>,
    /// A model file chosen by the driver (`--arch FILE.toml`): its path and text, which parse
    /// (checked when set). Overrides `arch` and the schedules' targets.
    #[returns(ref)]
    pub arch_file: Option<(String, Arc<str>)>,
    /// The opt-in lints the driver turned on (`wsp check --warn narrowing`), by name
    /// ([`wsp_vocab::words::LINTS`]).
    #[returns(ref)]
    pub lints: Vec<String>,
    /// Integer constants the driver sets by name (`wsp run --set TILE_ROWS=32`): every
    /// integer `const` of that name, in any file, takes the value instead of its declared one,
    /// before anything is checked or lowered (see [`const_values`]).
    #[returns(ref)]
    pub consts: BTreeMap<String, i64>,
}

/// The database trait every query takes.
#[salsa::db]
pub trait Db: salsa::Database {
    /// The loaded files.
    fn file_set(&self) -> FileSet;
}

/// The concrete database: salsa storage plus the file-set handle, and an optional log of
/// executed queries (tests use it to prove incrementality).
#[salsa::db]
#[derive(Clone)]
pub struct Database {
    storage: salsa::Storage<Self>,
    files: Option<FileSet>,
    log: Option<Arc<Mutex<Vec<String>>>>,
}

impl Default for Database {
    fn default() -> Self {
        Database {
            storage: salsa::Storage::new(None),
            files: None,
            log: None,
        }
    }
}

impl Database {
    /// A database that records the name and key of every query it executes.
    pub fn with_log() -> (Database, Arc<Mutex<Vec<String>>>) {
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = log.clone();
        let db = Database {
            storage: salsa::Storage::new(Some(Box::new(move |event: salsa::Event| {
                if let salsa::EventKind::WillExecute { database_key } = event.kind {
                    if let Ok(mut l) = sink.lock() {
                        l.push(format!("{database_key:?}"));
                    }
                }
            }))),
            files: None,
            log: Some(log.clone()),
        };
        (db, log)
    }

    pub(crate) fn set_file_set_handle(&mut self, fs: FileSet) {
        self.files = Some(fs);
    }

    /// Whether this database records executed queries.
    pub fn is_logging(&self) -> bool {
        self.log.is_some()
    }
}

#[salsa::db]
impl salsa::Database for Database {}

#[salsa::db]
impl Db for Database {
    fn file_set(&self) -> FileSet {
        match self.files {
            Some(fs) => fs,
            None => panic!("Database used before Workspace::new set the file set"),
        }
    }
}

/// The parse of a file (tree, errors with absolute spans): the parse of each item
/// ([`parse_item`], memoised per item) placed at its real start. For whole-file readers
/// outside the checks (lowering, the language server's features); the checks read items
/// one by one ([`file_items`], [`item_ast`]) and never this, so an edit does not run them
/// again.
#[salsa::tracked(returns(ref))]
pub fn parse_file(db: &dyn Db, file: File) -> wsp_syntax::Parse {
    let items = file
        .items(db)
        .iter()
        .zip(file.starts(db))
        .map(|(src, start)| (*start, &**parse_item(db, *src)));
    wsp_syntax::assemble(prefix_errors(db, file).clone(), items)
}

/// The syntax errors of the text before a file's first item.
#[salsa::tracked(returns(ref))]
pub fn prefix_errors(db: &dyn Db, file: File) -> Vec<wsp_syntax::SyntaxError> {
    wsp_syntax::parse_prefix(file.prefix(db))
}

/// One item's parse ([`wsp_syntax::parse_item`]), with spans relative to its text: the
/// driver's, when it parsed the item, else parsed here.
#[salsa::tracked(returns(ref))]
pub fn parse_item(db: &dyn Db, src: ItemSrc) -> Arc<wsp_syntax::ItemParse> {
    match src.parsed(db) {
        Some(p) => p.clone(),
        None => Arc::new(wsp_syntax::parse_item(src.text(db))),
    }
}

/// An item's interface ([`Face`]): the driver's, when it parsed the item, else from its parse.
pub fn item_face(db: &dyn Db, src: ItemSrc) -> &Face {
    match src.face(db) {
        Some(f) => f,
        None => derived_face(db, src),
    }
}

/// [`Face`] of an item the driver has not parsed.
#[salsa::tracked(returns(ref))]
fn derived_face(db: &dyn Db, src: ItemSrc) -> Face {
    Face::of(&parse_item(db, src).node.item)
}

/// An item's kind and name (`None` for an unnamed item; its span item-relative): all
/// [`file_items`] and the check for names defined twice read of it, equal across an edit of
/// its body.
pub fn item_head(db: &dyn Db, src: ItemSrc) -> (ItemTag, Option<&ast::Ident>) {
    let f = item_face(db, src);
    (f.tag, f.name.as_ref())
}

/// The identifiers an item's text names ([`wsp_syntax::idents`]): asked only by a file that
/// imports something (the unused-import check).
#[salsa::tracked(returns(ref))]
pub fn item_idents(db: &dyn Db, src: ItemSrc) -> Vec<String> {
    wsp_syntax::idents(src.text(db))
}

/// What kind of item an [`ItemId`] names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ItemTag {
    Import,
    Const,
    Param,
    Axis,
    Tensor,
    Kernel,
    Workload,
    Channel,
    Process,
    Schedule,
    Expect,
    Error,
}

pub fn tag_of(item: &Item) -> ItemTag {
    match &item.kind {
        ItemKind::Import(_) => ItemTag::Import,
        ItemKind::Const(_) => ItemTag::Const,
        ItemKind::Param(_) => ItemTag::Param,
        ItemKind::Axis(_) => ItemTag::Axis,
        ItemKind::Tensor(_) => ItemTag::Tensor,
        ItemKind::Kernel(_) => ItemTag::Kernel,
        ItemKind::Workload(_) => ItemTag::Workload,
        ItemKind::Channel(_) => ItemTag::Channel,
        ItemKind::Process(_) => ItemTag::Process,
        ItemKind::Schedule(_) => ItemTag::Schedule,
        ItemKind::Expect(_) => ItemTag::Expect,
        ItemKind::Error => ItemTag::Error,
    }
}

/// A stable identity for an item: file, kind, name (or `#n` for the n-th unnamed item of its
/// kind), an occurrence number for duplicate names, and the input holding its text (the
/// driver keeps an item's input across edits of it).
#[salsa::interned(debug)]
pub struct ItemId<'db> {
    #[returns(copy)]
    pub file: File,
    #[returns(copy)]
    pub tag: ItemTag,
    #[returns(ref)]
    pub key: String,
    #[returns(copy)]
    pub occurrence: u32,
    #[returns(copy)]
    pub src: ItemSrc,
}

/// The item identities of a file, in source order. Equal across an edit inside an item (the
/// offsets, which such an edit moves, are [`item_starts`]), so what walks a file's items by
/// identity is not asked again.
#[salsa::tracked(returns(ref))]
pub fn file_items<'db>(db: &'db dyn Db, file: File) -> Vec<ItemId<'db>> {
    let srcs = file.items(db);
    let mut seen: BTreeMap<(ItemTag, String), u32> = BTreeMap::new();
    let mut unnamed: BTreeMap<ItemTag, u32> = BTreeMap::new();
    let mut out = Vec::with_capacity(srcs.len());
    for src in srcs {
        let (tag, name) = item_head(db, *src);
        let key = match name {
            Some(n) => n.name.clone(),
            None => {
                let n = unnamed.entry(tag).or_insert(0);
                *n += 1;
                format!("#{n}")
            }
        };
        let occ = seen.entry((tag, key.clone())).or_insert(0);
        out.push(ItemId::new(db, file, tag, key, *occ, *src));
        *occ += 1;
    }
    out
}

/// The real start offset of each item of [`file_items`], in the same order.
pub fn item_starts(db: &dyn Db, file: File) -> &Vec<u32> {
    file.starts(db)
}

/// Where each item of a file is in [`file_items`] (a search per item was quadratic in a file
/// of many items).
#[salsa::tracked(returns(ref))]
pub fn item_positions<'db>(
    db: &'db dyn Db,
    file: File,
) -> std::collections::HashMap<ItemId<'db>, usize> {
    file_items(db, file)
        .iter()
        .enumerate()
        .map(|(i, id)| (*id, i))
        .collect()
}

/// The AST of one item, with item-relative spans: its memoised parse's ([`parse_item`]),
/// unchanged by edits to other items.
pub fn item_ast<'db>(db: &'db dyn Db, item: ItemId<'db>) -> &'db Item {
    &parse_item(db, item.src(db)).node.item
}

/// [`item_ast`], shared.
pub fn item_arc<'db>(db: &'db dyn Db, item: ItemId<'db>) -> &'db Arc<Item> {
    &parse_item(db, item.src(db)).node.item
}

/// Absolute start offset of an item in its file (changes when text before it changes; only
/// used to turn relative spans into absolute ones at the very end).
pub fn item_offset<'db>(db: &'db dyn Db, item: ItemId<'db>) -> u32 {
    let file = item.file(db);
    item_positions(db, file)
        .get(&item)
        .and_then(|i| item_starts(db, file).get(*i))
        .copied()
        .unwrap_or(0)
}

/// The items of `file` of the kinds in `tags`, each with its input, its virtual start
/// ([`crate::layout`]) and its AST: how whole-file analyses walk a file. Items are picked by
/// their first keyword (an input) and only those are parsed, so an analysis reads no other
/// item, no item identity and no real offset: an edit of another item, or one that moves
/// this item in the file, does not run it again. Their spans are made real by [`real_spans`].
pub fn items_of<'db>(
    db: &'db dyn Db,
    file: File,
    tags: &'static [ItemTag],
) -> impl Iterator<Item = (ItemSrc, u32, &'db Arc<Item>)> + 'db {
    file.items(db)
        .iter()
        .zip(file.virt(db))
        .zip(item_keywords(db, file))
        .filter(move |(_, k)| k.is_some_and(|k| tags.contains(&k)))
        .filter_map(move |((src, v), _)| {
            let ast = &parse_item(db, *src).node.item;
            tags.contains(&tag_of(ast)).then_some((*src, *v, ast))
        })
}

/// Each item's first keyword ([`ItemSrc::keyword`]), in order: read once per file, not once
/// per item by every analysis (each read is a dependency salsa records).
#[salsa::tracked(returns(ref))]
fn item_keywords(db: &dyn Db, file: File) -> Vec<Option<ItemTag>> {
    file.items(db).iter().map(|s| s.keyword(db)).collect()
}

/// `d` with the virtual spans of whole-file analyses ([`items_of`]) made real, in every
/// loaded file its labels and fixes point into.
pub fn real_spans(db: &dyn Db, mut d: wsp_diagnostics::Diagnostic) -> wsp_diagnostics::Diagnostic {
    let files = db.file_set().files(db);
    let real = |file: &wsp_diagnostics::FileName, span: &mut wsp_syntax::Span| {
        if let Some(f) = files.get(file.as_str()) {
            let (starts, virt) = (f.starts(db), f.virt(db));
            let conv = |v: u32| crate::layout::to_real(starts, virt, v);
            *span = wsp_syntax::Span::new(conv(span.start), conv(span.end));
        }
    };
    real(&d.primary.file.clone(), &mut d.primary.span);
    for l in &mut d.secondary {
        real(&l.file.clone(), &mut l.span);
    }
    for fix in &mut d.fixes {
        for e in &mut fix.edits {
            real(&e.file.clone(), &mut e.span);
        }
    }
    d
}

/// What a global name is, as far as other items need to know (signatures, never bodies or
/// positions).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Symbol {
    Const,
    Param,
    /// An axis and its kind (`Dense`, `DenseDyn`, `Ragged`, `Sparse`, or `?` when malformed).
    Axis(String),
    /// A global tensor: its kind, dtype name and evaluated shape (`None` when a dimension could
    /// not be evaluated).
    Tensor {
        kind: ast::TensorKind,
        dtype: String,
        dims: Option<Vec<crate::types::D>>,
    },
    /// A kernel: its parameters (name, is a tile, has a default).
    Kernel(Vec<KernelParamSig>),
    Workload,
    Channel,
    Process,
    Schedule,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelParamSig {
    pub name: String,
    pub tile: bool,
    pub has_default: bool,
    pub dir: Option<ast::Direction>,
    pub dtype: String,
    /// The tile shape (evaluated), `None` for scalars or unevaluable dims.
    pub dims: Option<Vec<crate::types::D>>,
    /// Per dimension of the tile, whether it is partial (`..64`: at most 64 valid elements).
    pub partial: Vec<bool>,
}

impl Symbol {
    pub fn describe(&self) -> &'static str {
        match self {
            Symbol::Const => "a constant",
            Symbol::Param => "a param",
            Symbol::Axis(_) => "an axis",
            Symbol::Tensor { .. } => "a tensor",
            Symbol::Kernel(_) => "a kernel",
            Symbol::Workload => "a workload",
            Symbol::Channel => "a channel",
            Symbol::Process => "a process",
            Symbol::Schedule => "a schedule",
        }
    }
}

pub fn symbol_of(item: &Item, consts: &BTreeMap<String, i64>) -> Option<Symbol> {
    Some(match &item.kind {
        ItemKind::Const(_) => Symbol::Const,
        ItemKind::Param(_) => Symbol::Param,
        ItemKind::Axis(a) => Symbol::Axis(axis_kind(&a.ctor)),
        ItemKind::Tensor(t) => Symbol::Tensor {
            kind: t.kind,
            dtype: t.ty.dtype.name.clone(),
            dims: crate::types::eval_dims(&t.ty, consts),
        },
        ItemKind::Kernel(k) => Symbol::Kernel(
            k.params
                .iter()
                .map(|p| KernelParamSig {
                    name: p.name.name.clone(),
                    tile: p.dir.is_some(),
                    has_default: p.default.is_some(),
                    dir: p.dir.map(|d| d.0),
                    dtype: p.ty.dtype.name.clone(),
                    dims: crate::types::eval_dims(&p.ty, consts),
                    partial: p.ty.dims.iter().flatten().map(|d| d.partial).collect(),
                })
                .collect(),
        ),
        ItemKind::Workload(_) => Symbol::Workload,
        ItemKind::Channel(_) => Symbol::Channel,
        ItemKind::Process(_) => Symbol::Process,
        ItemKind::Schedule(_) => Symbol::Schedule,
        ItemKind::Import(_) | ItemKind::Expect(_) | ItemKind::Error => return None,
    })
}

/// The names a file defines itself: name → symbol (first definition wins).
#[salsa::tracked(returns(ref))]
pub fn own_symbols(db: &dyn Db, file: File) -> BTreeMap<String, Symbol> {
    let mut out = BTreeMap::new();
    for id in file_items(db, file) {
        if let Some(sym) = item_symbol(db, *id) {
            out.entry(id.key(db).clone()).or_insert_with(|| sym.clone());
        }
    }
    out
}

/// What a named item is to other items ([`symbol_of`]): equal across an edit of its body, so
/// the file's scope is not built again.
#[salsa::tracked(returns(ref))]
pub fn item_symbol<'db>(db: &'db dyn Db, item: ItemId<'db>) -> Option<Symbol> {
    let sig = &item_face(db, item.src(db)).sig;
    sig.name()?;
    symbol_of(sig, const_values(db, item.file(db)))
}

/// The kind name of an axis constructor expression.
pub fn axis_kind(ctor: &ast::Expr) -> String {
    let callee = match &ctor.kind {
        ast::ExprKind::Index { base, .. } => base,
        ast::ExprKind::Call { callee, .. } => callee,
        _ => return "?".into(),
    };
    match &callee.kind {
        ast::ExprKind::Name(n) => n.name.clone(),
        _ => "?".into(),
    }
}

/// The folded integer values of the constants a file sees: those it imports (by name, or every
/// constant of a module imported whole; the first import of a name wins) and its own (in order;
/// a constant may use earlier ones and imported ones; its own shadow imported ones).
///
/// A constant the driver sets ([`FileSet::consts`]) takes that value where its declared one
/// folds to an integer: the program is checked and lowered as if it were declared so.
///
/// Modules may import each other, so this does not ask the same query of the modules it
/// imports (a cycle of queries): it folds the constants of every file the import graph
/// reaches from `file`, over and over, until no more of them fold.
#[salsa::tracked(returns(ref))]
pub fn const_values(db: &dyn Db, file: File) -> BTreeMap<String, i64> {
    use crate::resolve::{imports_of, ImportTarget};
    let files = crate::resolve::program_files(db, file);
    let set = db.file_set().consts(db);
    let index = |f: File| files.iter().position(|g| *g == f);
    // Each file's imports as (the module's index, the names it takes; `None`: all).
    let imports: Vec<Vec<(usize, Option<Vec<String>>)>> = files
        .iter()
        .map(|f| {
            let targets = imports_of(db, *f);
            items_of(db, *f, &[ItemTag::Import])
                .filter_map(|(_, _, item)| match &item.kind {
                    ItemKind::Import(imp) => Some(imp),
                    _ => None,
                })
                .zip(targets)
                .filter_map(|(imp, (_, t))| match t {
                    ImportTarget::Loaded(m) => Some((
                        index(*m)?,
                        imp.names
                            .as_ref()
                            .map(|ns| ns.iter().map(|n| n.name.clone()).collect()),
                    )),
                    _ => None,
                })
                .collect()
        })
        .collect();
    // Own constants: what each file's constants fold to with what it sees so far.
    let mut own: Vec<BTreeMap<String, i64>> = vec![BTreeMap::new(); files.len()];
    let mut seen = vec![BTreeMap::new(); files.len()];
    // Values only ever appear (a constant folds once what it uses is known), so this ends;
    // the bound is a guard.
    for _ in 0..=files.len() {
        let mut changed = false;
        for (fi, f) in files.iter().enumerate() {
            let mut env: BTreeMap<String, i64> = BTreeMap::new();
            for (m, names) in &imports[fi] {
                let take = |k: &String, v: &i64, env: &mut BTreeMap<String, i64>| {
                    env.entry(k.clone()).or_insert(*v);
                };
                match names {
                    Some(ns) => {
                        for n in ns {
                            if let Some(v) = own[*m].get(n) {
                                take(n, v, &mut env);
                            }
                        }
                    }
                    None => own[*m].iter().for_each(|(k, v)| take(k, v, &mut env)),
                }
            }
            let consts: Vec<&ast::ConstDecl> = items_of(db, *f, &[ItemTag::Const])
                .filter_map(|(_, _, item)| match &item.kind {
                    ItemKind::Const(c) => Some(c),
                    _ => None,
                })
                .collect();
            // Own constants shadow imported ones (folded or not), wherever they stand.
            for c in &consts {
                env.remove(&c.name.name);
            }
            let mut mine = BTreeMap::new();
            for c in consts {
                if let Some(v) = crate::types::eval_int(&c.value, &env) {
                    let v = set.get(&c.name.name).copied().unwrap_or(v);
                    env.insert(c.name.name.clone(), v);
                    mine.insert(c.name.name.clone(), v);
                }
            }
            // `mine` is part of `env`: it changed only if `env` did.
            if env != seen[fi] {
                own[fi] = mine;
                seen[fi] = env;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    seen.swap_remove(0)
}
