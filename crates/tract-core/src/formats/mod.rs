//! Formats other tools speak: providers' request bodies (compile), OpenAI Responses items,
//! renderings kept across steps, Claude Code's session files, the transcripts `tract import` reads and the exports it writes.

pub mod claude_code;
pub mod claude_code_export;
pub mod compile;
pub mod exports;
pub mod imports;
pub mod render;
pub mod response_body;
pub mod responses;
pub mod transcript;
