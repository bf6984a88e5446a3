//! Secrets: scrubbed as they are written, the policy in `tract config secrets`, and what a
//! store or a file holds found by `tract secrets scan`.

use crate::common::{Project, json};
use insta::assert_snapshot;

/// A GitHub token of the real shape (fake), distinct per seed.
fn token(seed: u32) -> String {
    let body: String = format!("{seed:08}")
        .chars()
        .chain("aB3dE5gH7jK9mN1pQ3sT5vW7yZ1bC".chars())
        .take(36)
        .collect();
    format!("ghp_{body}")
}

/// `text` with each marker's fingerprint (random per store) written `<fp>`.
fn markers(text: &str) -> String {
    let re = regex::Regex::new(r"\[REDACTED:([a-z0-9._-]+):[0-9a-f]+\]").unwrap();
    re.replace_all(text, "[REDACTED:$1:<fp>]").into_owned()
}

#[test]
fn add_scrubs_a_token_and_show_log_and_config_say_so() {
    let p = Project::new();
    let secret = token(1);
    let run = p.run(&["add", &format!("deploy with {secret} please")]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("scrubbed what looks like a credential (github-pat)"),
        "{}",
        run.stderr
    );
    // A message that is only a secret: the marker alone.
    p.ok(&["add", &token(2)]);
    let log = p.ok(&["log"]);
    assert!(!log.contains("ghp_"), "{log}");
    assert_snapshot!(markers(&p.ok(&["show", "HEAD~1"])).lines().skip(3)
        // The count of tokens depends on the fingerprint's digits, random per store.
        .filter(|l| !l.starts_with("tokens")).collect::<Vec<_>>().join("\n"), @"
    role    user
    scrubbed github-pat (before it was stored)

    deploy with [REDACTED:github-pat:<fp>] please
    ");
    assert_eq!(
        markers(p.ok(&["log", "--oneline"]).lines().next().unwrap())
            .split_once(' ')
            .unwrap()
            .1,
        "[REDACTED:github-pat:<fp>]"
    );
    let shown = json(&p.ok(&["show", "HEAD~1", "--json"]));
    let listed = &shown["message"]["metadata"]["tract.scrubbed"];
    assert_eq!(listed[0]["rule"], "github-pat");
    assert_eq!(listed[0]["field"], "content");
    assert_eq!(listed[0]["offset"], 12);
    assert!(!shown.to_string().contains(&secret));
    let config = p.ok(&["config", "show"]);
    assert!(
        config.contains("secrets: scrubbed as they are written, by "),
        "{config}"
    );
    let config = json(&p.ok(&["config", "show", "--json"]));
    assert_eq!(
        config["secrets"],
        serde_json::json!({"enabled": true, "rules": {}, "disabled": [], "allow": []})
    );
    assert!(
        !p.ok(&["config", "show", "--json"]).contains("key"),
        "the key is never shown"
    );
}

#[test]
fn config_secrets_changes_the_policy_and_refuses_what_would_break_it() {
    let p = Project::new();
    p.ok(&[
        "config",
        "secrets",
        "--rule",
        r"internal-id=corp-[0-9a-f]{12}",
        "--disable",
        "generic-api-key",
        "--allow",
        "/^ghp_0{36}$/",
    ]);
    let before = p.ok(&["config", "show", "--json"]);
    assert_eq!(
        json(&before)["secrets"],
        serde_json::json!({
            "enabled": true,
            "rules": {"internal-id": "corp-[0-9a-f]{12}"},
            "disabled": ["generic-api-key"],
            "allow": ["/^ghp_0{36}$/"],
        })
    );
    p.ok(&[
        "add",
        "the ticket names corp-0123456789ab and ghp_000000000000000000000000000000000000",
    ]);
    let text = markers(&p.ok(&["show", "HEAD"]));
    assert!(
        text.contains("[REDACTED:internal-id:<fp>] and ghp_000000000000000000000000000000000000"),
        "the rule of its own scrubs, the allowed value stays: {text}"
    );
    for bad in [
        vec!["--rule", "broken=([a-z"],
        vec!["--rule", "empty=x*"],
        vec!["--rule", "everything=[a-z]"],
        vec!["--rule", "no-equals"],
        vec!["--rule", "Bad Name=abc[0-9]{20}"],
        vec!["--disable", "no-such-rule"],
        vec!["--allow", "/.*/"],
        vec!["--allow", "/([/"],
        vec!["--remove-rule", "nothing-of-that-name"],
        vec!["--enable", "github-pat"],
    ] {
        let mut args = vec!["config", "secrets"];
        args.extend(bad.iter().copied());
        let run = p.fails(&args);
        assert_ne!(run.code, Some(0), "{args:?}");
        let errors: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| l.starts_with("error:"))
            .collect();
        assert_eq!(errors.len(), 1, "{args:?}: {}", run.stderr);
        assert_eq!(
            p.ok(&["config", "show", "--json"]),
            before,
            "{args:?} changed nothing"
        );
    }
    let usage = p.run(&["config", "secrets", "--on", "--off"]);
    assert_eq!(usage.code, Some(2), "{usage}");
    assert_eq!(p.ok(&["config", "show", "--json"]), before);
    p.ok(&["config", "secrets", "--off"]);
    p.ok(&["add", &format!("raw {}", token(3))]);
    assert!(p.ok(&["log", "--oneline"]).contains(&token(3)));
    assert!(
        p.ok(&["config", "show"])
            .contains("secrets: not scrubbed (turned off")
    );
    p.ok(&["config", "secrets", "--reset"]);
    assert_eq!(
        json(&p.ok(&["config", "show", "--json"]))["secrets"],
        serde_json::json!({"enabled": true, "rules": {}, "disabled": [], "allow": []})
    );
}

