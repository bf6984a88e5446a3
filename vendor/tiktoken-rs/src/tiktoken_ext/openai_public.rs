pub const ENDOFTEXT: &str = "<|endoftext|>";
pub const ENDOFPROMPT: &str = "<|endofprompt|>";

/// Adaptation of the tiktoken crate for use in Rust projects
use anyhow::Result;
use base64::{Engine as _, engine::general_purpose};

use rustc_hash::FxHashMap as HashMap;

use crate::{CoreBPE, Rank};

/// An encoding's file, a token in base64 and its rank per line, as a map sized for it up front
/// (tract's patch, vendor/README.md: each decoded token moved in, not copied, and no rehashing
/// while the map grows).
fn parse_ranks(file: &str) -> Result<HashMap<Vec<u8>, Rank>> {
    let mut encoder = HashMap::with_capacity_and_hasher(file.lines().count(), Default::default());
    for line in file.lines() {
        let mut parts = line.split(' ');
        let token = general_purpose::STANDARD.decode(parts.next().unwrap())?;
        let rank: Rank = parts.next().unwrap().parse().unwrap();
        encoder.insert(token, rank);
    }
    Ok(encoder)
}

pub const O200K_BASE_PAT_STR: &str = concat!(
    r#"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"#,
    "|",
    r#"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"#,
    "|",
    r#"\p{N}{1,3}"#,
    "|",
    r#" ?[^\s\p{L}\p{N}]+[\r\n/]*"#,
    "|",
    r#"\s*[\r\n]+"#,
    "|",
    r#"\s+(?!\S)"#,
    "|",
    r#"\s+"#
);

/// Use for GPT-5, GPT-4.1, GPT-4o, and other `o` series models like `o1`, `o3`, and `o4`.
/// Initializes and returns a new instance of the o200k_base tokenizer.
pub fn o200k_base() -> Result<CoreBPE> {
    let o200k_base = include_str!("../../assets/o200k_base.tiktoken");

    let encoder = parse_ranks(o200k_base)?;

    let mut special_tokens = HashMap::default();
    special_tokens.insert(String::from(ENDOFTEXT), 199999);
    special_tokens.insert(String::from(ENDOFPROMPT), 200018);

    let bpe = CoreBPE::new(encoder, special_tokens, O200K_BASE_PAT_STR)?;
    Ok(bpe)
}

/// Use for gpt-oss models like `gpt-oss-20b`, `gpt-oss-120b`.
/// Initializes and returns a new instance of the o200k_harmony tokenizer.
pub fn o200k_harmony() -> Result<CoreBPE> {
    let o200k_harmony = include_str!("../../assets/o200k_base.tiktoken");

    let encoder = parse_ranks(o200k_harmony)?;

    let mut special_tokens = HashMap::default();

    special_tokens.insert(String::from("<|startoftext|>"), 199998);
    special_tokens.insert(String::from("<|endoftext|>"), 199999);
    special_tokens.insert(String::from("<|reserved_200000|>"), 200000);
    special_tokens.insert(String::from("<|reserved_200001|>"), 200001);
    special_tokens.insert(String::from("<|return|>"), 200002);
    special_tokens.insert(String::from("<|constrain|>"), 200003);
    special_tokens.insert(String::from("<|reserved_200004|>"), 200004);
    special_tokens.insert(String::from("<|channel|>"), 200005);
    special_tokens.insert(String::from("<|start|>"), 200006);
    special_tokens.insert(String::from("<|end|>"), 200007);
    special_tokens.insert(String::from("<|message|>"), 200008);
    special_tokens.insert(String::from("<|reserved_200009|>"), 200009);
    special_tokens.insert(String::from("<|reserved_200010|>"), 200010);
    special_tokens.insert(String::from("<|reserved_200011|>"), 200011);
    special_tokens.insert(String::from("<|call|>"), 200012);
    for i in 200013..=201087 {
        // reserved tokens from 200013 to 201087
        special_tokens.insert(format!("<|reserved_{}|>", i), i);
    }

    let bpe = CoreBPE::new(encoder, special_tokens, O200K_BASE_PAT_STR)?;
    Ok(bpe)
}
