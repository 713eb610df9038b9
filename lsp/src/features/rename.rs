//! Rename and prepareRename: the edits renaming the name at an offset everywhere it is
//! referenced, or why the rename is refused (a keyword, a builtin, a std name, a new name that
//! is not an identifier or that would clash with a name already declared or used).

use std::collections::BTreeMap;

use wsp_core::check::TARGETS;
use wsp_core::Workspace;
use wsp_syntax::{lex, Token};
use wsp_vocab::ops::KERNEL_FN_NAMES;
use wsp_vocab::schedule::{DIRECTIVE_NAMES, POLICY_NAMES, WINDOW_MODE_NAMES};
use wsp_vocab::words::{AXIS_CTORS, DTYPES, EXPECT_BUILTINS, INITIALISERS, WORKLOAD_BUILTINS};

use super::{all_named_args, binds_locally, references, span, target, text_of, Range, Target};
use crate::analysis::{decls, ident_at};

/// Whether a name is built into the language (dtypes, kernel functions, initialisers, schedule
/// directives and policies, targets …): such names cannot be renamed.
pub fn is_builtin(name: &str) -> bool {
    [
        DTYPES,
        &KERNEL_FN_NAMES,
        INITIALISERS,
        AXIS_CTORS,
        WORKLOAD_BUILTINS,
        EXPECT_BUILTINS,
        &DIRECTIVE_NAMES,
        &POLICY_NAMES,
        &WINDOW_MODE_NAMES,
        TARGETS,
    ]
    .iter()
    .any(|l| l.contains(&name))
}

/// Why a rename is refused, for the editor to show.
pub fn prepare_rename(ws: &Workspace, path: &str, offset: usize) -> Result<Range, String> {
    let text = text_of(ws, path).ok_or("the file is not loaded")?;
    let Some((name, s, e)) = ident_at(&text, offset) else {
        if let Some(t) = lex(&text)
            .into_iter()
            .find(|t| t.kind.is_keyword() && span(t).0 <= offset && offset <= span(t).1)
        {
            let r = span(&t);
            return Err(format!(
                "`{}` is a keyword and cannot be renamed",
                &text[r.0..r.1]
            ));
        }
        return Err("there is no name here to rename".into());
    };
    match target(ws, path, offset) {
        Some((_, _, Target::Global(d))) if d.path.starts_with("std/") => Err(format!(
            "`{name}` is declared in the standard library (`{}`) and cannot be renamed",
            d.path
        )),
        Some(_) => Ok((s, e)),
        None if is_builtin(&name) => Err(format!(
            "`{name}` is a builtin of the language and cannot be renamed"
        )),
        None => Err(format!(
            "`{name}` is not declared, so there is nothing to rename"
        )),
    }
}

/// The edits renaming the name at `offset` to `new_name` across the loaded files.
pub fn rename(
    ws: &Workspace,
    path: &str,
    offset: usize,
    new_name: &str,
) -> Result<BTreeMap<String, Vec<Range>>, String> {
    prepare_rename(ws, path, offset)?;
    let toks = lex(new_name);
    if toks.len() != 1
        || toks[0].kind != Token::Ident
        || toks[0].span.end as usize != new_name.len()
    {
        let why = if toks.len() == 1 && toks[0].kind.is_keyword() {
            "it is a keyword"
        } else {
            "it is not an identifier"
        };
        return Err(format!("cannot rename to `{new_name}`: {why}"));
    }
    if is_builtin(new_name) {
        return Err(format!(
            "cannot rename to `{new_name}`: it is a builtin of the language"
        ));
    }
    let mut out: BTreeMap<String, Vec<Range>> = BTreeMap::new();
    for (p, r) in references(ws, path, offset, true) {
        out.entry(p).or_default().push(r);
    }
    if let Some(why) = clash(ws, path, offset, new_name, &out) {
        return Err(format!("cannot rename to `{new_name}`: {why}"));
    }
    Ok(out)
}

