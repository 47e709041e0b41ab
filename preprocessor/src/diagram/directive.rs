//! The words of a diagram directive: `{{#warp-access index="t * stride" stride=[1, 2, 4]}}`.
//!
//! Inside the braces, after the directive's name, come `name=value` pairs separated by spaces. A
//! value is a double-quoted string (`index="t * n"`, no `"` inside), a list in brackets
//! (`stride=[1, 2, 4]`, `variant=[s1, s2]`) or a bare word (`elem=4`, `op=store`).

use super::error::DirectiveError;

/// One attribute's value as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A quoted string or a bare word.
    Text(String),
    /// `[a, b, c]`: the items, trimmed.
    List(Vec<String>),
}

/// One `name=value` pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    pub name: String,
    pub value: Value,
}

/// The attributes of a directive, in the order written; every problem is one message saying
/// what was expected.
pub fn attributes(text: &str) -> Result<Vec<Attribute>, DirectiveError> {
    let mut rest = text.trim_start();
    let mut found: Vec<Attribute> = Vec::new();
    while !rest.is_empty() {
        let (attribute, after) = attribute(rest)?;
        if found.iter().any(|a| a.name == attribute.name) {
            return Err(DirectiveError::Twice(attribute.name));
        }
        found.push(attribute);
        rest = after.trim_start();
    }
    Ok(found)
}

/// The attribute at the start of `text`, and what follows it.
fn attribute(text: &str) -> Result<(Attribute, &str), DirectiveError> {
    let name_len = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    let name = &text[..name_len];
    let Some(after) = text[name_len..].strip_prefix('=') else {
        let word = text.split_whitespace().next().unwrap_or(text);
        return Err(DirectiveError::NotAPair(word.to_string()));
    };
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(DirectiveError::NotAName(name.to_string()));
    }
    let (value, rest) = value(name, after)?;
    Ok((
        Attribute {
            name: name.to_string(),
            value,
        },
        rest,
    ))
}

/// The value at the start of `text` (just after `name=`), and what follows it.
fn value<'a>(name: &str, text: &'a str) -> Result<(Value, &'a str), DirectiveError> {
    if let Some(quoted) = text.strip_prefix('"') {
        let end = quoted
            .find('"')
            .ok_or_else(|| DirectiveError::UnclosedQuote(name.to_string()))?;
        return Ok((Value::Text(quoted[..end].to_string()), &quoted[end + 1..]));
    }
    if let Some(list) = text.strip_prefix('[') {
        let end = list
            .find(']')
            .ok_or_else(|| DirectiveError::UnclosedList(name.to_string()))?;
        let items: Vec<String> = list[..end]
            .split(',')
            .map(|item| item.trim().to_string())
            .collect();
        if items.iter().any(String::is_empty) {
            return Err(DirectiveError::EmptyItem(name.to_string()));
        }
        return Ok((Value::List(items), &list[end + 1..]));
    }
    let end = text.find(|c: char| c.is_whitespace()).unwrap_or(text.len());
    let word = &text[..end];
    if word.is_empty() {
        return Err(DirectiveError::NoValue(name.to_string()));
    }
    if word.contains(['"', '[', ']']) {
        return Err(DirectiveError::NotAWord {
            name: name.to_string(),
            word: word.to_string(),
        });
    }
    Ok((Value::Text(word.to_string()), &text[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(name: &str, value: &str) -> Attribute {
        Attribute {
            name: name.into(),
            value: Value::Text(value.into()),
        }
    }

    #[test]
    fn reads_quoted_bare_and_listed_values() {
        let found = attributes(r#" index="t * stride"  elem=4 stride=[1, 2,4] title="a, b" "#)
            .expect("parses");
        assert_eq!(
            found,
            vec![
                text("index", "t * stride"),
                text("elem", "4"),
                Attribute {
                    name: "stride".into(),
                    value: Value::List(vec!["1".into(), "2".into(), "4".into()]),
                },
                text("title", "a, b"),
            ]
        );
        assert_eq!(attributes("").expect("empty"), vec![]);
    }

    #[test]
    fn malformed_attributes_say_what_was_expected() {
        let cases = [
            ("index", "expected `name=value`"),
            ("index=\"t * 2", "not closed"),
            ("stride=[1, 2", "not closed"),
            ("stride=[1,,2]", "empty item"),
            ("elem=", "has no value"),
            ("=4", "not an attribute name"),
            ("2x=4", "not an attribute name"),
            ("a=1 a=2", "given twice"),
            ("a=b\"c", "must be a word"),
        ];
        for (input, expected) in cases {
            let err = attributes(input).expect_err(input).to_string();
            assert!(err.contains(expected), "{input}: {err}");
        }
    }
}
