//! The identifier-aware tokenizer of localization and of the generator's chunk retriever
//! (`generate::bm25`): words are split at snake_case and CamelCase boundaries, lowercased, and
//! the whole identifier counts too (`HTTPAdapter` → `httpadapter`, `http`, `adapter`).

use std::sync::OnceLock;

/// Words too common in issues and code to say where a bug is.
pub const STOP: [&str; 40] = [
    "the", "and", "for", "that", "this", "with", "not", "but", "are", "was", "have", "from",
    "when", "what", "which", "should", "would", "could", "can", "there", "their", "then", "than",
    "will", "been", "into", "some", "also", "here", "use", "using", "used", "get", "set", "self",
    "none", "true", "false", "return", "def",
];

/// Whether a lowercase term is left out: a stop word, a single character, a number, or longer
/// than 40 bytes.
pub fn is_stop(t: &str) -> bool {
    t.len() < 2 || t.len() > 40 || t.chars().all(|c| c.is_ascii_digit()) || STOP.contains(&t)
}

/// Split an identifier into lowercase terms: the whole word plus its snake_case and CamelCase parts.
pub fn split_terms(word: &str, out: &mut Vec<String>) {
    let lower = word.to_lowercase();
    let lw = lower.trim_matches('_');
    if !is_stop(lw) {
        out.push(lw.to_string());
    }
    let mut parts: Vec<String> = Vec::new();
    for piece in word.split('_').filter(|p| !p.is_empty()) {
        let mut cur = String::new();
        let chars: Vec<char> = piece.chars().collect();
        for (i, &c) in chars.iter().enumerate() {
            let boundary = i > 0
                && c.is_uppercase()
                && (chars[i - 1].is_lowercase()
                    || chars.get(i + 1).is_some_and(|n| n.is_lowercase()));
            if boundary && !cur.is_empty() {
                parts.push(std::mem::take(&mut cur));
            }
            cur.extend(c.to_lowercase());
        }
        if !cur.is_empty() {
            parts.push(cur);
        }
    }
    if parts.len() > 1 {
        for p in parts {
            if !is_stop(&p) && p != lw {
                out.push(p);
            }
        }
    }
}

/// Terms of a text: identifiers split into parts, lowercased, stop words dropped.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for w in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        if !w.is_empty() {
            split_terms(w, &mut out);
        }
    }
    out
}

/// English stem of a lowercase word (`iterating` → `iter`, `printing` → `print`).
pub fn stem(word: &str) -> String {
    static S: OnceLock<rust_stemmers::Stemmer> = OnceLock::new();
    S.get_or_init(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English))
        .stem(word)
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_terms_handles_case_styles() {
        let mut v = Vec::new();
        split_terms("HTTPAdapter_send_now", &mut v);
        assert!(v.contains(&"httpadapter_send_now".to_string()));
        assert!(
            v.contains(&"http".to_string())
                && v.contains(&"adapter".to_string())
                && v.contains(&"send".to_string())
        );
    }

    #[test]
    fn tokenize_keeps_whole_identifiers_and_their_parts_without_stop_words() {
        let t = tokenize("The HTTPAdapter.send() fails; see get_full_url 42");
        for want in [
            "httpadapter",
            "http",
            "adapter",
            "send",
            "get_full_url",
            "full",
            "url",
        ] {
            assert!(t.contains(&want.to_string()), "{want} in {t:?}");
        }
        // Stop words (`the`, the part `get`) and numbers are left out.
        assert!(
            !t.iter().any(|x| x == "the" || x == "get" || x == "42"),
            "{t:?}"
        );
    }
}
