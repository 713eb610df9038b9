//! The JSON Schema of the Program IR, derived from the Rust types (`schemars`, honouring their
//! serde attributes). The committed copy is docs/program-ir.schema.json; `wsp emit --ir-schema`
//! prints it, and a test keeps the two equal.

use crate::Program;

/// The schema of a serialized [`Program`] (JSON Schema draft 2020-12).
pub fn program_schema() -> serde_json::Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(Program)).unwrap_or_default();
    if let Some(obj) = schema.as_object_mut() {
        obj.insert(
            "$comment".into(),
            format!(
                "The Program IR of wsp, version {}: what `wsp emit --target ir` prints and external backends read. Generated from compiler/ir by `wsp emit --ir-schema`; do not edit.",
                crate::IR_VERSION
            )
            .into(),
        );
    }
    schema
}

/// [`program_schema`] as pretty-printed JSON with a final newline (the committed file's text).
pub fn program_schema_json() -> String {
    let mut s = serde_json::to_string_pretty(&program_schema()).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committed_schema_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/program-ir.schema.json");
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == program_schema_json(),
            "docs/program-ir.schema.json is out of date; regenerate it with\n  cargo run -p wsp -- emit --ir-schema > docs/program-ir.schema.json"
        );
    }

    #[test]
    fn the_schema_follows_the_serde_shape() {
        let s = program_schema();
        assert_eq!(s["type"], "object");
        assert_eq!(s["required"], serde_json::json!(["version"]));
        let defs = s["$defs"].as_object().expect("definitions");
        // Internally tagged enums carry their tag; ids are plain integers.
        let op = serde_json::to_string(&defs["Op"]).unwrap();
        assert!(op.contains("\"kind\""), "{op}");
        assert_eq!(defs["ValueId"]["type"], "integer");
        // Scalars are one-key objects; non-finite floats are the three strings.
        let scalar = serde_json::to_string(&defs["ScalarValue"]).unwrap();
        for w in ["\"float\"", "\"int\"", "\"uint\"", "\"bool\""] {
            assert!(scalar.contains(w), "{w}: {scalar}");
        }
        let special = serde_json::to_string(&defs["SpecialFloat"]).unwrap();
        for w in ["\"inf\"", "\"-inf\"", "\"nan\""] {
            assert!(special.contains(w), "{w}: {special}");
        }
    }
}
