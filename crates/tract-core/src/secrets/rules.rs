//! The built-in rules: gitleaks' default rules (bundled as `gitleaks.json`, see `GITLEAKS.md`)
//! and tract's own for the classes gitleaks lacks (credentialed URLs, authorization headers,
//! password and token assignments whatever their value's shape, AWS secret keys, Azure storage
//! keys, bare Telegram and Discord bot tokens, npm's `_authToken`, Twilio account SIDs).
//!
//! Only facts live here (patterns, keywords, thresholds, allowlists); `detect` compiles and
//! runs them. Rules are parsed once per process.

use std::sync::OnceLock;

/// How far a rule's name weighs when findings overlap: lower ranks first. A format-specific
/// rule knows what the secret is; a rule that finds a value by the key it is assigned to (or by
/// its entropy) only knows that something is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Tier {
    /// The value has a format of its own (`ghp_…`, a JWT, a private key block, a URL's password).
    Specific,
    /// tract's assignment rules and gitleaks' curl rules: a value named by its context.
    Assignment,
    /// gitleaks' `generic-api-key`: a keyword and entropy.
    Generic,
}

/// Which text a gitleaks allowlist regex is tested against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// The secret alone.
    Secret,
    /// The whole match.
    Match,
    /// The lines holding the match.
    Line,
}

/// A gitleaks allowlist (without paths: messages have none).
#[derive(Debug, Clone)]
pub(crate) struct AllowSpec {
    pub regexes: Vec<String>,
    pub target: Target,
    pub stopwords: Vec<String>,
    /// `condition = "AND"`: every kind of check given must pass (else any one).
    pub all: bool,
}

/// One built-in rule as data.
#[derive(Debug, Clone)]
pub(crate) struct RuleSpec {
    pub id: String,
    pub regex: String,
    /// The capture group holding the secret; `None`: the first non-empty group (after
    /// `key_group`), or the whole match when there is none.
    pub secret_group: Option<usize>,
    /// The group holding the assigned-to key (tract's assignment rules), checked by `detect`.
    pub key_group: Option<usize>,
    /// The secret's Shannon entropy must be above this.
    pub entropy: Option<f64>,
    /// Lowercase; the rule runs only around them (none: everywhere).
    pub keywords: Vec<String>,
    pub allowlists: Vec<AllowSpec>,
    pub tier: Tier,
    /// The whole match is the secret (private key blocks).
    pub whole: bool,
    /// The secret is named by a key saying it is one (`DB_PASSWORD=…`, `_authToken=…`,
    /// `heroku_api_key: …`): it is a secret whatever its shape, a UUID or 40 hex digits too.
    pub keyed: bool,
    /// The value must pass tract's placeholder check (`${VAR}`, `<password>`, `changeme`, …).
    pub plausible: bool,
    /// The match may span lines (runs from the first keyword to the end of the text).
    pub multiline: bool,
}

/// gitleaks rules tract does not run, and why.
pub(crate) const DROPPED: &[(&str, &str)] = &[
    (
        "hashicorp-tf-password",
        "gitleaks runs it on .tf/.hcl files only; without a path it is a password assignment, \
         which tract's `password-assignment` covers",
    ),
    (
        "kubernetes-secret-yaml",
        "gitleaks runs it on YAML files only; it looks 200 characters around `kind: Secret` \
         across lines, and values under `data:` are what tract's assignment rules find",
    ),
];

/// gitleaks' global allowlist regex `(?i)^true|false|null$` means "starts with true, holds
/// false, or ends with null" (alternation binds loosest), which would let a password holding
/// `false` through: tract anchors the three words as intended.
const GLOBAL_ALLOW_FIXES: &[(&str, &str)] =
    &[("(?i)^true|false|null$", "(?i)^(?:true|false|null)$")];

/// The rules gitleaks' file bundles, and its global allowlist.
const GITLEAKS_JSON: &str = include_str!("gitleaks.json");

