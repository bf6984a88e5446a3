#![doc = include_str!("../README.md")]
mod api;
mod patched_tiktoken;
mod singleton;
mod tiktoken_ext;
mod vendor_tiktoken;

pub use api::*;
pub mod model;
pub mod tokenizer;
pub use singleton::*;
pub use tiktoken_ext::openai_public::*;

pub use patched_tiktoken::FromRank;
pub use patched_tiktoken::{SplitScratch, Splitter};
pub use vendor_tiktoken::CoreBPE;
pub use vendor_tiktoken::DecodeKeyError;
pub use vendor_tiktoken::EncodeError;
pub use vendor_tiktoken::Rank;
pub use vendor_tiktoken::byte_pair_split;
