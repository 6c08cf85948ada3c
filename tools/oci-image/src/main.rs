//! Builds quota-hub's container image as an OCI image layout (a directory `docker`, `podman`,
//! `skopeo` and registries read), without a container engine: one layer with the static binary,
//! the default values file and the directories the server writes to, and an image configuration
//! with a non-root user, the entry point, the exposed port and the standard labels. The same image
//! as `deploy/image/Dockerfile` (python/tests/test_image.py compares the two).
//!
//! ```text
//! oci-image --binary [ARCH=]PATH... --values PATH --out DIR --version V [--revision SHA] [--created EPOCH]
//! ```
//!
//! `--binary` names one static binary per architecture (`amd64`, the default, or `arm64`). With
//! one, the layout's index names that image's manifest; with several, it names an image index
//! (the version's tag) that lists one manifest per platform, as a multi-arch build pushes it
//! (`skopeo copy --all`).
//!
//! The output is reproducible: every file has the time `--created` (default `SOURCE_DATE_EPOCH`,
//! else 0), owners are numbers, the gzip header carries no time, and the JSON is written with sorted
//! keys, so the same inputs give the same digests.

mod args;
mod encode;

use std::collections::HashMap;
use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use args::{args, Args};
use encode::{blob, canonical, rfc3339, sha256};
use flate2::write::GzEncoder;
use flate2::{Compression, GzBuilder};
use oci_spec::image::{
    Arch, ConfigBuilder, Descriptor, HistoryBuilder, ImageConfigurationBuilder, ImageIndexBuilder,
    ImageManifestBuilder, MediaType, OciLayoutBuilder, Os, PlatformBuilder, RootFsBuilder,
};

/// What the image holds and how it runs: kept equal to deploy/image/Dockerfile's final stage.
mod image {
    pub const BINARY: &str = "usr/local/bin/quota-hub";
    pub const VALUES: &str = "etc/quota/values.yaml";
    /// The user the server runs as (no shell, no home: a number).
    pub const USER: &str = "65532:65532";
    pub const UID: u64 = 65532;
    pub const PORT: &str = "8765/tcp";
    /// Where the SQLite database and the compiled-engine cache go (volumes: the root is read-only).
    pub const DATA: &str = "data";
    pub const CACHE: &str = "var/cache/quota-engine";
    pub const ENV: [&str; 4] = [
        "PATH=/usr/local/bin",
        "QUOTA_HUB_DB=sqlite:///data/quota.db",
        "QUOTA_HUB_VALUES=/etc/quota/values.yaml",
        "QUOTA_CACHE_DIR=/var/cache/quota-engine",
    ];
    pub const ENTRYPOINT: [&str; 1] = ["/usr/local/bin/quota-hub"];
    pub const CMD: [&str; 3] = ["serve", "--listen", "0.0.0.0:8765"];
}

/// The layer, uncompressed: directories first, then the files, all owned by numbers.
fn layer(a: &Args, binary: &Path) -> Result<Vec<u8>, String> {
    let binary = std::fs::read(binary).map_err(|e| format!("{}: {e}", binary.display()))?;
    let values = std::fs::read(&a.values).map_err(|e| format!("{}: {e}", a.values.display()))?;
    let mut tar = tar::Builder::new(Vec::new());
    let mut entry = |path: &str, mode: u32, uid: u64, body: Option<&[u8]>| -> Result<(), String> {
        let mut h = tar::Header::new_ustar();
        h.set_mode(mode);
        h.set_uid(uid);
        h.set_gid(uid);
        h.set_mtime(a.created);
        match body {
            Some(b) => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_size(b.len() as u64);
                h.set_cksum();
                tar.append_data(&mut h, path, b)
            }
            None => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_size(0);
                h.set_cksum();
                tar.append_data(&mut h, format!("{path}/"), std::io::empty())
            }
        }
        .map_err(|e| format!("layer: {path}: {e}"))
    };
    for dir in [
        "etc",
        "etc/quota",
        "usr",
        "usr/local",
        "usr/local/bin",
        "var",
        "var/cache",
    ] {
        entry(dir, 0o755, 0, None)?;
    }
    entry("tmp", 0o1777, 0, None)?;
    entry(image::DATA, 0o755, image::UID, None)?;
    entry(image::CACHE, 0o755, image::UID, None)?;
    entry(image::BINARY, 0o755, 0, Some(&binary))?;
    entry(image::VALUES, 0o644, 0, Some(&values))?;
    tar.into_inner().map_err(|e| format!("layer: {e}"))
}

fn oci(e: oci_spec::OciSpecError) -> String {
    e.to_string()
}

