//! The command line: `--binary [ARCH=]PATH`... `--values` `--out` `--version` `[--revision]` `[--created]`.

use std::collections::HashMap;
use std::path::PathBuf;

use oci_spec::image::Arch;

pub struct Args {
    /// One static binary per architecture, in the order given.
    pub binaries: Vec<(Arch, PathBuf)>,
    pub values: PathBuf,
    pub out: PathBuf,
    pub version: String,
    pub revision: Option<String>,
    pub created: u64,
}

pub fn args() -> Result<Args, String> {
    let mut named: HashMap<String, String> = HashMap::new();
    let mut binaries = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let Some(name) = flag.strip_prefix("--") else {
            return Err(format!("unexpected argument `{flag}`"));
        };
        let value = it.next().ok_or_else(|| format!("--{name}: needs a value"))?;
        if name == "binary" {
            binaries.push(binary_arg(&value)?);
        } else {
            named.insert(name.to_string(), value);
        }
    }
    if binaries.is_empty() {
        return Err("--binary is required".into());
    }
    for (i, (arch, _)) in binaries.iter().enumerate() {
        if binaries[..i].iter().any(|(a, _)| a == arch) {
            return Err(format!("--binary: {arch} is given twice"));
        }
    }
    let mut take = |k: &str| named.remove(k);
    let need = |v: Option<String>, k: &str| v.ok_or_else(|| format!("--{k} is required"));
    let created = match take("created").or_else(|| std::env::var("SOURCE_DATE_EPOCH").ok()) {
        Some(s) => s
            .trim()
            .parse()
            .map_err(|_| format!("--created: `{s}` is not seconds since 1970"))?,
        None => 0,
    };
    let a = Args {
        binaries,
        values: need(take("values"), "values")?.into(),
        out: need(take("out"), "out")?.into(),
        version: need(take("version"), "version")?,
        revision: take("revision"),
        created,
    };
    if let Some(k) = named.keys().next() {
        return Err(format!("--{k}: unknown option"));
    }
    Ok(a)
}

/// `[ARCH=]PATH`: the architectures a release builds (amd64 when no `ARCH=` is given).
pub fn binary_arg(value: &str) -> Result<(Arch, PathBuf), String> {
    let (arch, path) = match value.split_once('=') {
        Some((a, p)) => (a, p),
        None => ("amd64", value),
    };
    let arch = match arch {
        "amd64" => Arch::Amd64,
        "arm64" => Arch::ARM64,
        other => {
            return Err(format!(
                "--binary: unknown architecture `{other}` (amd64 or arm64)"
            ))
        }
    };
    if path.is_empty() {
        return Err("--binary: the path is empty".into());
    }
    Ok((arch, path.into()))
}