/// The built-in rules and the global allowlist, parsed once.
pub(crate) struct Builtin {
    pub rules: Vec<RuleSpec>,
    pub global: AllowSpec,
}

/// The built-in rules: gitleaks' (less [`DROPPED`]) then tract's own.
pub(crate) fn builtin() -> &'static Builtin {
    static BUILTIN: OnceLock<Builtin> = OnceLock::new();
    BUILTIN.get_or_init(|| {
        let (mut rules, global) = parse_gitleaks(GITLEAKS_JSON);
        rules.extend(own_rules());
        Builtin { rules, global }
    })
}

/// The ids of the built-in rules, in order.
pub(crate) fn builtin_ids() -> impl Iterator<Item = &'static str> {
    builtin().rules.iter().map(|r| r.id.as_str())
}

fn strings(v: &serde_json::Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(|x| x.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// gitleaks' JSON as rule specs. The file is bundled and tested (`every_bundled_rule_compiles`):
/// anything unreadable in it is left out rather than a panic.
fn parse_gitleaks(json: &str) -> (Vec<RuleSpec>, AllowSpec) {
    let doc: serde_json::Value = serde_json::from_str(json).unwrap_or(serde_json::Value::Null);
    let g = &doc["allowlist"];
    let global = AllowSpec {
        regexes: strings(g, "regexes")
            .into_iter()
            .map(|r| {
                GLOBAL_ALLOW_FIXES
                    .iter()
                    .find(|(from, _)| *from == r)
                    .map_or(r, |(_, to)| to.to_string())
            })
            .map(|r| go_to_rust(&r))
            .collect(),
        target: Target::Secret,
        stopwords: strings(g, "stopwords"),
        all: false,
    };
    let mut rules = Vec::new();
    for r in doc["rules"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let (Some(id), Some(regex)) = (r["id"].as_str(), r["regex"].as_str()) else {
            continue;
        };
        if DROPPED.iter().any(|(d, _)| *d == id) {
            continue;
        }
        let allowlists = r["allowlists"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|a| AllowSpec {
                regexes: strings(a, "regexes")
                    .iter()
                    .map(|r| go_to_rust(r))
                    .collect(),
                target: match a["regexTarget"].as_str() {
                    Some("match") => Target::Match,
                    Some("line") => Target::Line,
                    _ => Target::Secret,
                },
                stopwords: strings(a, "stopwords")
                    .into_iter()
                    .map(|s| s.to_lowercase())
                    .collect(),
                all: a["condition"].as_str() == Some("AND"),
            })
            .collect();
        let generic = id.starts_with("generic");
        let context = id.starts_with("curl-");
        // gitleaks' keyword-assignment template (`heroku… = <value>`): a service's key names it.
        let keyed = !generic && regex.starts_with(r"(?i)[\w.-]{0,50}?(?:");
        rules.push(RuleSpec {
            id: id.to_string(),
            regex: go_to_rust(regex),
            secret_group: r["secretGroup"].as_u64().map(|g| g as usize),
            key_group: None,
            entropy: r["entropy"].as_f64(),
            keywords: strings(r, "keywords")
                .into_iter()
                .map(|k| k.to_lowercase())
                .collect(),
            allowlists,
            tier: if generic {
                Tier::Generic
            } else if context {
                Tier::Assignment
            } else {
                Tier::Specific
            },
            whole: id == "private-key",
            keyed,
            plausible: false,
            multiline: spans_lines(regex),
        });
    }
    (rules, global)
}

/// Whether a pattern can match across lines on purpose.
fn spans_lines(regex: &str) -> bool {
    regex.contains("(?s") || regex.contains(r"[\s\S") || regex.contains(r"[\r\n]")
}

/// gitleaks' patterns are Go RE2, which the `regex` crate reads but for one difference met in
/// the bundled file: Go takes a `{` that starts no repetition (`{{`, `${VAR}`, `{\d+}`) as a
/// literal, the `regex` crate refuses it. Such braces (and the `}` closing them) are escaped.
/// Every bundled pattern then compiles (`every_bundled_rule_compiles`).
pub(crate) fn go_to_rust(regex: &str) -> String {
    let b = regex.as_bytes();
    let mut out = String::with_capacity(regex.len() + 8);
    let (mut i, mut in_class, mut literal_braces) = (0, false, 0usize);
    while i < b.len() {
        let c = b[i];
        if c == b'\\' && i + 1 < b.len() {
            out.push_str(&regex[i..i + 2]);
            i += 2;
            continue;
        }
        match c {
            b'[' if !in_class => in_class = true,
            b']' if in_class => in_class = false,
            b'{' if !in_class => {
                let rest = &regex[i + 1..];
                let close = rest.find('}');
                let repetition = close.is_some_and(|e| {
                    let inner = &rest[..e];
                    let mut parts = inner.splitn(2, ',');
                    let lo = parts.next().unwrap_or("");
                    let hi = parts.next().unwrap_or("");
                    !lo.is_empty()
                        && lo.bytes().all(|d| d.is_ascii_digit())
                        && hi.bytes().all(|d| d.is_ascii_digit())
                });
                if !repetition {
                    out.push_str("\\{");
                    literal_braces += 1;
                    i += 1;
                    continue;
                }
            }
            b'}' if !in_class && literal_braces > 0 => {
                out.push_str("\\}");
                literal_braces -= 1;
                i += 1;
                continue;
            }
            _ => {}
        }
        let ch = regex[i..].chars().next().unwrap_or('\0');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// Key names that say their value is a password.
const PASSWORD_KEYS: &str = r"passw(?:or)?d|pwd|passphrase";
/// Key names that say their value is a secret, a token or a key.
const TOKEN_KEYS: &str = r"secret|token|api[_.-]?key|access[_.-]?key|private[_.-]?key|auth[_.-]?key|credential|signing[_.-]?key|encryption[_.-]?key|master[_.-]?key|session[_.-]?key";

/// An assignment of a value to a key holding one of `keys`: env and shell (`export X=…`),
/// YAML (`x: …`), JSON (`"x": "…"`, also escaped inside a JSON string), TOML (`x = "…"`).
/// Group 1 is the key; the value is group 2 (double quotes), 3 (single) or 4 (bare). The key
/// starts a line (`(?m:^)`, which holds where a search starts at a keyword's line, unlike a
/// character before it) or follows one that cannot be part of it; a value has no length limit
/// (an AWS session token is over 500 characters).
fn assignment(keys: &str) -> String {
    format!(
        r#"(?i)(?:(?m:^)|[^a-z0-9_.-])["']?([a-z0-9_.-]{{0,40}}(?:{keys})[a-z0-9_.-]{{0,30}})\\?["']?[ \t]{{0,5}}(?:=|:=|:|=>)[ \t]{{0,5}}(?:\\?"([^"\\\r\n]+)\\?"|'([^'\\\r\n]+)'|([^\s"'\\,;{{}}()\[\]<>\x60]+))"#
    )
}

/// tract's own rules, after gitleaks' (so gitleaks names a secret both find with one span).
fn own_rules() -> Vec<RuleSpec> {
    let rule = |id: &str, regex: String, keywords: &[&str], tier: Tier| RuleSpec {
        id: id.to_string(),
        regex,
        secret_group: None,
        key_group: None,
        entropy: None,
        keywords: keywords.iter().map(|k| k.to_string()).collect(),
        allowlists: Vec::new(),
        tier,
        whole: false,
        keyed: false,
        plausible: false,
        multiline: false,
    };
    let keyed = |mut r: RuleSpec| {
        r.keyed = true;
        r
    };
    let plausible = |mut r: RuleSpec| {
        r.plausible = true;
        r
    };
    let entropy = |mut r: RuleSpec, e: f64| {
        r.entropy = Some(e);
        r
    };
    let assigned = |id: &str, keys: &str, keywords: &[&str]| {
        let mut r = rule(id, assignment(keys), keywords, Tier::Assignment);
        r.key_group = Some(1);
        r.keyed = true;
        r.plausible = true;
        r
    };
    vec![
        keyed(rule(
            "aws-secret-access-key",
            r#"(?i)aws_?secret_?access_?key["']?[ \t]{0,5}(?:=|:=|:|=>)[ \t]{0,5}["']?([a-z0-9/+]{40})(?:[^a-z0-9/+=]|$)"#.into(),
            &["secret_access_key", "secretaccesskey"],
            Tier::Specific,
        )),
        keyed(rule(
            "azure-storage-account-key",
            r"(?i)\bAccountKey=([a-z0-9+/]{86}==)".into(),
            &["accountkey="],
            Tier::Specific,
        )),
        keyed(plausible(rule(
            "credentialed-url",
            r#"(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s:/?#@'"\x60\\<>]{0,128}:([^\s/?#@'"\x60\\<>]{1,256})@[a-z0-9\[\]._-]{1,253}"#
                .into(),
            &["://"],
            Tier::Specific,
        ))),
        rule(
            "basic-auth-header",
            r#"(?i)\bauthorization["']?[ \t]{0,5}[:=][ \t]{0,5}["']?basic[ \t]+([a-z0-9+/]{8,}={0,2})"#.into(),
            &["basic"],
            Tier::Specific,
        ),
        entropy(
            rule(
                "bearer-token",
                r"(?i)\bbearer[ \t]+([a-z0-9._~+/-]{16,}={0,2})(?:[^a-z0-9._~+/=-]|$)".into(),
                &["bearer"],
                Tier::Specific,
            ),
            3.0,
        ),
        keyed(rule(
            "npm-auth-token",
            r#"(?i)//[^\s/]{1,253}/(?:[^\s:]{0,200}/)?:_authToken[ \t]{0,3}=[ \t]{0,3}["']?([^\s"'\\$]{8,})"#.into(),
            &["_authtoken"],
            Tier::Specific,
        )),
        rule(
            "telegram-bot-token",
            // Bare, or in a Bot API URL (`/bot<token>/getUpdates`), where no word boundary
            // comes before it.
            r"(?:\bbot|\b)([0-9]{8,10}:AA[A-Za-z0-9_-]{33})(?:[^A-Za-z0-9_-]|$)".into(),
            &[":aa"],
            Tier::Specific,
        ),
        entropy(
            rule(
                "discord-bot-token",
                r"\b([MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38})(?:[^A-Za-z0-9_.-]|$)".into(),
                &[],
                Tier::Specific,
            ),
            3.5,
        ),
        rule(
            "twilio-account-sid",
            r"\b(AC[0-9a-f]{32})\b".into(),
            &[],
            Tier::Specific,
        ),
        keyed(plausible(rule(
            "password-flag",
            // A password on a command line: `mysql -p'…'` (no space: `-p` alone prompts),
            // `--password=…`, redis' `--requirepass …` (also as a JSON or YAML list's items).
            r#"(?i)(?:\bmysql(?:dump|admin|sh)?\b[^\n|;&]{0,200}?\s-p|--password(?:=|[ \t]+)|--requirepass["']?[ \t,]+)["']?([^\s"',\]]{4,})"#
                .into(),
            &["mysql", "--password", "--requirepass"],
            Tier::Assignment,
        ))),
        rule(
            "private-key-base64",
            // A PEM private key encoded whole in base64 (a kubeconfig's `client-key-data`, a
            // Kubernetes secret, a CI variable): `-----BEGIN … PRIVATE KEY-----` encoded.
            r"\b(LS0tLS1CRUdJTi(?:BSU0EgUFJJVkFURSBLRVkt|BQUklWQVRFIEtFWS0t|BFQyBQUklWQVRFIEtFWS0t|BPUEVOU1NIIFBSSVZBVEUgS0VZLS0t|BEU0EgUFJJVkFURSBLRVkt|BFTkNSWVBURUQgUFJJVkFURSBLRVkt)[A-Za-z0-9+/]*={0,2})".into(),
            &["ls0tls1crudjti"],
            Tier::Specific,
        ),
        assigned(
            "password-assignment",
            PASSWORD_KEYS,
            &["passwd", "password", "pwd", "passphrase"],
        ),
        assigned(
            "token-assignment",
            TOKEN_KEYS,
            &[
                "secret",
                "token",
                "apikey",
                "api_key",
                "api-key",
                "api.key",
                "access_key",
                "access-key",
                "accesskey",
                "private_key",
                "private-key",
                "privatekey",
                "auth_key",
                "authkey",
                "credential",
                "signing_key",
                "encryption_key",
                "master_key",
                "session_key",
            ],
        ),
    ]
}

/// One FAKE secret of each class the built-in rules cover: `(rule that names it, a text
/// holding it, the secret's value)`. The tests check each is found, with that name and span;
/// the policy's validation refuses an allow pattern that matches every value.
pub(crate) const PROBES: &[(&str, &str, &str)] = &[
    (
        "aws-access-token",
        "aws_access_key_id = AKIAQX4ZJ2M7NWLP5RTE",
        "AKIAQX4ZJ2M7NWLP5RTE",
    ),
    (
        "aws-secret-access-key",
        "aws_secret_access_key = q8Zt/3mKp0vR7xW2nB5yL9cF4hJ6sD1aG0eU8iO+",
        "q8Zt/3mKp0vR7xW2nB5yL9cF4hJ6sD1aG0eU8iO+",
    ),
    (
        "github-pat",
        "GITHUB_TOKEN=ghp_R7tK2mQ9xW4zL8nB3vC6yH1jF5dS0aP7gE2u",
        "ghp_R7tK2mQ9xW4zL8nB3vC6yH1jF5dS0aP7gE2u",
    ),
    (
        "github-oauth",
        "token gho_Z3xC8vB1nM6qW9eR2tY5uI0oP4aS7dF3gH1j",
        "gho_Z3xC8vB1nM6qW9eR2tY5uI0oP4aS7dF3gH1j",
    ),
    (
        "github-app-token",
        "installation ghs_K9mN2bV5cX8zL1kJ4hG7fD0sA3qW6eR9tY2u",
        "ghs_K9mN2bV5cX8zL1kJ4hG7fD0sA3qW6eR9tY2u",
    ),
    (
        "github-fine-grained-pat",
        "pat: 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",
        "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",
    ),
    (
        "gitlab-pat",
        "git remote set-url origin glpat-Xq3Lm9Rt7Vz2Kp5Wn8Bc",
        "glpat-Xq3Lm9Rt7Vz2Kp5Wn8Bc",
    ),
    (
        "npm-access-token",
        "NPM_TOKEN npm_a8B3c9D2e7F1g6H0i5J4k3L2m1N0o9P8q7R6",
        "npm_a8B3c9D2e7F1g6H0i5J4k3L2m1N0o9P8q7R6",
    ),
    (
        "npm-auth-token",
        "//registry.npmjs.org/:_authToken=4f9c2e7a-1b3d-4e8f-9a6c-5d2b7e1f0c3a",
        "4f9c2e7a-1b3d-4e8f-9a6c-5d2b7e1f0c3a",
    ),
    (
        "pypi-upload-token",
        "password = pypi-AgEIcHlwaS5vcmcCJGQ4ZTFhYjM5LWI3YzItNDFkMC04ZjJlLTZhOTljYzE4YjM0NQACKlszLCI5",
        "pypi-AgEIcHlwaS5vcmcCJGQ4ZTFhYjM5LWI3YzItNDFkMC04ZjJlLTZhOTljYzE4YjM0NQACKlszLCI5",
    ),
    (
        "openai-api-key",
        "OPENAI_API_KEY=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",
        "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",
    ),
    (
        "openai-api-key",
        "key 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 in the notebook",
        "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",
    ),
    (
        "anthropic-api-key",
        "ANTHROPIC_API_KEY=sk-ant-api03-Zx8Cv6Bn4Mq2Wr0Ty8Ui6Op4As2Df0Gh8Jk6Lz4Xc2Vb0Nm8Qw6Er4Ty2Ui0Op8As6Df4Gh2Jk0Lz8Xc6Vb4Nm2Qw0Er8AA",
        "sk-ant-api03-Zx8Cv6Bn4Mq2Wr0Ty8Ui6Op4As2Df0Gh8Jk6Lz4Xc2Vb0Nm8Qw6Er4Ty2Ui0Op8As6Df4Gh2Jk0Lz8Xc6Vb4Nm2Qw0Er8AA",
    ),
    (
        "gcp-api-key",
        "maps key AIzaSyD3f8K2m9QxR7tV1wZ4bN6cJ0hL5pE8sG2 here",
        "AIzaSyD3f8K2m9QxR7tV1wZ4bN6cJ0hL5pE8sG2",
    ),
    (
        "azure-storage-account-key",
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Qm9ndXNLZXlGb3JUZXN0czEyMzQ1Njc4OTBhYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0NTY3ODkwQU==;EndpointSuffix=core.windows.net",
        "Qm9ndXNLZXlGb3JUZXN0czEyMzQ1Njc4OTBhYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0NTY3ODkwQU==",
    ),
    (
        "azure-ad-client-secret",
        "AZURE_CLIENT_SECRET=Xy78Q~kP3mN9vB2cL5xZ8qW1eR4tY7uI0oA3sD",
        "Xy78Q~kP3mN9vB2cL5xZ8qW1eR4tY7uI0oA3sD",
    ),
    (
        "slack-bot-token",
        "SLACK_BOT_TOKEN=xoxb-2345678901-2345678901234-Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7",
        "xoxb-2345678901-2345678901234-Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7",
    ),
    (
        "slack-user-token",
        "xoxp-2345678901-2345678901-2345678901234-a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6 was pasted",
        "xoxp-2345678901-2345678901-2345678901234-a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6",
    ),
    (
        "slack-webhook-url",
        "curl -X POST https://hooks.slack.com/services/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D",
        "https://hooks.slack.com/services/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D",
    ),
    (
        "stripe-access-token",
        "stripe.api_key = 'sk_live_4eC39HqLyjWDarjtT1zdp7dcXy9'",
        "sk_live_4eC39HqLyjWDarjtT1zdp7dcXy9",
    ),
    (
        "stripe-access-token",
        "restricted rk_live_51Hx9Kq2Lm8Np4Rt6Vw3Yz7Ab1Cd5Ef",
        "rk_live_51Hx9Kq2Lm8Np4Rt6Vw3Yz7Ab1Cd5Ef",
    ),
    (
        "twilio-api-key",
        "TWILIO_API_KEY=SK3f9a2c7e1b4d8f6a0c5e9b2d7f1a4c8e",
        "SK3f9a2c7e1b4d8f6a0c5e9b2d7f1a4c8e",
    ),
    (
        "twilio-account-sid",
        "account AC7d2f9b4e1a8c3f6d0b5e2a9c4f7d1b8e",
        "AC7d2f9b4e1a8c3f6d0b5e2a9c4f7d1b8e",
    ),
    (
        "sendgrid-api-token",
        "SENDGRID_API_KEY=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",
        "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",
    ),
    (
        "discord-bot-token",
        "bot.run(\"MTA4NzY1NDMyMTA5ODc2NTQzMg.Gx7Kq2.Lm9Np4Rt6Vw3Yz7Ab1Cd5Ef8Gh0Ij2Kl4Mn6\")",
        "MTA4NzY1NDMyMTA5ODc2NTQzMg.Gx7Kq2.Lm9Np4Rt6Vw3Yz7Ab1Cd5Ef8Gh0Ij2Kl4Mn6",
    ),
    (
        "telegram-bot-token",
        "bot 7123456789:AAH3kL9mQ2xR7tV1wZ4bN6cJ0hP5sE8dG2f answers",
        "7123456789:AAH3kL9mQ2xR7tV1wZ4bN6cJ0hP5sE8dG2f",
    ),
    (
        "private-key",
        "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7Zt3mKp0vR7xW2nB5yL9cF4hJ6sD1aG0eU8iOQx3Lm9Rt7Vz2Kp5Wn8Bc\nZt3mKp0vR7xW2nB5yL9cF4hJ6sD1aG0eU8iO\n-----END RSA PRIVATE KEY-----\nend",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7Zt3mKp0vR7xW2nB5yL9cF4hJ6sD1aG0eU8iOQx3Lm9Rt7Vz2Kp5Wn8Bc\nZt3mKp0vR7xW2nB5yL9cF4hJ6sD1aG0eU8iO\n-----END RSA PRIVATE KEY-----",
    ),
    (
        "jwt",
        "session eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkZha2UifQ.Kx7Lm9Nq2Rs4Tv6Wy8Za1Bc3De5Fg7Hi9Jk1 expired",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkZha2UifQ.Kx7Lm9Nq2Rs4Tv6Wy8Za1Bc3De5Fg7Hi9Jk1",
    ),
    (
        "bearer-token",
        "Authorization: Bearer Zk3mQ9xW2pL7vB4nR8tY1cJ6hF0dS5aG",
        "Zk3mQ9xW2pL7vB4nR8tY1cJ6hF0dS5aG",
    ),
    (
        "basic-auth-header",
        "Authorization: Basic YWxpY2U6czNjcjN0LWZha2U=",
        "YWxpY2U6czNjcjN0LWZha2U=",
    ),
    (
        "credentialed-url",
        "DATABASE_URL=postgresql://app:Tr0ub4dor-fake@db.internal:5432/app",
        "Tr0ub4dor-fake",
    ),
    (
        "credentialed-url",
        "mongodb+srv://admin:Hx9kLm2qRt@cluster0.example.net/test",
        "Hx9kLm2qRt",
    ),
    (
        "password-assignment",
        "password = \"hunter2horse\"",
        "hunter2horse",
    ),
    (
        "token-assignment",
        "SECRET_KEY = \"3f9a2c7e1b4d8f6a0c5e9b2d7f1a4c8e3f9a2c7e\"",
        "3f9a2c7e1b4d8f6a0c5e9b2d7f1a4c8e3f9a2c7e",
    ),
    (
        "telegram-bot-token",
        "POST https://api.telegram.org/bot7123456789:AAH3kL9mQ2xR7tV1wZ4bN6cJ0hP5sE8dG2f/getUpdates",
        "7123456789:AAH3kL9mQ2xR7tV1wZ4bN6cJ0hP5sE8dG2f",
    ),
    (
        "password-flag",
        "$ mysql -h db -u root -p'lanternHarbor1993' app",
        "lanternHarbor1993",
    ),
    (
        "password-flag",
        "command: [\"redis-server\", \"--requirepass\", \"canyonMeadow2020\"]",
        "canyonMeadow2020",
    ),
    (
        "private-key-base64",
        "    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb2dJQkFBS0NBUUVBdG91\n",
        "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb2dJQkFBS0NBUUVBdG91",
    ),
    (
        "password-assignment",
        "debug = false\nsecret_password = \"C(4W94ibRqix-0=br%SKSi@0&UZsP\"",
        "C(4W94ibRqix-0=br%SKSi@0&UZsP",
    ),
];
