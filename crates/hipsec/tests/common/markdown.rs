//! The shell commands of the user docs (README.md, docs/*.md): their code blocks, fenced or
//! indented, each with the `<!-- test: ... -->` mark written above it, and the command lines
//! in them with the host and prompt they are typed at (`a#`, `b$`, none).

use std::path::Path;

/// A code block of a Markdown file.
#[derive(Debug, Clone)]
pub struct Block {
    /// The file, relative to the repository (`docs/hip.md`).
    pub file: String,
    /// The line of its first content line (1-based).
    pub line: usize,
    /// The fence's info string (`sh`, `toml`, ``); `indented` for an indented block.
    pub lang: String,
    /// What the `<!-- test: MARK -->` line above it says, trimmed.
    pub mark: Option<String>,
    /// Its lines with their line numbers, indentation removed.
    pub lines: Vec<(usize, String)>,
}

impl Block {
    pub fn text(&self) -> String {
        self.lines.iter().map(|(_, l)| format!("{l}\n")).collect()
    }
}

/// One command line of a block, `\` continuations joined and the shell comment cut.
#[derive(Debug, Clone)]
pub struct DocCommand {
    pub file: String,
    pub line: usize,
    /// The host of its prompt (`a` of `a#`, `ha` of `ha$`), if any.
    pub host: Option<String>,
    pub text: String,
}

impl DocCommand {
    pub fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// The words a line must start with to be a command in a block that does not say it is shell.
const COMMAND_WORDS: &[&str] = &[
    "hipsec", "ip", "ping", "tshark", "tcpdump", "swanctl", "sysctl", "cargo", "sudo", "docker",
    "podman", "nft", "head", "xxd", "jq", "openssl", "watch",
];

fn mark_of(line: &str) -> Option<String> {
    let inner = line.trim().strip_prefix("<!--")?.strip_suffix("-->")?.trim();
    Some(inner.strip_prefix("test:")?.trim().to_string())
}

/// The code blocks of a Markdown text; `file` names it in what they report.
pub fn blocks(file: &str, text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    // The mark of the last non-blank line before the one at `i`.
    let mark_before =
        |i: usize| lines[..i].iter().rev().find(|l| !l.trim().is_empty()).and_then(|l| mark_of(l));
    while i < lines.len() {
        let l = lines[i];
        let t = l.trim_start();
        let indent = l.len() - t.len();
        if t.starts_with("```") && indent < 4 {
            let lang = t.trim_start_matches('`').trim().to_string();
            let mark = mark_before(i);
            let start = i + 2;
            let mut body = Vec::new();
            i += 1;
            while i < lines.len() && !lines[i].trim_start().starts_with("```") {
                let s = lines[i];
                let cut = s.len() - s.trim_start().len();
                body.push((i + 1, s[cut.min(indent)..].to_string()));
                i += 1;
            }
            out.push(Block { file: file.into(), line: start, lang, mark, lines: body });
            i += 1;
            continue;
        }
        // An indented block: 4 spaces after a blank line, outside a list item's paragraph.
        let after_blank = i == 0 || lines[i - 1].trim().is_empty();
        if indent >= 4 && !t.is_empty() && after_blank {
            let mark = mark_before(i);
            let mut body = Vec::new();
            while i < lines.len() && (lines[i].starts_with("    ") || lines[i].trim().is_empty()) {
                body.push((i + 1, lines[i].get(4..).unwrap_or("").to_string()));
                i += 1;
            }
            while body.last().is_some_and(|(_, l)| l.trim().is_empty()) {
                body.pop();
            }
            let line = body[0].0;
            out.push(Block { file: file.into(), line, lang: "indented".into(), mark, lines: body });
            continue;
        }
        i += 1;
    }
    out
}

/// `a# `, `ha$ `, `$ `, `# ` at the start of a line (a host of one to three letters): (host,
/// rest).
fn prompt(line: &str) -> Option<(Option<String>, &str)> {
    let host: String = line.chars().take_while(|c| c.is_ascii_lowercase()).collect();
    let rest = &line[host.len()..];
    if host.len() > 3 || !(rest.starts_with("# ") || rest.starts_with("$ ")) {
        return None;
    }
    Some(((!host.is_empty()).then_some(host), &rest[2..]))
}

/// `line` without its shell comment (a `#` that starts a word).
fn uncomment(line: &str) -> &str {
    let b = line.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'#' && (i == 0 || b[i - 1].is_ascii_whitespace()) {
            return line[..i].trim_end();
        }
    }
    line.trim_end()
}

/// The command lines of a block. TOML and text blocks have none; in a block with prompts only
/// the prompted lines are commands (the rest is their output); a `sh` block's every line is
/// one; in any other block a line is a command when it starts with a command's name.
pub fn commands(block: &Block) -> Vec<DocCommand> {
    if matches!(block.lang.as_str(), "toml" | "text" | "json") {
        return Vec::new();
    }
    let prompted = block.lines.iter().any(|(_, l)| prompt(l).is_some());
    let shell = matches!(block.lang.as_str(), "sh" | "bash" | "shell" | "console");
    let mut out: Vec<DocCommand> = Vec::new();
    let mut open = false;
    for (n, raw) in &block.lines {
        if open {
            let body = uncomment(raw.trim());
            if let Some(last) = out.last_mut() {
                last.text.push(' ');
                last.text.push_str(body.trim_end_matches('\\').trim());
            }
            open = body.ends_with('\\');
            continue;
        }
        let (host, rest) = match prompt(raw) {
            Some((h, r)) => (h, r),
            None if prompted => continue,
            None => (None, raw.as_str()),
        };
        let body = uncomment(rest.trim());
        if body.is_empty() {
            continue;
        }
        let first = body.split_whitespace().next().unwrap_or("");
        let is_command =
            prompted || shell || COMMAND_WORDS.contains(&first) || first.starts_with("./");
        if !is_command {
            continue;
        }
        open = body.ends_with('\\');
        let text = body.trim_end_matches('\\').trim().to_string();
        out.push(DocCommand { file: block.file.clone(), line: *n, host, text });
    }
    out
}

/// README.md and docs/*.md (not docs/results/ nor docs/reference/: kept runs and the seeds'
/// figures, no user's commands), relative to `root`.
pub fn user_docs(root: &Path) -> Vec<String> {
    let mut files = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(root.join("docs"))
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "md"))
                .filter_map(|p| p.file_name().map(|n| format!("docs/{}", n.to_string_lossy())))
                .collect()
        })
        .unwrap_or_default();
    docs.sort();
    files.extend(docs);
    files
}
