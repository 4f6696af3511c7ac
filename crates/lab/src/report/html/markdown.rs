//! A scenario's Markdown sections and notes as HTML (pulldown-cmark with GFM tables): their
//! tables become real `<table>`s. Raw HTML in the Markdown is shown as text, never interpreted.

use pulldown_cmark::{Event, Options, Parser, html};

/// `md` as an HTML fragment; inline and block HTML are escaped.
pub fn to_html(md: &str) -> String {
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_TABLES);
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    let events = Parser::new_ext(md, opts).map(|e| match e {
        Event::Html(t) | Event::InlineHtml(t) => Event::Text(t),
        other => other,
    });
    let mut out = String::new();
    html::push_html(&mut out, events);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_become_html_tables_and_html_is_escaped() {
        let md = "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | <script>x</script> |\n";
        let h = to_html(md);
        assert_eq!(h.matches("<tr>").count(), 3, "{h}");
        assert!(h.contains("<th>a</th>"), "{h}");
        assert!(!h.contains("<script>"), "{h}");
    }
}