/// Why renaming the name at `offset` to `new_name` would change what some name means, if it
/// would: for a top-level item, `new_name` is already declared in a file the rename touches
/// (or the item's own file), or a local binding of it would shadow a renamed use; for a local
/// (a kernel parameter, `let`/`var`/loop binding), `new_name` is already used in the
/// enclosing item (bound there, or a top-level name the item refers to).
fn clash(
    ws: &Workspace,
    path: &str,
    offset: usize,
    new_name: &str,
    edits: &BTreeMap<String, Vec<Range>>,
) -> Option<String> {
    let (name, _, t) = target(ws, path, offset)?;
    if name == new_name {
        return None;
    }
    match t {
        Target::Global(d) => {
            let mut files: Vec<&str> = edits.keys().map(String::as_str).collect();
            if !files.contains(&d.path.as_str()) {
                files.push(&d.path);
            }
            for f in &files {
                if let Some(x) = decls(ws, f)
                    .into_iter()
                    .find(|x| x.item.name().is_some_and(|n| n.name == new_name))
                {
                    let line = text_of(ws, f)
                        .and_then(|t| t.get(..x.name.0).map(|b| b.matches('\n').count() + 1))
                        .unwrap_or(0);
                    return Some(format!(
                        "`{new_name}` is already declared in `{f}` ({} on line {line})",
                        crate::analysis::kind_word(&x.item),
                    ));
                }
            }
            for (f, ranges) in edits {
                let Some(text) = text_of(ws, f) else { continue };
                let items = decls(ws, f);
                for r in ranges {
                    if let Some(it) = items
                        .iter()
                        .find(|it| it.range.0 <= r.0 && r.0 <= it.range.1)
                    {
                        if binds_locally(&text, it, new_name) {
                            return Some(format!(
                                "`{new_name}` is already declared inside `{}` in `{f}`, where it \
                                 would shadow the renamed `{name}`",
                                it.item.name().map(|n| n.name.as_str()).unwrap_or("?")
                            ));
                        }
                    }
                }
            }
            None
        }
        Target::Local { item, kernel } => {
            let decl_path = kernel
                .as_deref()
                .and_then(|k| k.split('\0').next())
                .unwrap_or(path)
                .to_string();
            let text = text_of(ws, &decl_path)?;
            let it = decls(ws, &decl_path)
                .into_iter()
                .find(|d| d.range == item)?;
            let owner = it.item.name().map(|n| n.name.clone()).unwrap_or_default();
            if binds_locally(&text, &it, new_name) {
                return Some(format!(
                    "`{new_name}` is already declared in `{owner}` (a parameter or a local binding)"
                ));
            }
            let body = text.get(item.0..item.1).unwrap_or("");
            let named = all_named_args(&text);
            let used = lex(body).iter().any(|t| {
                t.kind == Token::Ident
                    && &body[span(t).0..span(t).1] == new_name
                    && !named.contains(&(item.0 + span(t).0))
            });
            if used {
                return Some(format!(
                    "`{new_name}` is already used in `{owner}`: the renamed `{name}` would \
                     capture or shadow it"
                ));
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::test_support::{at, ws};

    #[test]
    fn rename_across_files_and_refusals() {
        let mut ws = ws();
        let other =
            "import a\nworkload v {\n    for i in P(rows) { double[i](x: X[i], y: Y[i]) }\n}\n";
        ws.set_file("b.wsp", other.to_string());
        let edits = rename(&ws, "a.wsp", at("double(", 0), "twice").unwrap();
        assert_eq!(edits["a.wsp"].len(), 2, "{edits:?}");
        assert_eq!(
            edits["b.wsp"],
            [(
                other.find("double").unwrap(),
                other.find("double").unwrap() + 6
            )]
        );
        // Keywords, builtins and bad new names are refused with a reason.
        let e = prepare_rename(&ws, "a.wsp", at("kernel", 1)).unwrap_err();
        assert!(e.contains("keyword"), "{e}");
        let e = prepare_rename(&ws, "a.wsp", at("f32[8, 8]", 1)).unwrap_err();
        assert!(e.contains("builtin"), "{e}");
        let e = rename(&ws, "a.wsp", at("X[i]", 0), "kernel").unwrap_err();
        assert!(e.contains("keyword"), "{e}");
        let e = rename(&ws, "a.wsp", at("X[i]", 0), "f16").unwrap_err();
        assert!(e.contains("builtin"), "{e}");
        let e = rename(&ws, "a.wsp", at("X[i]", 0), "a b").unwrap_err();
        assert!(e.contains("not an identifier"), "{e}");
    }

    #[test]
    fn rename_refuses_clashes() {
        let mut ws = ws();
        let other =
            "import a\naxis cols = Dense[2]\nworkload v {\n    for j in P(rows) { double[j](x: X[j], y: Y[j]) }\n}\n";
        ws.set_file("b.wsp", other.to_string());
        // A top-level name already declared in the same file …
        let e = rename(&ws, "a.wsp", at("X[i]", 0), "Y").unwrap_err();
        assert!(
            e.contains("`Y` is already declared in `a.wsp` (tensor on line 4)"),
            "{e}"
        );
        // … or in another file the rename touches (b.wsp uses `double`).
        let e = rename(&ws, "a.wsp", at("double(", 0), "cols").unwrap_err();
        assert!(e.contains("already declared in `b.wsp`"), "{e}");
        // A top-level name that a local binding would shadow at a renamed use.
        let e = rename(&ws, "a.wsp", at("X[i]", 0), "i").unwrap_err();
        assert!(e.contains("shadow"), "{e}");
        // A local: the loop variable cannot take a name the workload uses.
        let e = rename(&ws, "a.wsp", at("i in P", 0), "rows").unwrap_err();
        assert!(e.contains("already used in `w`"), "{e}");
        // A `let` cannot take a parameter's name.
        let e = rename(&ws, "a.wsp", at("t = x", 0), "y").unwrap_err();
        assert!(e.contains("already declared in `double`"), "{e}");
        // Free names still rename; a named argument is not a use.
        assert!(rename(&ws, "a.wsp", at("X[i]", 0), "Xin").is_ok());
        assert!(rename(&ws, "a.wsp", at("i in P", 0), "x").is_ok());
        assert!(rename(&ws, "a.wsp", at("t = x", 0), "u").is_ok());
    }
}
