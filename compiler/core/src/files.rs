//! The driver's side of a file: cutting it into item inputs when it is loaded, and setting
//! only what an edit changed ([`crate::layout`] decides which items).
//!
//! Durability: every input of a file as loaded is durable, so salsa verifies what reads only
//! them without walking their dependencies. An edit sets an item's text and parse with low
//! durability (what reads them is verified item by item, as it must be), and its interface
//! ([`Face`]: kind, name, signature) with high durability, only when the interface changed:
//! an edit of a body leaves every query that reads only interfaces — the item list, the
//! scope, the other items' checks — durable, so a keystroke costs the items it touches.

use std::sync::Arc;

use salsa::{Durability, Setter};

use crate::db::{self, Database, Face, File, ItemSrc};
use crate::layout;

/// A new file input: `text` cut into items. Its text and real offsets change with every edit
/// and are not durable; the rest is.
pub(crate) fn new_file(db: &Database, path: String, text: &str) -> File {
    let (layout, ranges) = layout::Layout::fresh(text);
    let srcs: Vec<ItemSrc> = ranges
        .iter()
        .map(|r| {
            let t = text.get(r.clone()).unwrap_or("");
            ItemSrc::builder(t.to_string(), db::keyword_tag(t), None, None)
                .durability(Durability::HIGH)
                .new(db)
        })
        .collect();
    let prefix = prefix(text, &layout.starts).to_string();
    File::builder(
        path,
        Arc::from(text),
        prefix,
        srcs,
        layout.starts,
        layout.virt,
    )
    .durability(Durability::HIGH)
    .text_durability(Durability::LOW)
    .starts_durability(Durability::LOW)
    .new(db)
}

/// Replaces the text of `f` with `text`, setting only the inputs that change.
pub(crate) fn edit_file(db: &mut Database, f: File, text: String) {
    let old = f.text(db).clone();
    let before = layout::Layout {
        starts: f.starts(db).clone(),
        virt: f.virt(db).clone(),
    };
    let Some(cut) = layout::recut(&old, &before, &text) else {
        return;
    };
    let old_srcs = f.items(db).clone();
    let mid = &old_srcs[cut.front..old_srcs.len() - cut.back];
    let texts: Vec<&str> = cut
        .middle
        .iter()
        .map(|r| text.get(r.clone()).unwrap_or(""))
        .collect();
    // The items cut again keep their inputs: those whose text is the same at either end (an
    // item inserted or removed shifts the others), then the rest in order.
    let same = |db: &Database, src: &ItemSrc, t: &str| src.text(db) == t;
    let head = mid
        .iter()
        .zip(&texts)
        .take_while(|(src, t)| same(db, src, t))
        .count();
    let room = mid.len().min(texts.len()) - head;
    let tail = mid
        .iter()
        .rev()
        .zip(texts.iter().rev())
        .take(room)
        .take_while(|(src, t)| same(db, src, t))
        .count();
    let (old_rest, new_rest) = (
        &mid[head..mid.len() - tail],
        &texts[head..texts.len() - tail],
    );
    let mut srcs: Vec<ItemSrc> = old_srcs[..cut.front + head].to_vec();
    for (j, t) in new_rest.iter().enumerate() {
        srcs.push(set_item(db, old_rest.get(j).copied(), t));
    }
    srcs.extend_from_slice(&mid[mid.len() - tail..]);
    // Items no longer in the file: what they held is dropped.
    for src in old_rest.iter().skip(new_rest.len()) {
        src.set_text(db).to(String::new());
        src.set_parsed(db).to(None);
    }
    srcs.extend_from_slice(&old_srcs[old_srcs.len() - cut.back..]);
    if srcs != old_srcs {
        f.set_items(db).to(srcs);
    }
    let prefix = prefix(&text, &cut.layout.starts);
    if f.prefix(db) != prefix {
        f.set_prefix(db).to(prefix.to_string());
    }
    if cut.layout.starts != before.starts {
        f.set_starts(db).to(cut.layout.starts);
    }
    if cut.layout.virt != before.virt {
        f.set_virt(db).to(cut.layout.virt);
    }
    f.set_text(db).to(Arc::from(text));
}

/// The text before the first item (all of it when there is none), items starting at `starts`.
fn prefix<'t>(text: &'t str, starts: &[u32]) -> &'t str {
    let end = starts.first().map_or(text.len(), |&s| s as usize);
    text.get(..end).unwrap_or("")
}

/// The input of an item whose text is now `text`: `src` with what changed set, or a new one.
/// The item is parsed here, once: its parse is set with low durability, its
/// interface with high durability and only when it changed.
fn set_item(db: &mut Database, src: Option<ItemSrc>, text: &str) -> ItemSrc {
    if let Some(src) = src.filter(|s| s.text(db) == text) {
        return src;
    }
    let parse = Arc::new(wsp_syntax::parse_item(text));
    let face = Face::of(&parse.node.item);
    let keyword = db::keyword_tag(text);
    let Some(src) = src else {
        return ItemSrc::builder(text.to_string(), keyword, Some(parse), Some(Arc::new(face)))
            .durability(Durability::LOW)
            .face_durability(Durability::HIGH)
            .keyword_durability(Durability::HIGH)
            .new(db);
    };
    if src.keyword(db) != keyword {
        src.set_keyword(db).to(keyword);
    }
    // Once the driver has parsed an item, what reads its interface reads the input (not the
    // parse, which is now of low durability), so the interface is set the first time whatever
    // it is, and then only when it changes.
    if src.face(db).as_deref() != Some(&face) {
        src.set_face(db)
            .with_durability(Durability::HIGH)
            .to(Some(Arc::new(face)));
    }
    src.set_parsed(db)
        .with_durability(Durability::LOW)
        .to(Some(parse));
    src.set_text(db)
        .with_durability(Durability::LOW)
        .to(text.to_string());
    src
}
