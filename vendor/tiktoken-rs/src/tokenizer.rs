/*!
 * lists out the available tokenizers for different OpenAI models.
 */

use std::{collections::HashMap, sync::LazyLock};

/// Enum representing the available tokenizers for different OpenAI models.
///
/// This enum lists the possible tokenizer types that can be used for tokenizing text
/// when working with various OpenAI models.
///
/// # Example
///
/// ```
/// use tiktoken_rs::tokenizer::Tokenizer;
///
/// let tokenizer = Tokenizer::O200kBase;
/// ```
#[derive(Debug, PartialEq, Eq, Hash, Copy, Clone)]
pub enum Tokenizer {
    O200kHarmony,
    O200kBase,
}

// Keep this in sync with (less the models of the encodings this copy left out: vendor/README.md):
// https://github.com/openai/tiktoken/blob/0.14.0/tiktoken/model.py#L7-L27
const MODEL_PREFIX_TO_TOKENIZER: &[(&str, Tokenizer)] = &[
    ("o1-", Tokenizer::O200kBase),
    ("o3-", Tokenizer::O200kBase),
    ("o4-mini-", Tokenizer::O200kBase),
    // chat
    ("gpt-5", Tokenizer::O200kBase),
    ("gpt-4.5-", Tokenizer::O200kBase),
    ("gpt-4.1-", Tokenizer::O200kBase),
    ("chatgpt-4o-", Tokenizer::O200kBase),
    ("gpt-4o-", Tokenizer::O200kBase), // e.g., gpt-4o-2024-05-13
    ("gpt-oss-", Tokenizer::O200kHarmony),
];

const EXTRA_MODEL_PREFIX_TO_TOKENIZER: &[(&str, Tokenizer)] =
    &[("codex-mini", Tokenizer::O200kBase)];

// Keep this in sync with (less the models of the encodings this copy left out: vendor/README.md):
// https://github.com/openai/tiktoken/blob/0.14.0/tiktoken/model.py#L29-L85
const MODEL_TO_TOKENIZER: &[(&str, Tokenizer)] = &[
    // reasoning
    ("o1", Tokenizer::O200kBase),
    ("o3", Tokenizer::O200kBase),
    ("o4-mini", Tokenizer::O200kBase),
    // chat
    ("gpt-5", Tokenizer::O200kBase),
    ("gpt-4.1", Tokenizer::O200kBase),
    ("gpt-4o", Tokenizer::O200kBase),
];

static MODEL_TO_TOKENIZER_MAP: LazyLock<HashMap<&'static str, Tokenizer>> = LazyLock::new(|| {
    let mut map = HashMap::new();
    MODEL_TO_TOKENIZER.iter().for_each(|&(model, tokenizer)| {
        map.insert(model, tokenizer);
    });
    map
});