#[test]
fn scan_lists_what_a_store_holds_and_redact_scrubs_it_where_it_is() {
    let p = Project::new();
    p.ok(&["config", "secrets", "--off"]);
    p.ok(&["add", "read the env"]);
    p.ok(&[
        "add",
        "--json",
        r#"{"role":"assistant","content":"","tool_calls":[{"id":"c1","name":"cat","arguments":"{}"}]}"#,
    ]);
    let secret = token(4);
    p.ok(&[
        "add",
        "--role",
        "tool",
        "--name",
        "cat",
        "--tool-call-id",
        "c1",
        &format!("DEBUG=1\nGITHUB_TOKEN={secret}\n"),
    ]);
    p.ok(&["branch", "side"]);
    p.ok(&["--branch", "side", "add", &format!("again {secret}")]);
    let fsck = p.ok(&["fsck"]);
    assert!(
        fsck.contains(
            "warning: branch main: 1 message in its view holds what looks like a credential"
        ),
        "{fsck}"
    );
    let found = json(&p.ok(&["secrets", "scan", "--json"]));
    let found = found.as_array().unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["rule"], "github-pat");
    assert_eq!(found[0]["branch"], "main");
    assert_eq!(found[0]["field"], "content");
    assert_eq!(found[0]["start"], 21);
    assert_eq!(found[0]["end"], 21 + secret.len());
    let fp = found[0]["fingerprint"].as_str().unwrap().to_string();
    let all = json(&p.ok(&["secrets", "scan", "--all", "--history", "--json"]));
    assert_eq!(all.as_array().unwrap().len(), 2, "{all}");
    assert!(
        all.as_array()
            .unwrap()
            .iter()
            .all(|f| f["fingerprint"] == fp.as_str())
    );
    assert!(!p.ok(&["secrets", "scan", "--all"]).contains(&secret));
    let redacted = p.ok(&["secrets", "scan", "--all", "--redact"]);
    assert_eq!(
        redacted,
        "scrubbed 2 findings in 2 messages; ids are unchanged, views show the markers\n"
    );
    assert_eq!(
        json(&p.ok(&["secrets", "scan", "--all", "--history", "--json"])),
        serde_json::json!([])
    );
    let shown = p.ok(&["show", "HEAD"]);
    assert!(
        shown.contains(&format!("GITHUB_TOKEN=[REDACTED:github-pat:{fp}]")),
        "{shown}"
    );
    assert!(shown.contains("tool_call_id c1"));
    let fsck = p.run(&["fsck"]);
    assert_eq!(fsck.code, Some(0));
    assert!(!fsck.stdout.contains("warning"), "{}", fsck.stdout);
    let bytes = std::fs::read(p.store()).unwrap();
    assert!(!bytes.windows(secret.len()).any(|w| w == secret.as_bytes()));
}

#[test]
fn scan_checks_a_file_or_standard_input_before_an_import() {
    let p = Project::empty();
    let secret = token(5);
    let text = format!("# deploy notes\nexport GITHUB_TOKEN={secret}\n");
    std::fs::write(p.path().join("notes.sh"), &text).unwrap();
    // Without a store: the built-in rules, no fingerprint.
    assert_snapshot!(p.run(&["secrets", "scan", "notes.sh", "--json"]), @r#"
    exit: 0
    --- stdout
    [
      {
        "rule": "github-pat",
        "line": 2,
        "column": 21,
        "start": 35,
        "end": 75,
        "fingerprint": null
      }
    ]
    "#);
    assert_snapshot!(p.run_in(&["secrets", "scan", "-"], &text), @"
    exit: 0
    --- stdout
    <stdin>:2:21: github-pat
    --- stderr
    note: 1 finding in <stdin>
    ");
    let clean = p.run_in(&["secrets", "scan", "-"], "nothing to see\n");
    assert_eq!((clean.code, clean.stdout.as_str()), (Some(0), ""));
    // A secret split across two messages is not found in either: each half alone matches no
    // rule (docs/reliability.md says why).
    let (a, b) = secret.split_at(20);
    let p = Project::new();
    p.ok(&["add", &format!("the first half {a}")]);
    p.ok(&["add", &format!("{b} is the second")]);
    assert!(p.ok(&["log", "--oneline"]).contains(a));
    assert_eq!(
        json(&p.ok(&["secrets", "scan", "--json"])),
        serde_json::json!([])
    );
}

#[test]
fn a_large_adversarial_tool_result_is_scanned_and_stored() {
    let p = Project::new();
    // 10 MB of what keeps a rule trying: keywords with no value, an unterminated key block.
    let mut text = String::with_capacity(10 << 20);
    while text.len() < 10 << 20 {
        text.push_str("password= token: -----BEGIN RSA PRIVATE KEY----- aaaaaaaaaaaaaaaaaaaa ");
    }
    text.push_str(&token(6));
    let message = serde_json::json!({"role": "user", "content": text}).to_string();
    let started = std::time::Instant::now();
    p.ok_in(&["add", "--json", "-"], &message);
    let took = started.elapsed();
    let shown = p.ok(&["show", "HEAD", "--json"]);
    assert!(!shown.contains(&token(6)));
    assert!(took < std::time::Duration::from_secs(60), "{took:?}");
}
