//! From the commands and `--param` matrices to the list of benchmarks to run: `{name}`
//! substitution over the cartesian product of the parameters, and each command's argv
//! (direct exec after shell-like word splitting, or `SHELL -c TEXT` with `--shell`).

use volley_metrics::TagSet;

/// Most benchmarks a parameter matrix may expand to.
pub const MAX_BENCHES: usize = 1000;

/// One command as the user gave it.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandSpec {
    /// The command line as one string (`'sleep 0.1'`), or the words after `--` joined for
    /// display.
    pub text: String,
    /// Set when the command came as separate words after `--` (exec'd as they are).
    pub argv: Option<Vec<String>>,
    /// `--name`: how tables and the result file call it (default: the command).
    pub name: Option<String>,
}

/// `--param name=a,b,c`.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub values: Vec<String>,
}

impl Param {
    /// Parse `name=a,b,c` (names: letters, digits, `_`; values non-empty).
    pub fn parse(s: &str) -> Result<Param, String> {
        let hint = "expected NAME=V1,V2,... e.g. --param payload=4096,65536";
        let (name, list) = s
            .split_once('=')
            .ok_or_else(|| format!("--param '{s}': {hint}"))?;
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "--param '{s}': the name must be letters, digits or _; {hint}"
            ));
        }
        let values: Vec<String> = list.split(',').map(|v| v.trim().to_string()).collect();
        if values.iter().any(String::is_empty) {
            return Err(format!("--param '{s}': an empty value; {hint}"));
        }
        Ok(Param {
            name: name.to_string(),
            values,
        })
    }
}

/// One benchmark: a command with its parameter values filled in.
#[derive(Clone, Debug, PartialEq)]
pub struct Bench {
    pub name: String,
    pub argv: Vec<String>,
    pub params: Vec<(String, String)>,
    pub prepare: Option<String>,
    pub cleanup: Option<String>,
}

impl Bench {
    /// The tags of this benchmark's series in the result file.
    pub fn tags(&self) -> TagSet {
        let mut t: TagSet = self.params.iter().cloned().collect();
        t.insert("bench".into(), self.name.clone());
        t
    }
}

fn substitute(s: &str, values: &[(String, String)]) -> String {
    values.iter().fold(s.to_string(), |acc, (k, v)| {
        acc.replace(&format!("{{{k}}}"), v)
    })
}

/// Characters that need a shell when unquoted.
const SHELL_SYNTAX: &[char] = &['|', '&', ';', '<', '>', '$', '`', '*', '?', '(', ')', '~'];