/// The standard `org.opencontainers.image.*` labels (also the manifests' annotations).
fn labels(a: &Args, created: &str) -> HashMap<String, String> {
    let repository = "https://github.com/quota-engine/quota";
    let mut labels: HashMap<String, String> = [
        ("title", "quota-hub".to_string()),
        (
            "description",
            "Compute-credit quotas for multi-user notebook hubs: the quota-hub server and command line"
                .into(),
        ),
        ("version", a.version.clone()),
        ("licenses", "MIT".into()),
        ("source", repository.into()),
        ("url", repository.into()),
        ("documentation", format!("{repository}/blob/main/docs/deploy.md")),
        ("vendor", "quota-engine".into()),
        ("created", created.into()),
    ]
    .into_iter()
    .map(|(k, v)| (format!("org.opencontainers.image.{k}"), v))
    .collect();
    if let Some(r) = &a.revision {
        labels.insert("org.opencontainers.image.revision".into(), r.clone());
    }
    labels
}

/// One architecture's image: its layer, configuration and manifest, written as blobs; the
/// manifest's descriptor names its platform.
fn image(
    a: &Args,
    arch: &Arch,
    binary: &Path,
    labels: &HashMap<String, String>,
) -> Result<Descriptor, String> {
    let created = rfc3339(a.created);
    let tar = layer(a, binary)?;
    let diff_id = sha256(&tar)?;
    let mut gz: GzEncoder<Vec<u8>> = GzBuilder::new().mtime(0).write(Vec::new(), Compression::best());
    gz.write_all(&tar).map_err(|e| format!("gzip: {e}"))?;
    let gz = gz.finish().map_err(|e| format!("gzip: {e}"))?;
    let layer = blob(&a.out, &gz, MediaType::ImageLayerGzip)?;
    // arm64 images say v8, as Docker's multi-arch builds do.
    let variant = (*arch == Arch::ARM64).then(|| "v8".to_string());
    let mut config = ImageConfigurationBuilder::default()
        .created(created.clone())
        .architecture(arch.clone())
        .os(Os::Linux)
        .config(
            ConfigBuilder::default()
                .user(image::USER)
                .exposed_ports(vec![image::PORT.to_string()])
                .env(image::ENV.map(String::from).to_vec())
                .entrypoint(image::ENTRYPOINT.map(String::from).to_vec())
                .cmd(image::CMD.map(String::from).to_vec())
                .volumes(vec![format!("/{}", image::DATA), format!("/{}", image::CACHE)])
                .working_dir(format!("/{}", image::DATA))
                .labels(labels.clone())
                .stop_signal("SIGTERM")
                .build()
                .map_err(oci)?,
        )
        .rootfs(
            RootFsBuilder::default()
                .typ("layers")
                .diff_ids(vec![diff_id.to_string()])
                .build()
                .map_err(oci)?,
        )
        .history(vec![HistoryBuilder::default()
            .created(created.clone())
            .created_by(
                "tools/oci-image: the static quota-hub binary, its default values, its writable directories",
            )
            .build()
            .map_err(oci)?])
        .build()
        .map_err(oci)?;
    config.set_variant(variant.clone());
    let config = blob(&a.out, &canonical(&config)?, MediaType::ImageConfig)?;
    let manifest = ImageManifestBuilder::default()
        .schema_version(2u32)
        .media_type(MediaType::ImageManifest)
        .config(config)
        .layers(vec![layer])
        .annotations(labels.clone())
        .build()
        .map_err(oci)?;
    let manifest = blob(&a.out, &canonical(&manifest)?, MediaType::ImageManifest)?;
    let mut platform = PlatformBuilder::default()
        .architecture(arch.clone())
        .os(Os::Linux)
        .build()
        .map_err(oci)?;
    platform.set_variant(variant);
    let mut manifest = manifest;
    manifest.set_platform(Some(platform));
    Ok(manifest)
}

fn build(a: &Args) -> Result<String, String> {
    let _ = std::fs::remove_dir_all(&a.out);
    std::fs::create_dir_all(a.out.join("blobs/sha256")).map_err(|e| format!("{}: {e}", a.out.display()))?;
    let labels = labels(a, &rfc3339(a.created));
    let images = a
        .binaries
        .iter()
        .map(|(arch, binary)| image(a, arch, binary, &labels))
        .collect::<Result<Vec<_>, _>>()?;
    let index = |manifests: Vec<Descriptor>| {
        ImageIndexBuilder::default()
            .schema_version(2u32)
            .media_type(MediaType::ImageIndex)
            .manifests(manifests)
            .build()
            .map_err(oci)
    };
    // The version's tag: the one manifest, or an index of one manifest per platform.
    let mut tagged = match <[Descriptor; 1]>::try_from(images) {
        Ok([one]) => one,
        Err(several) => {
            let mut nested = index(several)?;
            nested.set_annotations(Some(labels));
            blob(&a.out, &canonical(&nested)?, MediaType::ImageIndex)?
        }
    };
    tagged.set_annotations(Some(HashMap::from([(
        "org.opencontainers.image.ref.name".to_string(),
        a.version.clone(),
    )])));
    let digest = tagged.digest().to_string();
    std::fs::write(a.out.join("index.json"), canonical(&index(vec![tagged])?)?).map_err(|e| e.to_string())?;
    let layout = OciLayoutBuilder::default()
        .image_layout_version("1.0.0")
        .build()
        .map_err(oci)?;
    std::fs::write(a.out.join("oci-layout"), canonical(&layout)?).map_err(|e| e.to_string())?;
    Ok(digest)
}

