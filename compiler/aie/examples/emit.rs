//! Emits a program's AIE tree into a directory (until the CLI registers the backend):
//! `cargo run -p wsp-aie --example emit -- FILE.wsp OUT_DIR`.

use wsp_backend::{Backend, EmitOptions};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(file), Some(out)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: emit FILE.wsp OUT_DIR");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read {file}: {e}");
            std::process::exit(2);
        }
    };
    let mut ws = wsp_core::Workspace::new();
    ws.set_file(file, text);
    let program = match wsp_lower::lower(&ws, file) {
        Ok(p) => p,
        Err(d) => {
            eprintln!("error: {file} does not lower: {d:?}");
            std::process::exit(1);
        }
    };
    match wsp_aie::AieBackend.emit(&program, &EmitOptions::default()) {
        Ok((tree, warnings)) => {
            for w in warnings {
                eprintln!("warning: {}", w.message);
            }
            for (path, bytes) in tree.iter() {
                let p = std::path::Path::new(out).join(path);
                if let Some(d) = p.parent() {
                    let _ = std::fs::create_dir_all(d);
                }
                if let Err(e) = std::fs::write(&p, bytes) {
                    eprintln!("error: cannot write {}: {e}", p.display());
                    std::process::exit(2);
                }
            }
        }
        Err(diags) => {
            for d in diags {
                eprintln!("error: {}", d.message);
                if let Some(h) = d.help {
                    eprintln!("  help: {h}");
                }
            }
            std::process::exit(1);
        }
    }
}
