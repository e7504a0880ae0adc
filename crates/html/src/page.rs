//! The HTML around the plots: the document, escaping, tables.

/// Escapes text for HTML element content and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1400px}\
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.25em .6em;\
text-align:right}th:first-child,td:first-child{text-align:left}\
.plots{display:flex;flex-wrap:wrap;gap:12px}figure{margin:0}figcaption{max-width:810px;font-size:.85em;color:#444}\
pre{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:.85em}\
.note{color:#555;font-size:.9em}";

/// The whole document around `body`.
pub(crate) fn document(title: &str, command: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{t}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{t}</h1>\n\
         <p class=\"note\">flashstack report of <code>{c}</code>. Every figure below comes \
         from the run's JSON report; plots are inline SVG.</p>\n{body}</body>\n</html>\n",
        t = escape(title),
        c = escape(command),
    )
}

/// A table: a header row, then rows of cells (already formatted).
pub(crate) fn table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut out = String::from("<table>\n<tr>");
    for h in header {
        out.push_str(&format!("<th>{}</th>", escape(h)));
    }
    out.push_str("</tr>\n");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            out.push_str(&format!("<td>{}</td>", escape(cell)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// Plots side by side, each in a figure with a data attribute naming it (the browser test
/// finds every plot by it).
pub(crate) fn plots(items: &[(String, String)]) -> String {
    let mut out = String::from("<div class=\"plots\">\n");
    for (name, svg) in items {
        out.push_str(&format!(
            "<figure data-plot=\"{}\">\n{}\n</figure>\n",
            escape(name),
            svg.trim()
        ));
    }
    out.push_str("</div>\n");
    out
}

/// A number with thousands separators (`12,345`).
pub(crate) fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