/// Split a command line into words as a POSIX shell would for simple commands: single and
/// double quotes, backslash escapes. Shell syntax outside quotes (pipes, redirections, `$`,
/// globs) is refused: it needs `--shell`.
pub fn split_words(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => cur.push(x),
                        None => return Err(format!("'{s}': unterminated single quote")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(x @ ('"' | '\\' | '$' | '`')) => cur.push(x),
                            Some(x) => {
                                cur.push('\\');
                                cur.push(x);
                            }
                            None => return Err(format!("'{s}': unterminated double quote")),
                        },
                        Some('$' | '`') => {
                            return Err(format!(
                                "'{s}': expansion inside double quotes needs a shell\n  hint: add --shell"
                            ))
                        }
                        Some(x) => cur.push(x),
                        None => return Err(format!("'{s}': unterminated double quote")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(x) => cur.push(x),
                    None => return Err(format!("'{s}': a trailing backslash")),
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c if SHELL_SYNTAX.contains(&c) => {
                return Err(format!(
                    "'{s}': '{c}' is shell syntax, and commands run without a shell by default\n  \
                     hint: add --shell to run it through sh -c (its start-up cost is measured and subtracted)"
                ))
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    if words.is_empty() {
        return Err("an empty command".into());
    }
    Ok(words)
}

/// Expand commands × parameter combinations into benchmarks (commands outer, parameters in
/// the order given, the last varying fastest).
pub fn expand(
    commands: &[CommandSpec],
    params: &[Param],
    shell: Option<&str>,
    prepare: Option<&str>,
    cleanup: Option<&str>,
) -> Result<Vec<Bench>, String> {
    if commands.is_empty() {
        return Err("no command to benchmark\n  hint: volley bench 'cmd a' 'cmd b' or volley bench -- CMD ARGS...".into());
    }
    for (i, p) in params.iter().enumerate() {
        if params[..i].iter().any(|q| q.name == p.name) {
            return Err(format!(
                "--param {}: given twice (give all its values in one --param)",
                p.name
            ));
        }
        let token = format!("{{{}}}", p.name);
        let used = commands.iter().any(|c| {
            c.text.contains(&token) || c.name.as_deref().is_some_and(|n| n.contains(&token))
        }) || prepare.is_some_and(|x| x.contains(&token))
            || cleanup.is_some_and(|x| x.contains(&token));
        if !used {
            return Err(format!(
                "--param {}: no command uses {token}\n  hint: write {token} where the value goes, e.g. -- prog --size {token}",
                p.name
            ));
        }
    }
    let combos: usize = params.iter().map(|p| p.values.len()).product();
    if commands.len().saturating_mul(combos) > MAX_BENCHES {
        return Err(format!(
            "{} commands × {combos} parameter combinations is more than {MAX_BENCHES} benchmarks",
            commands.len()
        ));
    }
    let mut out = Vec::new();
    for c in commands {
        for k in 0..combos {
            // Mixed radix: the last parameter varies fastest.
            let mut rest = k;
            let mut values = vec![(String::new(), String::new()); params.len()];
            for (i, p) in params.iter().enumerate().rev() {
                values[i] = (p.name.clone(), p.values[rest % p.values.len()].clone());
                rest /= p.values.len();
            }
            let text = substitute(&c.text, &values);
            let argv = match (&c.argv, shell) {
                (Some(words), None) => words.iter().map(|w| substitute(w, &values)).collect(),
                (_, Some(sh)) => vec![sh.to_string(), "-c".into(), text.clone()],
                (None, None) => split_words(&text)?,
            };
            let name = match &c.name {
                Some(n) => {
                    let s = substitute(n, &values);
                    if s == *n && !values.is_empty() {
                        let list: Vec<String> =
                            values.iter().map(|(k, v)| format!("{k}={v}")).collect();
                        format!("{s} ({})", list.join(", "))
                    } else {
                        s
                    }
                }
                None => text,
            };
            out.push(Bench {
                name,
                argv,
                params: values.clone(),
                prepare: prepare.map(|p| substitute(p, &values)),
                cleanup: cleanup.map(|p| substitute(p, &values)),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(t: &str) -> CommandSpec {
        CommandSpec {
            text: t.into(),
            argv: None,
            name: None,
        }
    }

    #[test]
    fn words_split_like_a_shell_and_shell_syntax_is_refused() {
        assert_eq!(
            split_words(r#"prog 'a b' "c \"d\"" e\ f"#).unwrap(),
            ["prog", "a b", "c \"d\"", "e f"]
        );
        assert_eq!(
            split_words("awk '{print $1}' f").unwrap(),
            ["awk", "{print $1}", "f"]
        );
        for bad in ["a | b", "a > f", "echo $HOME", "a; b", "'open", ""] {
            assert!(split_words(bad).is_err(), "{bad}");
        }
        assert!(split_words("a | b").unwrap_err().contains("--shell"));
    }

    #[test]
    fn params_expand_as_a_cartesian_product() {
        let params = [
            Param::parse("size=1,2").unwrap(),
            Param::parse("mode=x,y,z").unwrap(),
        ];
        let b = expand(
            &[cmd("prog --size {size} --mode {mode}")],
            &params,
            None,
            Some("rm -f {size}"),
            None,
        )
        .unwrap();
        assert_eq!(b.len(), 6);
        assert_eq!(b[0].argv, ["prog", "--size", "1", "--mode", "x"]);
        assert_eq!(b[5].argv, ["prog", "--size", "2", "--mode", "z"]);
        assert_eq!(b[5].prepare.as_deref(), Some("rm -f 2"));
        assert_eq!(b[1].tags().get("mode").map(String::as_str), Some("y"));
        assert_eq!(
            b[1].tags().get("bench").map(String::as_str),
            Some("prog --size 1 --mode y")
        );
    }

    #[test]
    fn bad_params_are_refused_with_a_hint() {
        assert!(Param::parse("x").is_err());
        assert!(Param::parse("x=a,,b").is_err());
        assert!(Param::parse("a b=1").is_err());
        let p = [Param::parse("n=1").unwrap()];
        let e = expand(&[cmd("prog")], &p, None, None, None).unwrap_err();
        assert!(e.contains("no command uses {n}"), "{e}");
        let twice = [Param::parse("n=1").unwrap(), Param::parse("n=2").unwrap()];
        assert!(expand(&[cmd("p {n}")], &twice, None, None, None).is_err());
    }

    #[test]
    fn shell_mode_and_names() {
        let mut c = cmd("echo {n} | wc -c");
        c.name = Some("count".into());
        let b = expand(
            &[c],
            &[Param::parse("n=7").unwrap()],
            Some("sh"),
            None,
            None,
        )
        .unwrap();
        assert_eq!(b[0].argv, ["sh", "-c", "echo 7 | wc -c"]);
        assert_eq!(b[0].name, "count (n=7)");
    }
}
