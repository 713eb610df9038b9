//! The wsp language server