fn main() -> ExitCode {
    match args().and_then(|a| build(&a).map(|d| (a, d))) {
        Ok((a, digest)) => {
            println!("{}: quota-hub:{} {digest}", a.out.display(), a.version);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("oci-image: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::binary_arg;
    use std::path::PathBuf;

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_795_000_000), "2026-11-18T11:06:40Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn the_same_inputs_give_the_same_image() {
        let dir = std::env::temp_dir().join(format!("oci-image-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("bin"), b"\x7fELF not really").unwrap();
        std::fs::write(dir.join("values.yaml"), b"custom: {}\n").unwrap();
        let args = |out: &str| Args {
            binaries: vec![(Arch::Amd64, dir.join("bin"))],
            values: dir.join("values.yaml"),
            out: dir.join(out),
            version: "0.0.1".into(),
            revision: Some("abc".into()),
            created: 1_795_000_000,
        };
        let (a, b) = (build(&args("a")).unwrap(), build(&args("b")).unwrap());
        assert_eq!(a, b);
        assert!(a.starts_with("sha256:"));
        let index = std::fs::read_to_string(dir.join("a/index.json")).unwrap();
        assert!(
            index.contains(r#""org.opencontainers.image.ref.name":"0.0.1""#),
            "{index}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn several_architectures_make_one_tagged_index_of_one_manifest_per_platform() {
        let dir = std::env::temp_dir().join(format!("oci-image-multi-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("amd"), b"\x7fELF amd64").unwrap();
        std::fs::write(dir.join("arm"), b"\x7fELF arm64").unwrap();
        std::fs::write(dir.join("values.yaml"), b"custom: {}\n").unwrap();
        let a = Args {
            binaries: vec![(Arch::Amd64, dir.join("amd")), (Arch::ARM64, dir.join("arm"))],
            values: dir.join("values.yaml"),
            out: dir.join("out"),
            version: "0.0.2".into(),
            revision: None,
            created: 0,
        };
        let digest = build(&a).unwrap();
        let read =
            |p: &Path| serde_json::from_slice::<serde_json::Value>(&std::fs::read(p).unwrap()).unwrap();
        let top = read(&a.out.join("index.json"));
        let [tagged] = top["manifests"].as_array().unwrap().as_slice() else {
            panic!("{top}")
        };
        assert_eq!(tagged["mediaType"], "application/vnd.oci.image.index.v1+json");
        assert_eq!(tagged["digest"], digest);
        assert_eq!(
            tagged["annotations"]["org.opencontainers.image.ref.name"],
            "0.0.2"
        );
        let nested = read(
            &a.out
                .join("blobs/sha256")
                .join(digest.trim_start_matches("sha256:")),
        );
        let platforms: Vec<_> = nested["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let p = &m["platform"];
                format!(
                    "{}/{}{}",
                    p["os"].as_str().unwrap(),
                    p["architecture"].as_str().unwrap(),
                    p["variant"].as_str().map(|v| format!("/{v}")).unwrap_or_default()
                )
            })
            .collect();
        assert_eq!(platforms, ["linux/amd64", "linux/arm64/v8"]);
        // Each manifest's configuration names its own architecture.
        for (m, arch) in nested["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .zip(["amd64", "arm64"])
        {
            let manifest = read(
                &a.out
                    .join("blobs/sha256")
                    .join(m["digest"].as_str().unwrap().trim_start_matches("sha256:")),
            );
            let config = read(
                &a.out.join("blobs/sha256").join(
                    manifest["config"]["digest"]
                        .as_str()
                        .unwrap()
                        .trim_start_matches("sha256:"),
                ),
            );
            assert_eq!(config["architecture"], arch);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn binaries_name_a_known_architecture_once() {
        assert_eq!(binary_arg("x").unwrap(), (Arch::Amd64, PathBuf::from("x")));
        assert_eq!(
            binary_arg("arm64=target/y").unwrap(),
            (Arch::ARM64, PathBuf::from("target/y"))
        );
        assert_eq!(
            binary_arg("riscv64=z").unwrap_err(),
            "--binary: unknown architecture `riscv64` (amd64 or arm64)"
        );
        assert_eq!(binary_arg("arm64=").unwrap_err(), "--binary: the path is empty");
    }
}
