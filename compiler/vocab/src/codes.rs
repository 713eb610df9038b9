//! Diagnostic codes, one constant each (`codes::E0101`), declared by their explanation files
//! (`compiler/diagnostics/explanations/<CODE>.md`): a code used in the compiler exists exactly
//! when it is explained, and a misspelt one does not compile.

include!(concat!(env!("OUT_DIR"), "/codes.rs"));

#[cfg(test)]
mod tests {
    #[test]
    fn codes_are_sorted_and_well_formed() {
        assert!(super::ALL.len() > 10);
        assert!(super::ALL.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(super::E0101, "E0101");
    }
}
