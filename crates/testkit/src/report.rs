//! Checks of a reproduction's HTML report without a browser: every paper figure redrawn
//! holds one well-formed SVG with our series and the paper's values, and the page refers
//! to nothing on the network.

/// The SVG namespace, the one `http` a self-contained report may contain (a name, never
/// fetched).
const SVG_NAMESPACE: &str = "http://www.w3.org/2000/svg";

/// Asserts that `html` loads nothing from anywhere (no link, script, src, url() or
/// http(s) address other than the SVG namespace).
#[track_caller]
pub fn assert_offline(html: &str) {
    for pattern in ["<link", "<script", " src=", "url(", "@import", "<iframe"] {
        assert!(!html.contains(pattern), "the report contains {pattern:?}");
    }
    let stripped = html.replace(SVG_NAMESPACE, "");
    assert!(
        !stripped.contains("http://") && !stripped.contains("https://"),
        "the report names a network address"
    );
}

/// One paper figure of a report: its `data-plot` name, how many of our series and how
/// many of the paper's values it draws, and whether its caption says the paper gives none.
#[derive(Debug)]
pub struct PaperFigure {
    pub name: String,
    pub ours: usize,
    pub paper: usize,
    pub paper_states_none: bool,
}

fn attribute(tag: &str, name: &str) -> Option<String> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let end = tag[start..].find('"')? + start;
    // The HTML escapes of the report's attribute values, undone.
    let value = tag[start..end]
        .replace("&#39;", "'")
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    Some(value)
}

/// Every `<figure data-paper-figure>` of `html`, each asserted to hold one well-formed
/// SVG with at least one series of ours and, unless its caption says the paper states no
/// number, at least one value of the paper's.
#[track_caller]
pub fn paper_figures(html: &str) -> Vec<PaperFigure> {
    let mut out = Vec::new();
    for part in html.split("<figure ").skip(1) {
        let tag = format!(" {}", &part[..part.find('>').expect("a figure tag closes")]);
        let tag = tag.as_str();
        if !tag.contains("data-paper-figure") {
            continue;
        }
        let body = &part[..part.find("</figure>").expect("a figure closes")];
        let name = attribute(tag, "data-plot").expect("a paper figure has a name");
        let count = |a| {
            attribute(tag, a)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name}: no {a}"))
        };
        let svg_start = body
            .find("<svg")
            .unwrap_or_else(|| panic!("{name}: no svg"));
        let svg_end = body
            .find("</svg>")
            .unwrap_or_else(|| panic!("{name}: svg unclosed"));
        if let Err(e) = well_formed(&body[svg_start..svg_end + 6]) {
            panic!("{name}: the SVG is not well-formed XML: {e}");
        }
        let figure = PaperFigure {
            ours: count("data-ours"),
            paper: count("data-paper"),
            paper_states_none: body.contains("states no"),
            name,
        };
        assert!(figure.ours >= 1, "{figure:?}: none of our series");
        assert!(
            figure.paper >= 1 || figure.paper_states_none,
            "{figure:?}: none of the paper's values and no caption saying why"
        );
        out.push(figure);
    }
    out
}

/// Whether `xml` is well-formed as far as an SVG string needs: tags nest and close,
/// attribute values are quoted, and `&` starts an entity.
pub fn well_formed(xml: &str) -> Result<(), String> {
    let mut open: Vec<&str> = Vec::new();
    let mut rest = xml;
    while let Some(lt) = rest.find('<') {
        check_text(&rest[..lt])?;
        let gt = rest[lt..].find('>').ok_or("a tag does not close")? + lt;
        let tag = &rest[lt + 1..gt];
        rest = &rest[gt + 1..];
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            match open.pop() {
                Some(top) if top == name.trim() => {}
                top => return Err(format!("</{name}> closes {top:?}")),
            }
            continue;
        }
        let self_closing = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let name = tag.split_whitespace().next().ok_or("an empty tag")?;
        if !tag.matches('"').count().is_multiple_of(2) {
            return Err(format!("<{name}>: an attribute value is not quoted"));
        }
        let mut attrs = tag[name.len()..].trim();
        while !attrs.is_empty() {
            let eq = attrs.find("=\"").ok_or(format!("<{name}>: {attrs:?}"))?;
            let end = attrs[eq + 2..].find('"').ok_or("an unclosed value")? + eq + 2;
            check_text(&attrs[eq + 2..end])?;
            attrs = attrs[end + 1..].trim_start();
        }
        if !self_closing {
            open.push(name);
        }
    }
    check_text(rest)?;
    match open.as_slice() {
        [] => Ok(()),
        left => Err(format!("unclosed: {left:?}")),
    }
}

fn check_text(text: &str) -> Result<(), String> {
    for (i, _) in text.match_indices('&') {
        let entity = &text[i..];
        let end = entity.find(';').ok_or("a bare &")?;
        let name = &entity[1..end];
        let known = ["amp", "lt", "gt", "quot", "apos"].contains(&name)
            || name.starts_with('#') && name.len() > 1;
        if !known {
            return Err(format!("an unknown entity &{name};"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_formedness_catches_what_a_parser_would() {
        assert!(
            well_formed("<svg a=\"1\"><g><rect x=\"0\"/></g><text>a &amp; b</text></svg>").is_ok()
        );
        assert!(well_formed("<svg><g></svg>").is_err());
        assert!(well_formed("<svg><rect x=1/></svg>").is_err());
        assert!(well_formed("<svg><text>a & b</text></svg>").is_err());
        assert!(well_formed("<svg><g>").is_err());
    }

    #[test]
    fn paper_figures_need_ours_and_the_papers_values() {
        let svg = "<svg xmlns=\"http://www.w3.org/2000/svg\"><rect/></svg>";
        let fig = |ours, paper, caption| {
            format!("<figure data-plot=\"x: F\" data-paper-figure data-ours=\"{ours}\" data-paper=\"{paper}\">{svg}<figcaption>{caption}</figcaption></figure>")
        };
        assert_eq!(paper_figures(&fig(2, 1, "")).len(), 1);
        assert_eq!(
            paper_figures(&fig(1, 0, "the paper states no number")).len(),
            1
        );
        let missing = std::panic::catch_unwind(|| paper_figures(&fig(1, 0, "")));
        assert!(missing.is_err());
        assert_offline(&fig(1, 1, ""));
        let online = std::panic::catch_unwind(|| assert_offline("<img src=\"https://x\">"));
        assert!(online.is_err());
    }
}
