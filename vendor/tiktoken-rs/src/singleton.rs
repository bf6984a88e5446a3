use std::sync::LazyLock;

use crate::vendor_tiktoken::CoreBPE;

use crate::{o200k_base, o200k_harmony};

/// Returns a singleton instance of the o200k_base tokenizer.
/// Use for GPT-5, GPT-4.1, GPT-4o, and other `o` series models like `o1`, `o3`, and `o4`.
///
/// This function will only initialize the tokenizer once, and then return a reference the tokenizer
pub fn o200k_base_singleton() -> &'static CoreBPE {
    static O200K_BASE: LazyLock<CoreBPE> = LazyLock::new(|| o200k_base().unwrap());
    &O200K_BASE
}

/// Returns a singleton instance of the o200k_harmony tokenizer.
/// Use for gpt-oss models like `gpt-oss-20b`, `gpt-oss-120b`.
///
/// This function will only initialize the tokenizer once, and then return a reference the tokenizer
pub fn o200k_harmony_singleton() -> &'static CoreBPE {
    static O200K_HARMONY: LazyLock<CoreBPE> = LazyLock::new(|| o200k_harmony().unwrap());
    &O200K_HARMONY
}
