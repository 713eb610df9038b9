//! Signature help inside a kernel call `k[...](`: the kernel's signature and the parameter
//! being written.

use wsp_core::Workspace;
use wsp_syntax::Token;

use super::{kernel_params, open_call, span, text_of, Range};

/// Signature help inside `k[...](`: the kernel's signature, the byte ranges of each parameter
/// in it, and the active parameter (by the argument's name when written `name:`, else by the
/// number of commas before the cursor).
pub fn signature_help(
    ws: &Workspace,
    path: &str,
    offset: usize,
) -> Option<(String, Vec<Range>, u32)> {
    let text = text_of(ws, path)?;
    let (k, toks) = open_call(ws, path, &text, offset.min(text.len()))?;
    let src = text_of(ws, &k.path)?;
    let name = k.item.name()?.name.clone();
    let mut label = format!("{name}(");
    let mut ranges = Vec::new();
    for (i, p) in kernel_params(&k).iter().enumerate() {
        if i > 0 {
            label.push_str(", ");
        }
        let ps = src.get(k.range.0 + p.span.start as usize..k.range.0 + p.span.end as usize)?;
        let ps = ps.split_whitespace().collect::<Vec<_>>().join(" ");
        ranges.push((label.len(), label.len() + ps.len()));
        label.push_str(&ps);
    }
    label.push(')');
    // Commas at depth 1 (toks[0] is the call's `(`).
    let mut depth = 0i32;
    let mut commas = 0u32;
    let mut last_arg = 0usize;
    for (i, t) in toks.iter().enumerate() {
        match t.kind {
            Token::LParen | Token::LBracket | Token::LBrace => depth += 1,
            Token::RParen | Token::RBracket | Token::RBrace => depth -= 1,
            Token::Comma if depth == 1 => {
                commas += 1;
                last_arg = i + 1;
            }
            _ => {}
        }
    }
    let mut active = commas;
    if last_arg == 0 {
        last_arg = 1;
    }
    if let (Some(a), Some(b)) = (toks.get(last_arg), toks.get(last_arg + 1)) {
        if a.kind == Token::Ident && b.kind == Token::Colon {
            let an = &text[span(a).0..span(a).1];
            if let Some(i) = kernel_params(&k).iter().position(|p| p.name.name == an) {
                active = i as u32;
            }
        }
    }
    Some((label, ranges, active))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::test_support::{at, ws};

    #[test]
    fn signature_help_tracks_the_active_parameter() {
        let ws = ws();
        let (label, ranges, active) = signature_help(&ws, "a.wsp", at("x: X[i]", 0)).unwrap();
        assert_eq!(label, "double(x: in f32[8, 8], y: out f32[8, 8])");
        assert_eq!(&label[ranges[1].0..ranges[1].1], "y: out f32[8, 8]");
        assert_eq!(active, 0);
        let (_, _, active) = signature_help(&ws, "a.wsp", at("Y[i])", 1)).unwrap();
        assert_eq!(active, 1);
        assert!(
            signature_help(&ws, "a.wsp", at("rows)", 0)).is_none(),
            "P is no kernel"
        );
    }
}