/// Returns the tokenizer type used by a model.
///
/// This function retrieves the corresponding tokenizer enum variant for the given model name. It first looks
/// for an exact match in the `MODEL_TO_TOKENIZER` mapping. If it doesn't find a match, it checks for
/// model name prefixes in the `MODEL_PREFIX_TO_TOKENIZER` mapping.
///
/// # Arguments
///
/// * `model_name` - A string slice representing the model name for which the tokenizer should be retrieved.
///
/// # Examples
///
/// ```
/// use tiktoken_rs::tokenizer::{get_tokenizer, Tokenizer};
/// let model = "gpt-4o-2024-05-13";
/// let tokenizer = get_tokenizer(model).unwrap();
/// assert_eq!(tokenizer, Tokenizer::O200kBase);
/// ```
///
/// # Returns
///
/// If a tokenizer is found for the given model name, the function returns an `Option` containing the tokenizer
/// enum variant; otherwise, it returns `None`.
pub fn get_tokenizer(model_name: &str) -> Option<Tokenizer> {
    if let Some(rest) = model_name.strip_prefix("ft:") {
        let base = rest.split(':').next().unwrap_or(rest);
        return get_tokenizer(base);
    }
    if let Some(tokenizer) = MODEL_TO_TOKENIZER_MAP.get(model_name) {
        return Some(*tokenizer);
    }
    if let Some(tokenizer) = MODEL_PREFIX_TO_TOKENIZER
        .iter()
        .find(|(model_prefix, _)| model_name.starts_with(*model_prefix))
    {
        return Some(tokenizer.1);
    }
    if let Some(tokenizer) = EXTRA_MODEL_PREFIX_TO_TOKENIZER
        .iter()
        .find(|(model_prefix, _)| model_name.starts_with(*model_prefix))
    {
        return Some(tokenizer.1);
    }

    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_gpt5_prefix_matches_upstream() {
        // Upstream accepts any name beginning with "gpt-5", including unknown suffixes.
        for suffix in ["", "-mini", ".4", "_future"] {
            assert_eq!(
                get_tokenizer(&format!("gpt-5{suffix}")),
                Some(Tokenizer::O200kBase)
            );
        }
        assert_eq!(get_tokenizer("gpt-6_future"), None);
    }

    #[test]
    fn test_get_tokenizer() {
        // GPT-5 series
        assert_eq!(get_tokenizer("gpt-5"), Some(Tokenizer::O200kBase));
        assert_eq!(get_tokenizer("gpt-5-mini"), Some(Tokenizer::O200kBase));
        assert_eq!(get_tokenizer("gpt-5-nano"), Some(Tokenizer::O200kBase));
        assert_eq!(get_tokenizer("gpt-5.4"), Some(Tokenizer::O200kBase));
        assert_eq!(get_tokenizer("gpt-5.4-mini"), Some(Tokenizer::O200kBase));
        assert_eq!(get_tokenizer("gpt-5.4-pro"), Some(Tokenizer::O200kBase));
        assert_eq!(get_tokenizer("gpt-5.2"), Some(Tokenizer::O200kBase));
        assert_eq!(get_tokenizer("gpt-5.2-pro"), Some(Tokenizer::O200kBase));
        assert_eq!(get_tokenizer("gpt-5.2-codex"), Some(Tokenizer::O200kBase));
        assert_eq!(get_tokenizer("gpt-5.1-codex"), Some(Tokenizer::O200kBase));
        assert_eq!(
            get_tokenizer("gpt-5.1-codex-mini"),
            Some(Tokenizer::O200kBase)
        );
        assert_eq!(get_tokenizer("gpt-5.3-codex"), Some(Tokenizer::O200kBase));
        assert_eq!(
            get_tokenizer("gpt-5.3-codex-spark"),
            Some(Tokenizer::O200kBase)
        );
        assert_eq!(get_tokenizer("gpt-5-codex"), Some(Tokenizer::O200kBase));
        assert_eq!(get_tokenizer("codex-mini"), Some(Tokenizer::O200kBase));
        assert_eq!(
            get_tokenizer("codex-mini-latest"),
            Some(Tokenizer::O200kBase)
        );
        assert_eq!(get_tokenizer("gpt-5.0"), Some(Tokenizer::O200kBase));
        // Reasoning series
        assert_eq!(get_tokenizer("o4-mini"), Some(Tokenizer::O200kBase));
        assert_eq!(
            get_tokenizer("o4-mini-2026-06-02"),
            Some(Tokenizer::O200kBase)
        );
        assert_eq!(get_tokenizer("o4"), None);
        assert_eq!(get_tokenizer("o4-pro"), None);
        // GPT-4 series
        assert_eq!(get_tokenizer("gpt-4o"), Some(Tokenizer::O200kBase));
        assert_eq!(
            get_tokenizer("gpt-4o-2024-05-13"),
            Some(Tokenizer::O200kBase)
        );
        assert_eq!(
            get_tokenizer("chatgpt-4o-latest"),
            Some(Tokenizer::O200kBase)
        );
        // gpt-oss
        assert_eq!(get_tokenizer("gpt-oss-20b"), Some(Tokenizer::O200kHarmony));
        assert_eq!(get_tokenizer("gpt-oss-120b"), Some(Tokenizer::O200kHarmony));
        // Fine-tuned (ft: prefix stripped, then resolved via base model)
        assert_eq!(
            get_tokenizer("ft:gpt-4o:org:name:id"),
            Some(Tokenizer::O200kBase)
        );
        assert_eq!(
            get_tokenizer("ft:gpt-5:org:name"),
            Some(Tokenizer::O200kBase)
        );
        // Models of the encodings this copy left out (vendor/README.md)
        for model in [
            "gpt-4",
            "gpt-4-0125-preview",
            "gpt-3.5-turbo",
            "ft:gpt-3.5-turbo:XXXXXX:2023-11-11",
            "text-embedding-3-small",
            "text-davinci-003",
            "code-search-ada-code-001",
            "gpt2",
        ] {
            assert_eq!(get_tokenizer(model), None, "{model}");
        }
        // Unknown
        assert_eq!(get_tokenizer("foo"), None);
    }
}
